"""Every third-party module the package imports is declared in setup.cfg.

The test environment has the ``test`` extra installed, so a run-time
dependency missing from ``install_requires`` (``cryptography`` once) goes
unnoticed by every other test and breaks ``pip install`` and ``make demo``
on a fresh machine. This walks the syntax tree of every module under
``nimbus/``, collects the top-level modules it imports (at module level
and inside functions, ``importlib.import_module('x')`` and
``__import__('x')`` with a literal name included), maps each to its
distribution with :func:`importlib.metadata.packages_distributions` and
checks the declaration:

- an import executed when the module is imported (module level, class
  body, ``try``/``if`` blocks) needs a distribution in ``install_requires``;
- an import inside a function may instead come from an optional extra, but
  only where :data:`OPTIONAL_EXTRAS` allows that extra: ``plot``
  (matplotlib) anywhere, ``test`` (pytest, keystone, openstacksdk, psutil)
  only in ``nimbus.testing``, the fixtures and harnesses shipped for
  integrators' tests, which must stay importable without the test tools.
"""

import ast
import configparser
import importlib.metadata
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[2]

# extra -> module prefixes where a function-level import may rely on it.
OPTIONAL_EXTRAS = {'plot': ('nimbus',), 'test': ('nimbus.testing',)}

_NAME = re.compile(r'^\s*([A-Za-z0-9][A-Za-z0-9._-]*)')


def normalize(name):
    """A distribution name as PEP 503 compares them."""
    return re.sub(r'[-_.]+', '-', name).lower()


def requirement_names(text):
    """The normalized distribution names of a setup.cfg requirement list."""
    names = set()
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        match = _NAME.match(line)
        if match:
            names.add(normalize(match.group(1)))
    return names


