"""Build a sample out-of-tree plugin (like the seed's acmefilter), install it into a
directory of its own (``pip install --target``, never into the shared venv) and load its
filter, weigher and extra-spec validator through their stevedore entry points."""

import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from nimbus import extra_specs
from nimbus.testing import infra
from nimbus.scheduler import exception, plugins, selection, testing

from .conftest import host

PKG = 'nimbusacmeplugin'

INIT = '''
from oslo_log import log as logging
from nimbus.scheduler import filters
from nimbus.scheduler.weighers import BaseHostWeigher

LOG = logging.getLogger(__name__)

# Every host the filter was asked about, so tests can see it ran.
CALLS = []


class AcmeFilter(filters.BaseHostFilter):
    """acme:foo=baz passes only hosts whose name ends in -2."""

    def host_passes(self, host_state, spec_obj):
        extra_spec = spec_obj.flavor.extra_specs.get('acme:foo')
        LOG.info("Extra spec value was '%s'", extra_spec)
        CALLS.append(host_state.host)
        if extra_spec == 'baz':
            return host_state.host.endswith('-2')
        return True


class AcmeWeigher(BaseHostWeigher):
    multiplier_option = None

    def weigh(self, host_state, spec):
        return 1 if host_state.host.endswith('-0') else 0
'''

VALIDATORS = """
from nimbus.extra_specs import base


def register():
    return [base.ExtraSpecValidator(
        name='acme:foo', description='My custom extra spec.',
        value={'type': str, 'enum': ['bar', 'baz']})]
"""

# The entry-point names differ from the class names on purpose: configuration that
# uses them can only work through stevedore.
SETUP = f"""
from setuptools import setup

setup(
    name='{PKG}', version='0.1', description='My custom filter', packages=['{PKG}'],
    entry_points={{
        'nimbus.api.extra_spec_validators': ['acme = {PKG}.validators'],
        'nimbus.scheduler.filters': ['acme_filter = {PKG}:AcmeFilter'],
        'nimbus.scheduler.weighers': ['acme_weigher = {PKG}:AcmeWeigher'],
    }},
)
"""


