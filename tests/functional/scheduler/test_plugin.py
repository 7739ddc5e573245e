"""The seed's acmefilter example, built as a real package with setup.py,
installed with pip into a directory of its own (``--target``, put on the
path of the services under test) and enabled through configuration,
scheduling through the real cloud. Everything loads through stevedore: its
filter (entry point ``acme_filter`` of ``nimbus.scheduler.filters``, named
in ``available_filters`` and ``enabled_filters``), its weigher (entry point
``AcmeWeigher`` of ``nimbus.scheduler.weighers``) and its extra-spec
validator (entry point ``acme`` of ``nimbus.api.extra_spec_validators``,
used by the API)."""

import importlib
import subprocess
import sys
import textwrap

import pytest
import requests

from nimbus import extra_specs
from nimbus.testing import infra
from tests.functional.scheduler import fixtures as fx

PKG = 'acmefilter'

INIT = '''
from oslo_log import log as logging
from nimbus.scheduler import filters
from nimbus.scheduler import weighers

LOG = logging.getLogger(__name__)

# (host, acme:foo) for every host the filter was asked about.
CALLS = []


class AcmeFilter(filters.BaseHostFilter):

    def host_passes(self, host_state, spec_obj):
        extra_spec = spec_obj.flavor.extra_specs.get('acme:foo')
        LOG.info("Extra spec value was '%s'", extra_spec)
        CALLS.append((host_state.host, extra_spec))
        # 'baz' wants the hosts whose name ends in an even digit.
        if extra_spec == 'baz':
            return int(host_state.host[-1]) % 2 == 0
        return True

    def reject_reason(self, host_state, spec_obj):
        return 'acme:foo=baz needs an even host number'


class AcmeWeigher(weighers.BaseHostWeigher):
    """Prefers the highest host number."""

    def weigh(self, host_state, spec):
        return int(host_state.host[-1])
'''

VALIDATORS = """
from nimbus.extra_specs import base


def register():
    validators = [
        base.ExtraSpecValidator(
            name='acme:foo',
            description='My custom extra spec.',
            value={
                'type': str,
                'enum': [
                    'bar',
                    'baz',
                ],
            },
        ),
    ]

    return validators
"""

SETUP = """
from setuptools import setup

setup(
    name='acmefilter',
    version='0.1',
    description='My custom filter',
    packages=[
        'acmefilter'
    ],
    entry_points={
        'nimbus.api.extra_spec_validators': [
            'acme = acmefilter.validators',
        ],
        'nimbus.scheduler.filters': [
            'acme_filter = acmefilter:AcmeFilter',
        ],
        'nimbus.scheduler.weighers': [
            'AcmeWeigher = acmefilter:AcmeWeigher',
        ],
    },
)
"""


@pytest.fixture
def acme(tmp_path):
    """Build the package and pip-install it into a directory of its own
    (put on sys.path), so parallel test runs never share an install."""
    infra.require_module('wheel', 'building the plugin needs wheel')
    src = tmp_path / 'acmefilter-src'
    (src / PKG).mkdir(parents=True)
    (src / PKG / '__init__.py').write_text(textwrap.dedent(INIT))
    (src / PKG / 'validators.py').write_text(textwrap.dedent(VALIDATORS))
    (src / 'setup.py').write_text(textwrap.dedent(SETUP))
    target = tmp_path / 'site'
    result = subprocess.run(
        [
            sys.executable,
            '-m',
            'pip',
            'install',
            '-q',
            '--no-deps',
            '--no-build-isolation',
            '--target',
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    extra_specs.reset()
    try:
        yield importlib.import_module(PKG)
    finally:
        sys.path.remove(str(target))
        for name in [m for m in sys.modules if m.split('.')[0] == PKG]:
            del sys.modules[name]
        importlib.invalidate_caches()
        extra_specs.reset()


@pytest.mark.slow
def test_acme_plugin_schedules_through_the_cloud(acme, make_cloud):
    # Installed outside the venv: only the path entry makes it importable.
    assert acme.__file__.startswith(str(sys.path[0]))
    cloud = make_cloud(
        hosts=4,
        overrides={
            'filter_scheduler': {
                'available_filters': [
                    'nimbus.scheduler.filters.all_filters',
                    'acme_filter',
                ],
                'enabled_filters': ['ComputeFilter', 'acme_filter'],
                # Only the plugin's weigher decides.
                'weight_classes': ['AcmeWeigher'],
            }
        },
    )
    api = fx.admin_client(cloud)
    image = api.create_image('img')
    # The API validates the plugin's extra spec with the plugin's validator.
    flavor = api.create_flavor('acme', 1, 512, 1)
    response = requests.post(
        api.url + '/flavors/%s/os-extra_specs' % flavor['id'],
        json={'extra_specs': {'acme:foo': 'qux'}},
        headers={'X-Auth-Token': 'admin'},
        timeout=30,
    )
    assert response.status_code == 400
    message = response.json()['badRequest']['message']
    assert 'acme:foo' in message and 'qux' in message
    api.post(
        '/flavors/%s/os-extra_specs' % flavor['id'],
        {'extra_specs': {'acme:foo': 'baz'}},
    )
    acme.CALLS.clear()

    result = fx.dry_run(api, flavor, image=image)
    assert [f['name'] for f in result['filters']] == [
        'ComputeFilter',
        'AcmeFilter',
    ]
    assert fx.ranked_hosts(result) == ['host-4', 'host-2']
    assert set(result['ranked'][0]['weighers']) == {'AcmeWeigher'}
    rejected = {r['host']: r for r in result['rejected']}
    assert set(rejected) == {'host-1', 'host-3'}
    assert rejected['host-1'] == dict(
        rejected['host-1'],
        filter='AcmeFilter',
        reason='acme:foo=baz needs an even host number',
    )

    # The dry run went through the plugin filter in the scheduler.
    assert sorted(acme.CALLS) == [('host-%d' % i, 'baz') for i in range(1, 5)]

    acme.CALLS.clear()
    first = fx.boot_and_settle(api, 'acme-1', flavor, image)
    assert first['status'] == 'ACTIVE' and fx.host_of(first) == 'host-4'
    assert {h for h, value in acme.CALLS} == {
        'host-1',
        'host-2',
        'host-3',
        'host-4',
    }
    # acme:foo=bar lets every host through; the weigher still picks host-4.
    bar = api.create_flavor(
        'acme-bar', 1, 512, 1, extra_specs={'acme:foo': 'bar'}
    )
    second = fx.boot_and_settle(api, 'acme-2', bar, image)
    assert fx.host_of(second) == 'host-4'