def declared(setup_cfg):
    """``(install_requires names, {extra: names})`` of a setup.cfg."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(setup_cfg)
    required = requirement_names(parser.get('options', 'install_requires'))
    extras = {}
    if parser.has_section('options.extras_require'):
        for extra, text in parser.items('options.extras_require'):
            extras[extra] = requirement_names(text)
    return required, extras


class _Imports(ast.NodeVisitor):
    """``(top-level module, line, inside a function)`` of every absolute
    import in a module."""

    def __init__(self):
        self.found = []
        self._depth = 0

    def _function(self, node):
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, name, node):
        self.found.append((name.split('.')[0], node.lineno, self._depth > 0))

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node):
        if node.level == 0 and node.module:
            self._add(node.module, node)

    def visit_Call(self, node):
        func = node.func
        dynamic = (isinstance(func, ast.Name) and func.id == '__import__') or (
            isinstance(func, ast.Attribute) and func.attr == 'import_module'
        )
        if (
            dynamic
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith('.')
        ):
            self._add(node.args[0].value, node)
        self.generic_visit(node)


def third_party_imports(package_dir):
    """``(module name, top-level import, line, inside a function)`` for
    every import under ``package_dir`` that is neither the standard
    library nor the package itself."""
    package_dir = pathlib.Path(package_dir)
    own = package_dir.name
    for path in sorted(package_dir.rglob('*.py')):
        parts = path.relative_to(package_dir.parent).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        module = '.'.join(parts)
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        for top, line, in_function in visitor.found:
            if top in (own, '__future__') or top in sys.stdlib_module_names:
                continue
            yield module, top, line, in_function


def undeclared(
    package_dir,
    required,
    extras,
    distributions=None,
    optional_extras=OPTIONAL_EXTRAS,
):
    """One line per import whose distribution setup.cfg does not declare
    where that import needs it (empty when all is declared)."""
    if distributions is None:
        distributions = importlib.metadata.packages_distributions()
    problems = []
    for module, top, line, in_function in third_party_imports(package_dir):
        where = '%s:%d imports %s' % (module, line, top)
        dists = {normalize(d) for d in distributions.get(top, ())}
        if not dists:
            problems.append(
                '%s, which no installed distribution provides' % where
            )
            continue
        if dists & required:
            continue
        allowed = [
            extra
            for extra, prefixes in sorted(optional_extras.items())
            if dists & extras.get(extra, set())
            and any(
                module == p or module.startswith(p + '.') for p in prefixes
            )
        ]
        if in_function and allowed:
            continue
        if in_function:
            problems.append(
                '%s (%s) inside a function: declare it in install_requires'
                ' or in an optional extra allowed for this module (%s)'
                % (
                    where,
                    ', '.join(sorted(dists)),
                    '; '.join(
                        '%s: %s' % (e, ', '.join(p))
                        for e, p in sorted(optional_extras.items())
                    ),
                )
            )
        else:
            problems.append(
                '%s (%s) when the module is imported: declare it in'
                ' install_requires' % (where, ', '.join(sorted(dists)))
            )
    return problems


def test_every_run_time_import_of_nimbus_is_declared():
    required, extras = declared(ROOT / 'setup.cfg')
    problems = undeclared(ROOT / 'nimbus', required, extras)
    assert not problems, 'setup.cfg misses:\n' + '\n'.join(problems)


def test_the_optional_extras_are_declared():
    _, extras = declared(ROOT / 'setup.cfg')
    assert set(OPTIONAL_EXTRAS) <= set(extras)
    assert 'matplotlib' in extras['plot']


def _package(tmp_path, sources):
    package = tmp_path / 'pkg'
    for name, text in sources.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return package


# A mapping as packages_distributions() returns it, for the synthetic
# package below.
_DISTRIBUTIONS = {
    'cryptography': ['cryptography'],
    'matplotlib': ['matplotlib'],
    'pytest': ['pytest'],
    'yaml': ['PyYAML'],
    'oslo_config': ['oslo.config'],
}


def test_the_walk_reports_what_is_missing_and_where(tmp_path):
    package = _package(
        tmp_path,
        {
            '__init__.py': '',
            'crypto.py': 'from cryptography import x509\n',
            'conf.py': 'import oslo_config.cfg\nimport os, json\n',
            'lazy.py': """\
                import importlib
                def load():
                    return importlib.import_module('yaml')
                """,
            'plot.py': """\
                def draw():
                    from matplotlib import pyplot
                """,
            'eager_plot.py': 'import matplotlib\n',
            'harness.py': 'def run():\n    import pytest\n',
            'testing/__init__.py': '',
            'testing/fixtures.py': 'def skip():\n    import pytest\n',
            'testing/eager.py': 'try:\n    import pytest\nexcept ImportError:'
            '\n    pytest = None\n',
            'unknown.py': 'class A:\n    import not_installed_anywhere\n',
            'own.py': 'from pkg import conf\nfrom . import crypto\n',
        },
    )
    required = {'oslo-config'}
    extras = {'plot': {'matplotlib'}, 'test': {'pytest', 'matplotlib'}}
    found = undeclared(
        package,
        required,
        extras,
        _DISTRIBUTIONS,
        {'plot': ('pkg',), 'test': ('pkg.testing',)},
    )
    text = '\n'.join(found)
    assert len(found) == 6, text
    assert 'pkg.crypto:1 imports cryptography (cryptography) when' in text
    assert 'pkg.lazy:3 imports yaml (pyyaml) inside a function' in text
    assert 'pkg.eager_plot:1 imports matplotlib' in text
    # test-only libraries: inside a function of pkg.testing only
    assert 'pkg.harness:2 imports pytest (pytest) inside a function' in text
    assert 'pkg.testing.eager:2 imports pytest (pytest) when' in text
    assert 'pkg.unknown:2 imports not_installed_anywhere, which no' in text
    assert 'pkg.plot' not in text and 'pkg.testing.fixtures' not in text
    assert 'pkg.conf' not in text and 'pkg.own' not in text


def test_requirement_names_normalizes_the_setup_cfg_syntax():
    assert requirement_names(
        '\noslo.messaging>=14.0\npsycopg[binary]>=3.1\n'
        'Foo_Bar ; python_version < "3.12"  # why\n'
    ) == {'oslo-messaging', 'psycopg', 'foo-bar'}
