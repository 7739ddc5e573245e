"""Tempest's compute tests against Nimbus with a real Keystone
(``make tempest``).

``python -m harness.tempest [--regex R] [--workdir D]
[--concurrency N]`` starts a Keystone (:mod:`harness.keystone`), the
Nimbus daemons on RabbitMQ and MariaDB (:class:`~nimbus.testing.daemons.
DaemonCloud`, two computes, each database and vhost fresh), uploads an
image and two flavors, writes a ``tempest.conf`` that says what Nimbus
serves (the server actions, cold and live moves; no networking, no
volumes), runs ``tempest run`` and prints the pass, fail
and skip counts. Everything it created is removed at the end (unless
``--keep``); the workspace (tempest.conf, the daemons' logs, the stestr
results) stays in ``--workdir``.
"""

import argparse
import configparser
import os
import re
import subprocess
import sys
import tempfile
import uuid

from nimbus.api import versions as api_versions
from nimbus.testing import daemons
from nimbus.testing import infra
from harness import keystone as keystone_mod

# The tests left out by default (server lifecycle actions and os-networks,
# out of issue 15's scope): one regex per test, each with its reason.
EXCLUDE_LIST = os.path.join(os.path.dirname(__file__), 'tempest-exclude.txt')

DEFAULT_REGEX = (
    r'^tempest\.api\.compute\.'
    r'(servers|flavors|keypairs|admin|limits|test_versions)'
)

# The scheduler filters the harness enables (``[filter_scheduler]
# enabled_filters``, as devstack does) and tells Tempest about: Tempest
# skips the tests of a filter not in this list.
FILTERS = (
    'ComputeFilter',
    'AvailabilityZoneFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
    'SameHostFilter',
    'DifferentHostFilter',
)

# Compute features Nimbus serves (issue 24: the actions that stay on the
# host and the moves through the scheduler), switched on in tempest.conf.
FEATURES_ON = (
    'resize',
    'cold_migration',
    'shelve',
    'pause',
    'suspend',
    'rescue',
    'snapshot',
    'change_password',
    'console_output',
    'personality',
    'disk_config',
    # Rescue with an image of one's own (Tempest snapshots the server at
    # 2.1 and waits through the compute image proxy); the fake guest has
    # no disk layout for hw_rescue_device/hw_rescue_bus to keep stable,
    # so the answers and states are an ordinary rescue's.
    'stable_rescue',
    # Live migration: any compute can take any server (one cell, no
    # host aggregates in the harness), and with no shared storage the
    # fake driver's live migration is a block migration
    # (docs/moves-live-migration.md).
    'block_migration_for_live_migration',
    'can_migrate_between_any_hosts',
    # The stable rescue from a CD-ROM on an IDE bus: like the other
    # stable rescues, the fake guest keeps no device layout, so the
    # bus changes nothing Tempest checks (the API's answers, the states).
    'ide_bus',
)

# Live migration (issue 24, section 2). Tempest's live-migration classes
# also need a default network, so without Neutron they still skip.
LIVE_MIGRATION_ENABLED = True

# Tempest's waits (s): the machine is shared and often loaded, so a
# slow build or a slow answer should wait rather than fail the test.
BUILD_TIMEOUT = 600
HTTP_TIMEOUT = 300

# The [quota] limits of the daemons (their other quotas stay unlimited).
QUOTA_LIMITS = {'cores': 10000, 'ram': 10000 * 1024}

# Compute features Nimbus does not serve (there is no console, no
# networking, no volume service).
FEATURES_OFF = (
    'interface_attach',
    'vnc_console',
    'serial_console',
    'spice_console',
    'metadata_service',
    'config_drive',
    'attach_encrypted_volume',
    'swap_volume',
    'volume_multiattach',
    'volume_backed_live_migration',
    'shelve_migrate',
    'hostname_fqdn_sanitization',
    'unified_limits',
    'boot_from_volume',
    'instance_locking',
    'xenapi_apis',
    'rbd_download',
)


