"""harness.tempest: the counts it reads from a ``tempest run``
output and the tempest.conf it writes."""

import configparser
import re

from oslo_config import cfg
from oslo_log import _options as log_options
import pytest

from harness import tempest

OUTPUT = """
======
Totals
======
Ran: 441 tests in 1200.0000 sec.
 - Passed: 201
 - Skipped: 150
 - Expected Fail: 0
 - Unexpected Success: 0
 - Failed: 90
Sum of execute time for each test: 2000.0000 sec.
"""


class _Keystone:
    url = 'http://127.0.0.1:5000/v3'


def test_counts_of_a_tempest_run():
    assert tempest.counts(OUTPUT) == {
        'Passed': 201,
        'Skipped': 150,
        'Expected Fail': 0,
        'Unexpected Success': 0,
        'Failed': 90,
    }
    assert tempest.counts('no totals here') == {}


def test_conf_says_what_nimbus_serves(tmp_path):
    sections = tempest.tempest_conf(
        _Keystone(),
        'img',
        'img2',
        '42',
        '84',
        str(tmp_path),
        ['host-1', 'host-2'],
    )
    path = tmp_path / 'tempest.conf'
    tempest.write_conf(path, sections)
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(path)
    assert conf['service_available']['neutron'] == 'false'
    assert conf['service_available']['cinder'] == 'false'
    assert conf['compute']['image_ref'] == 'img'
    assert conf['compute']['flavor_ref_alt'] == '84'
    assert conf['compute']['min_compute_nodes'] == '2'
    assert conf['identity']['uri_v3'] == _Keystone.url
    features = conf['compute-feature-enabled']
    for name in tempest.FEATURES_ON:
        assert features[name] == 'true', name
    assert features['interface_attach'] == 'false'
    assert (
        features['live_migration']
        == str(tempest.LIVE_MIGRATION_ENABLED).lower()
    )
    assert not set(tempest.FEATURES_ON) & set(tempest.FEATURES_OFF)
    # live migration is on, as a block migration (no shared storage in
    # the fake driver) between any two computes
    assert features['live_migration'] == 'true'
    assert features['block_migration_for_live_migration'] == 'true'
    assert features['can_migrate_between_any_hosts'] == 'true'
    assert features['volume_backed_live_migration'] == 'false'
    # stable rescue on every bus Tempest tests without a volume
    assert features['stable_rescue'] == 'true'
    assert features['ide_bus'] == 'true'
    # the waits are the harness's (a loaded machine waits, not fails)
    assert conf['compute']['build_timeout'] == str(tempest.BUILD_TIMEOUT)
    assert conf['service-clients']['http_timeout'] == str(tempest.HTTP_TIMEOUT)
    assert 'ServerGroupAffinityFilter' in features[
        'scheduler_enabled_filters'
    ].split(',')


def test_daemons_limit_cores_and_ram_but_not_servers():
    class Keystone(_Keystone):
        def authtoken_options(self):
            return {'www_authenticate_uri': self.url}

    options = tempest.daemon_options(Keystone())
    # Tempest skips its resize-over-quota tests when cores or RAM are
    # unlimited (-1)
    assert options['quota']['cores'] > 0
    assert options['quota']['ram'] > 0
    assert 'instances' not in options['quota']
    assert options['keystone_authtoken'] == {
        'www_authenticate_uri': _Keystone.url
    }
    assert 'SameHostFilter' in options['filter_scheduler']['enabled_filters']


def _excluded():
    from stestr import selection

    return selection.exclusion_reader(tempest.EXCLUDE_LIST)


def test_exclude_list_is_used_by_default():
    command = tempest.tempest_command(tempest.DEFAULT_REGEX, 1)
    at = command.index('--exclude-list')
    assert command[at + 1] == tempest.EXCLUDE_LIST
    assert '--exclude-list' not in tempest.tempest_command('x', 1, '')


@pytest.fixture
def tempest_modules():
    """Importing Tempest's test modules builds Tempest's configuration,
    which sets oslo.log's ``log_file`` default to ``tempest.log`` on the
    option objects every ConfigOpts shares: every daemon this pytest
    worker started afterwards logged to ./tempest.log. Put the default
    back."""
    yield
    cfg.set_defaults(log_options.logging_cli_opts, log_file=None)


def test_exclude_list_names_one_existing_test_per_line_with_a_reason(
    tempest_modules,
):
    import importlib

    entries = _excluded()
    assert entries
    for regex, reason, _ in entries:
        # the reason is the comment, not stestr's placeholder
        # only networking and volumes stay out
        assert any(why in reason for why in ('no networking', 'volume')), (
            regex.pattern
        )
        pattern = regex.pattern
        assert pattern.startswith('^tempest\\.api\\.compute\\.')
        assert pattern.endswith('\\[')
        name = pattern[1:-2].replace('\\.', '.')
        module, cls, method = name.rsplit('.', 2)
        klass = getattr(importlib.import_module(module), cls)
        assert callable(getattr(klass, method)), name
        # the default regex selects it, and the regex selects no other
        # test than the one it names
        assert re.match(tempest.DEFAULT_REGEX, name)
        assert regex.match(name + '[id-0,negative]')
        assert not regex.match(name + 'x[id-0]')


def test_after_them_a_daemons_conf_logs_where_it_is_told():
    from nimbus.common import config

    conf = config.build_conf([])
    assert conf.log_file is None


def test_exclude_list_keeps_in_scope_tests():
    # Tests of what Nimbus serves stay in, the negative tests of the
    # excluded actions on a nonexistent server too (they answer 404).
    kept = [
        'tempest.api.compute.admin.test_migrations.MigrationsAdminTest.'
        'test_list_migrations[id-75c0b83d]',
        'tempest.api.compute.admin.test_servers_on_multinodes.'
        'UnshelveToHostMultiNodesTest.test_unshelve_to_specific_host[id-1]',
        'tempest.api.compute.admin.test_servers.ServersAdmin275Test.'
        'test_rebuild_update_server_275[id-bf2b4a00]',
        'tempest.api.compute.admin.test_hosts.HostsAdminTestJSON.'
        'test_list_hosts_with_a_blank_zone[id-9af3c171]',
        'tempest.api.compute.admin.test_hypervisor.HypervisorAdminTestJSON.'
        'test_get_hypervisor_uptime[id-91a50d7d]',
        'tempest.api.compute.servers.test_servers_negative.'
        'ServersNegativeTestJSON.test_reboot_non_existent_server[id-1,negative]',
        'tempest.api.compute.servers.test_servers.ServersTestJSON.'
        'test_update_access_server_address[id-89b90870]',
    ]
    entries = _excluded()
    for name in kept:
        assert not any(regex.match(name) for regex, _, _ in entries), name