def build_and_install(root, target):
    """Write the package, build and install it with pip into ``target``."""
    src = root / 'src'
    (src / PKG).mkdir(parents=True)
    (src / PKG / '__init__.py').write_text(textwrap.dedent(INIT))
    (src / PKG / 'validators.py').write_text(textwrap.dedent(VALIDATORS))
    (src / 'setup.py').write_text(textwrap.dedent(SETUP))
    res = subprocess.run(
        [
            sys.executable,
            '-m',
            'pip',
            'install',
            '-q',
            '--no-deps',
            '--no-build-isolation',
            '--no-index',
            '--target',
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return target


@pytest.fixture(scope='module')
def acme(tmp_path_factory):
    infra.require_module('wheel', "building the sample plugin needs 'wheel'")
    root = tmp_path_factory.mktemp('acme')
    target = build_and_install(root, root / 'site')
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    extra_specs.reset()
    try:
        yield importlib.import_module(PKG), target
    finally:
        sys.path.remove(str(target))
        for name in [m for m in sys.modules if m.split('.')[0] == PKG]:
            del sys.modules[name]
        importlib.invalidate_caches()
        extra_specs.reset()


def test_installed_outside_the_venv(acme):
    module, target = acme
    assert os.path.dirname(os.path.dirname(module.__file__)) == str(target)
    venv_site = [p for p in sys.path if p.endswith('site-packages')]
    assert not any(os.path.exists(os.path.join(p, PKG)) for p in venv_site)


def test_plugin_validator_registered(acme):
    extra_specs.validate('acme:foo', 'bar')
    with pytest.raises(extra_specs.ExtraSpecValidationError, match='acme:foo'):
        extra_specs.validate('acme:foo', 'qux')


def _enable(conf, available):
    conf.set_override('available_filters', available, 'filter_scheduler')
    conf.set_override(
        'enabled_filters', ['ComputeFilter', 'acme_filter'], 'filter_scheduler'
    )
    conf.set_override(
        'weight_classes',
        ['nimbus.scheduler.weighers.all_weighers', 'acme_weigher'],
        'filter_scheduler',
    )


@pytest.mark.parametrize(
    'available',
    [
        ['nimbus.scheduler.filters.all_filters', 'acme_filter'],
        # the entry-point name alone is enough to make it available
        ['acme_filter', 'nimbus.scheduler.filters.compute.ComputeFilter'],
    ],
)
def test_schedule_with_entry_point_filter_and_weigher(acme, conf, available):
    module, _target = acme
    _enable(conf, available)
    sched = selection.FilterScheduler(conf)
    assert [type(f) for f in sched.filters][1] is module.AcmeFilter
    assert [f.name for f in sched.filters] == ['ComputeFilter', 'AcmeFilter']
    assert [w.name for w in sched.weighers].count('AcmeWeigher') == 1
    module.CALLS.clear()
    hs = [host(f'h-{i}') for i in range(4)]
    sp = testing.spec(extra_specs={'acme:foo': 'baz'})
    assert sched.schedule(sp, hs)[0][0].service_host == 'h-2'
    assert sorted(module.CALLS) == ['h-0', 'h-1', 'h-2', 'h-3']
    # the plugin weigher prefers h-0 when the filter lets everything through
    hs = [host(f'h-{i}') for i in range(4)]
    sp = testing.spec(extra_specs={'acme:foo': 'bar'})
    assert sched.schedule(sp, hs)[0][0].service_host == 'h-0'


def test_enabled_by_entry_point_name_needs_it_available(acme, conf):
    conf.set_override(
        'available_filters',
        ['nimbus.scheduler.filters.compute.ComputeFilter'],
        'filter_scheduler',
    )
    conf.set_override(
        'enabled_filters', ['ComputeFilter', 'acme_filter'], 'filter_scheduler'
    )
    with pytest.raises(exception.FilterNotFound, match='acme_filter'):
        plugins.load_filters(conf)


def test_a_fresh_process_finds_every_entry_point_on_pythonpath(acme):
    """What a daemon started with PYTHONPATH=<target> sees."""
    _module, target = acme
    code = textwrap.dedent("""
        import json
        from nimbus import extra_specs
        from nimbus.scheduler import conf as sched_conf, plugins
        conf = sched_conf.make_conf(**{
            "filter_scheduler.available_filters": ["acme_filter"],
            "filter_scheduler.enabled_filters": ["acme_filter"],
            "filter_scheduler.weight_classes": ["acme_weigher"]})
        out = {"filters": [f.name for f in plugins.load_filters(conf)],
               "weighers": [w.name for w in plugins.load_weighers(conf)]}
        try:
            extra_specs.validate("acme:foo", "qux")
        except extra_specs.ExtraSpecValidationError as exc:
            out["rejected"] = str(exc)
        print(json.dumps(out))
    """)
    env = dict(os.environ, PYTHONPATH=str(target))
    res = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out['filters'] == ['AcmeFilter']
    assert out['weighers'] == ['AcmeWeigher']
    assert 'acme:foo' in out['rejected'] and 'qux' in out['rejected']


def test_enabled_but_not_available(conf):
    conf.set_override('enabled_filters', ['NoSuchFilter'], 'filter_scheduler')
    with pytest.raises(exception.FilterNotFound):
        plugins.load_filters(conf)


@pytest.mark.parametrize(
    'value', ['no_such_entry_point', 'nimbus.nope.Filter']
)
def test_unknown_available_filter_is_filter_not_found(conf, value):
    conf.set_override('available_filters', [value], 'filter_scheduler')
    with pytest.raises(
        exception.FilterNotFound, match='neither an entry point'
    ):
        plugins.load_filters(conf)


def test_unknown_weigher_is_weigher_not_found(conf):
    conf.set_override(
        'weight_classes', ['no_such_weigher'], 'filter_scheduler'
    )
    with pytest.raises(exception.WeigherNotFound):
        plugins.load_weighers(conf)