def tempest_conf(
    keystone, image, image_alt, flavor, flavor_alt, workdir, hosts
):
    """The tempest.conf sections (a dict of dicts)."""
    compute_features = {name: 'false' for name in FEATURES_OFF}
    compute_features.update({name: 'true' for name in FEATURES_ON})
    compute_features.update(
        {
            'live_migration': str(LIVE_MIGRATION_ENABLED).lower(),
            'scheduler_enabled_filters': ','.join(FILTERS),
            'enable_instance_password': 'true',
        }
    )
    return {
        'DEFAULT': {'log_file': os.path.join(workdir, 'tempest.log')},
        'oslo_concurrency': {'lock_path': os.path.join(workdir, 'locks')},
        'auth': {
            'admin_username': 'admin',
            'admin_password': keystone_mod.ADMIN_PASSWORD,
            'admin_project_name': 'admin',
            'admin_domain_name': 'Default',
            'use_dynamic_credentials': 'true',
            'create_isolated_networks': 'false',
            'tempest_roles': 'member',
        },
        'identity': {
            'uri_v3': keystone.url,
            'auth_version': 'v3',
            'region': keystone_mod.REGION,
            'disable_ssl_certificate_validation': 'true',
        },
        'identity-feature-enabled': {'api_v2': 'false'},
        'compute': {
            'image_ref': image,
            'image_ref_alt': image_alt,
            'flavor_ref': flavor,
            'flavor_ref_alt': flavor_alt,
            'region': keystone_mod.REGION,
            'min_microversion': api_versions.MIN_VERSION,
            'max_microversion': api_versions.MAX_VERSION,
            'min_compute_nodes': str(len(hosts)),
            'build_timeout': str(BUILD_TIMEOUT),
            'endpoint_type': 'publicURL',
        },
        'compute-feature-enabled': compute_features,
        'service-clients': {'http_timeout': str(HTTP_TIMEOUT)},
        'service_available': {
            'nova': 'true',
            'glance': 'true',
            'neutron': 'false',
            'cinder': 'false',
            'swift': 'false',
            'horizon': 'false',
            'placement': 'true',
        },
        'image': {'region': keystone_mod.REGION, 'endpoint_type': 'publicURL'},
        'image-feature-enabled': {'api_v1': 'false', 'api_v2': 'true'},
        'validation': {'run_validation': 'false'},
        'volume-feature-enabled': {'api_v2': 'false', 'api_v3': 'false'},
        'placement': {'region': keystone_mod.REGION},
    }


def daemon_options(keystone):
    """The options every daemon of the cloud gets (Keystone auth, the
    scheduler filters, the quotas)."""
    return {
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': keystone.authtoken_options(),
        'placement_client': {
            'auth_strategy': 'keystone',
            'auth_section': 'keystone_authtoken',
        },
        'compute': {'update_resources_interval': 5},
        'filter_scheduler': {'enabled_filters': ','.join(FILTERS)},
        # The servers, groups and members stay unlimited (Tempest
        # boots more servers in one project than Nova's default 10);
        # cores and RAM get limits no test reaches, so the tests of
        # a resize over the quota run instead of skipping on -1.
        'quota': dict(QUOTA_LIMITS),
    }


def write_conf(path, sections):
    parser = configparser.ConfigParser(interpolation=None)
    for section, values in sections.items():
        parser[section] = values
    with open(path, 'w') as f:
        parser.write(f)


def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def _seed(keystone, workdir):
    """An image (two names, so image_ref_alt differs) and two flavors, as
    the admin; returns their ids."""
    conn = keystone.admin()
    data = os.path.join(workdir, 'tiny.raw')
    with open(data, 'wb') as f:
        f.write(b'\0' * 4096)
    images = [
        conn.image.create_image(
            name=name,
            filename=data,
            disk_format='raw',
            container_format='bare',
            visibility='public',
        ).id
        for name in ('tempest-img', 'tempest-img-alt')
    ]
    flavors = [
        conn.compute.create_flavor(
            name=name, ram=ram, vcpus=1, disk=1, flavorid=flavorid
        ).id
        for name, ram, flavorid in (
            ('tempest.tiny', 128, '42'),
            ('tempest.small', 192, '84'),
        )
    ]
    return images, flavors


def tempest_command(regex, concurrency, exclude_list=EXCLUDE_LIST):
    """The ``tempest run`` command line."""
    command = [
        _bin('tempest'),
        'run',
        '--regex',
        regex,
        '--concurrency',
        str(concurrency),
    ]
    if exclude_list:
        command += ['--exclude-list', os.path.abspath(exclude_list)]
    return command


SUMMARY = re.compile(
    r'^ - (Passed|Failed|Skipped|Expected Fail|'
    r'Unexpected Success): (\d+)',
    re.M,
)


def counts(output):
    """``{'Passed': n, 'Failed': n, 'Skipped': n, ...}`` of a ``tempest
    run`` output (its Totals block)."""
    return {name: int(number) for name, number in SUMMARY.findall(output)}


