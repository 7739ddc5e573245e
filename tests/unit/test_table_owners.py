"""Each table of the API and cell databases has one owner module, the only
one that writes SQL on it (docs/contracts.md, "Owned tables").

The check reads the source of every module under ``nimbus/``: a module
that names a table's model class (``models.BuildRequest``, an import of
it) or the table's name in SQL text or ``sa.table(...)`` builds a
statement on it. Only the owner (or a module of the owner's package) may.
"""

import ast
import functools
import pathlib
import re

import pytest

from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'nimbus'

# table -> the owner module (or package).
OWNERS = {
    # API database
    'build_requests': 'nimbus.db.build_requests',
    'request_specs': 'nimbus.db.request_specs',
    'scheduling_records': 'nimbus.db.scheduling_records',
    'instance_mappings': 'nimbus.db.instance_mappings',
    'cell_mappings': 'nimbus.db.cell_mappings',
    'host_mappings': 'nimbus.db.cell_mappings',
    'flavors': 'nimbus.api.objects.flavors',
    'flavor_extra_specs': 'nimbus.api.objects.flavors',
    'flavor_projects': 'nimbus.api.objects.flavors',
    'aggregates': 'nimbus.db.aggregates',
    'aggregate_hosts': 'nimbus.db.aggregates',
    'aggregate_metadata': 'nimbus.db.aggregates',
    'instance_groups': 'nimbus.db.server_groups',
    'instance_group_members': 'nimbus.db.server_groups',
    'images': 'nimbus.db.images',
    'quotas': 'nimbus.api.objects.quotas',
    'quota_classes': 'nimbus.api.objects.quotas',
    'key_pairs': 'nimbus.api.objects.keypairs',
    # cell databases
    'instances': 'nimbus.db.cell_instances',
    'instance_faults': 'nimbus.db.cell_instances',
    'build_attempts': 'nimbus.db.cell_instances',
    'services': 'nimbus.db.cell_services',
    'compute_nodes': 'nimbus.db.cell_services',
    'instance_actions': 'nimbus.db.instance_actions',
    'instance_actions_events': 'nimbus.db.instance_actions',
    'migrations': 'nimbus.db.cell_migrations',
}

MODEL_MODULES = {
    'nimbus.db.api.models': api_models,
    'nimbus.db.cell.models': cell_models,
}


def _tables_of(models_module):
    return {
        mapper.class_.__name__: mapper.local_table.name
        for mapper in models_module.Base.registry.mappers
    }


CLASS_TO_TABLE = {
    name: _tables_of(module) for name, module in MODEL_MODULES.items()
}
ALL_TABLES = {
    table for tables in CLASS_TO_TABLE.values() for table in tables.values()
}
_SQL_WORDS = r'(?:from|into|update|join|table)\s+[`"]?'
# A string is SQL text when it starts as a statement does.
_SQL_TEXT = re.compile(
    r'^\s*(select|insert|update|delete|with|alter|create|drop)\s',
    re.IGNORECASE,
)


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix('').parts
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def _scanned_modules():
    for path in sorted(PACKAGE.rglob('*.py')):
        name = _module_name(path)
        if name in MODEL_MODULES or '.migrations' in name:
            continue
        yield name, path


def tables_touched(source):
    """The tables a module's source names: by model class, or by table
    name in SQL text or ``sa.table(...)``."""
    tree = ast.parse(source)
    module_aliases = {}  # local name -> models module
    class_aliases = {}  # local name -> table
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = '%s.%s' % (node.module, alias.name)
                local = alias.asname or alias.name
                if full in MODEL_MODULES:
                    module_aliases[local] = full
                elif node.module in MODEL_MODULES:
                    table = CLASS_TO_TABLE[node.module].get(alias.name)
                    if table:
                        class_aliases[local] = table
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODEL_MODULES and alias.asname:
                    module_aliases[alias.asname] = alias.name
    touched = set()
    table_names = '|'.join(sorted(ALL_TABLES, key=len, reverse=True))
    text_pattern = re.compile(
        r'\b%s(%s)\b' % (_SQL_WORDS, table_names), re.IGNORECASE
    )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_aliases
        ):
            table = CLASS_TO_TABLE[module_aliases[node.value.id]].get(
                node.attr
            )
            if table:
                touched.add(table)
        elif isinstance(node, ast.Name) and node.id in class_aliases:
            touched.add(class_aliases[node.id])
        elif isinstance(node, ast.Attribute) and _dotted(node) in {
            '%s.%s' % (module, cls)
            for module, classes in CLASS_TO_TABLE.items()
            for cls in classes
        }:
            module, _, cls = _dotted(node).rpartition('.')
            touched.add(CLASS_TO_TABLE[module][cls])
        elif isinstance(node, ast.Call) and _called(node) in (
            'table',
            'Table',
        ):
            if node.args and isinstance(node.args[0], ast.Constant):
                if node.args[0].value in ALL_TABLES:
                    touched.add(node.args[0].value)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _SQL_TEXT.match(node.value)
        ):
            touched.update(m.lower() for m in text_pattern.findall(node.value))
    return touched


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return '.'.join(reversed(parts))
    return None


def _called(call):
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _owns(module, owner):
    return module == owner or module.startswith(owner + '.')


@functools.cache
def _touched_by_module():
    return {
        module: tables_touched(path.read_text())
        for module, path in _scanned_modules()
    }


def _violations():
    found = {}
    for module, tables in _touched_by_module().items():
        for table in tables:
            if not _owns(module, OWNERS.get(table, '')):
                found.setdefault(table, set()).add(module)
    return found


def test_every_table_has_an_owner():
    assert sorted(ALL_TABLES - set(OWNERS)) == []
    assert sorted(set(OWNERS) - ALL_TABLES) == []


def test_owners_exist_and_touch_their_tables():
    touched_by = {}
    for module, tables in _touched_by_module().items():
        for table in tables:
            touched_by.setdefault(table, set()).add(module)
    for table, owner in OWNERS.items():
        assert any(_owns(m, owner) for m in touched_by.get(table, ())), (
            '%s is said to own %s but builds no statement on it'
            % (owner, table)
        )


def test_only_the_owner_writes_sql_on_a_table():
    found = {
        table: sorted(modules) for table, modules in _violations().items()
    }
    assert found == {}, (
        'SQL on a table outside its owner module (call the owner in '
        'OWNERS instead): %s' % found
    )


@pytest.mark.parametrize(
    'source, tables',
    [
        (
            'from nimbus.db.api import models\n'
            'q = sa.select(models.BuildRequest)\n',
            {'build_requests'},
        ),
        (
            'from nimbus.db.cell import models as cm\n'
            'q = sa.delete(cm.InstanceFault)\n',
            {'instance_faults'},
        ),
        (
            'from nimbus.db.api.models import InstanceMapping as M\n'
            'q = sa.update(M)\n',
            {'instance_mappings'},
        ),
        (
            'import nimbus.db.cell.models\n'
            'q = sa.select(nimbus.db.cell.models.Instance)\n',
            {'instances'},
        ),
        (
            "q = sa.text('DELETE FROM build_requests WHERE id = 1')\n",
            {'build_requests'},
        ),
        ("t = sa.table('request_specs')\n", {'request_specs'}),
        (
            "LOG.info('Deleting from instances of %s', host)\n"
            'from nimbus.db import build_requests\n'
            'build_requests.get(session, uuid)\n',
            set(),
        ),
    ],
)
def test_the_check_sees_each_way_of_naming_a_table(source, tables):
    assert tables_touched(source) == tables
