"""Runs each gabbi YAML file in gabbits/ as one pytest test.

Each file gets a fresh database and a fresh app (built on demand through a
dispatcher the gabbi intercept points at), so files are independent and
pytest-xdist can spread them over workers. Files named ``rbac-legacy*``
run with ``[oslo_policy] enforce_new_defaults = False``, files named
``cors*`` with ``[cors] allowed_origin = https://ui.example.com``.
"""

import os
import unittest

import pytest

from nimbus.common import db as common_db
from nimbus.placement import wsgi
from tests.functional.placement import fixtures

HERE = os.path.dirname(os.path.abspath(__file__))
GABBITS = os.path.join(HERE, 'gabbits')
FILES = sorted(f[:-5] for f in os.listdir(GABBITS) if f.endswith('.yaml'))

_CURRENT = {}


def _dispatch(environ, start_response):
    return _CURRENT['app'](environ, start_response)


def _suite(name):
    """The gabbi suite of one YAML file (content handlers as gabbi sets)."""
    from gabbi import handlers as gabbi_handlers
    from gabbi import suitemaker
    from gabbi import utils

    handler_objects = []
    for handler in gabbi_handlers.RESPONSE_HANDLERS:
        handler_objects.append(handler())
    path = os.path.join(GABBITS, name + '.yaml')
    data = utils.load_yaml(yaml_file=path)
    return suitemaker.test_suite_from_dict(
        unittest.TestLoader(),
        name.replace('-', '_'),
        data,
        GABBITS,
        'placement.test',
        8001,
        None,
        lambda: _dispatch,
        handlers=handler_objects,
        test_loader_name='placement',
    )


@pytest.mark.slow
@pytest.mark.parametrize('name', FILES)
def test_gabbit(name, tmp_path):
    suite = _suite(name)
    overrides = {}
    if name.startswith('rbac-legacy'):
        overrides['oslo_policy'] = {'enforce_new_defaults': False}
    if name.startswith('cors'):
        overrides['cors'] = {
            'allowed_origin': ['https://ui.example.com'],
            'expose_headers': ['openstack-api-version'],
        }
    with fixtures.fresh_database(tmp_path) as url:
        conf = fixtures.make_conf(url, **overrides)
        _CURRENT['app'] = wsgi.make_app(conf)
        try:
            result = unittest.TestResult()
            suite.run(result)
        finally:
            _CURRENT.clear()
            common_db.get_database(url).dispose()
    problems = [
        '%s\n%s' % (test.id(), trace)
        for test, trace in result.failures + result.errors
    ]
    assert not problems, '\n\n'.join(problems)
    assert result.testsRun > 0