def run(
    workdir,
    regex=DEFAULT_REGEX,
    concurrency=2,
    hosts=2,
    keep=False,
    exclude_list=EXCLUDE_LIST,
):
    """Start everything, run Tempest; returns its exit code.
    ``exclude_list``: a stestr exclude file (None or '' for none)."""
    os.makedirs(workdir, exist_ok=True)
    reason = keystone_mod.missing()
    if reason:
        raise SystemExit('no Keystone: %s' % reason)
    cleanups = []
    cloud = None
    keystone = None

    def fresh(make):
        url, cleanup = make()
        cleanups.append(cleanup)
        return url

    try:
        # Keystone on MariaDB: Tempest creates and deletes projects and
        # users for every test class, which SQLite's one writer answers
        # with 500s ("database is locked") at concurrency 2.
        keystone = keystone_mod.Keystone(
            os.path.join(workdir, 'keystone'),
            connection=fresh(infra.mysql_database),
        )
        keystone.start()
        cleanups.append(keystone.stop)

        databases = {
            name: fresh(infra.mysql_database)
            for name in ('api', 'cell0', 'cell1', 'placement')
        }
        common = daemon_options(keystone)
        cloud = daemons.DaemonCloud(
            os.path.join(workdir, 'cloud'),
            fresh(infra.rabbit_vhost),
            fresh(infra.rabbit_vhost),
            databases,
            hosts=hosts,
            common_options=common,
        )
        cloud.prepare()
        keystone.register_nimbus(cloud.api_url, cloud.placement_url)
        cloud.start()
        cleanups.append(cloud.stop)
        _wait_hypervisors(keystone, hosts, cloud)
        cloud.manage('cell', 'discover-hosts')
        (image, image_alt), (flavor, flavor_alt) = _seed(keystone, workdir)
        tempest_dir = os.path.join(workdir, 'tempest')
        if not os.path.exists(os.path.join(tempest_dir, 'etc')):
            # Tempest keeps a registry of workspaces by name (in
            # ~/.tempest): each run's workspace gets a name of its own.
            subprocess.run(
                [
                    _bin('tempest'),
                    'init',
                    '--name',
                    'nimbus-%s' % uuid.uuid4().hex[:10],
                    tempest_dir,
                ],
                check=True,
            )
        conf = os.path.join(tempest_dir, 'etc', 'tempest.conf')
        write_conf(
            conf,
            tempest_conf(
                keystone,
                image,
                image_alt,
                flavor,
                flavor_alt,
                workdir,
                cloud.hosts,
            ),
        )
        print('tempest.conf: %s' % conf, flush=True)
        result = subprocess.run(
            tempest_command(regex, concurrency, exclude_list),
            cwd=tempest_dir,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONWARNINGS='ignore'),
        )
        with open(os.path.join(workdir, 'tempest-run.log'), 'w') as f:
            f.write(result.stdout)
        tail = result.stdout.splitlines()[-40:]
        print('\n'.join(tail))
        found = counts(result.stdout)
        print(
            'TEMPEST passed=%d failed=%d skipped=%d'
            % (
                found.get('Passed', 0),
                found.get('Failed', 0),
                found.get('Skipped', 0),
            )
        )
        print('full output: %s' % os.path.join(workdir, 'tempest-run.log'))
        return result.returncode
    except BaseException:
        if cloud is not None:
            print(cloud.logs())
        if keystone is not None:
            print(keystone.tail())
        raise
    finally:
        if not keep:
            for cleanup in reversed(cleanups):
                try:
                    cleanup()
                except Exception as exc:  # best effort, say what stayed
                    print('cleanup failed: %s' % exc)


def _wait_hypervisors(keystone, hosts, cloud, timeout=180):
    import time

    conn = keystone.admin()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cloud._check_alive()
        try:
            if len(list(conn.compute.hypervisors())) >= hosts:
                return
        except Exception:  # the API is still starting
            pass
        time.sleep(2)
    raise TimeoutError('%d hypervisors did not report' % hosts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--regex', default=DEFAULT_REGEX)
    parser.add_argument('--workdir', default=None)
    parser.add_argument('--concurrency', type=int, default=2)
    parser.add_argument('--hosts', type=int, default=2)
    parser.add_argument(
        '--exclude-list',
        default=EXCLUDE_LIST,
        help='stestr exclude file (default: the shipped list of tests '
        "out of scope, %(default)s); '' for none",
    )
    parser.add_argument(
        '--keep',
        action='store_true',
        help='leave the daemons, databases and vhosts',
    )
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix='nimbus-tempest-')
    return run(
        os.path.abspath(workdir),
        args.regex,
        args.concurrency,
        args.hosts,
        args.keep,
        args.exclude_list,
    )


if __name__ == '__main__':
    sys.exit(main())
