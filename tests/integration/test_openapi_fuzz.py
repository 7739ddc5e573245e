"""schemathesis against the live REST APIs, from their own OpenAPI documents.

nimbus-placement-api and nimbus-api run as real daemons (console scripts,
config files, SQLite; MariaDB with ``NIMBUS_TEST_DB=mysql``, as ``make
fuzz`` runs it), with the scheduler so the dry-run endpoint answers.
schemathesis reads ``/openapi.json`` from each and runs its coverage,
fuzzing and stateful phases (the document's links: create a provider, then
its inventories, traits, aggregates...) with these checks:

- ``not_a_server_error``: no 500 at all;
- ``status_code_conformance``: every status is one the document lists;
- ``content_type_conformance`` and ``response_schema_conformance``: every
  response is JSON, and every error is the API's documented error body,
  whose message (``detail`` / ``message``) is a non-empty string naming
  the problem;
- ``negative_data_rejection``: input the schema forbids (a float where it
  says integer, a missing field, a wrong type) is refused with a 4xx.

``NIMBUS_FUZZ_EXAMPLES`` sets the examples per operation (default 5: the
quick run of ``make test``, about a minute per API on two cores).
"""

import os
import re
import subprocess
import sys

import pytest
import requests

from nimbus.cmd import openapi as openapi_cmd
from nimbus.testing import daemons

EXAMPLES = int(os.environ.get('NIMBUS_FUZZ_EXAMPLES', '5'))
CHECKS = (
    'not_a_server_error',
    'status_code_conformance',
    'content_type_conformance',
    'response_schema_conformance',
    'negative_data_rejection',
)
CONFIG = os.path.join(os.path.dirname(__file__), 'schemathesis.toml')
ADMIN = {'X-Auth-Token': 'admin', 'X-Roles': 'admin,service'}


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    from nimbus.testing import infra

    kind = os.environ.get('NIMBUS_TEST_DB', 'sqlite')
    workdir = tmp_path_factory.mktemp('fuzz')
    cleanups = []
    if kind == 'sqlite':
        databases = {
            name: 'sqlite:///%s' % (workdir / ('%s.db' % name))
            for name in ('api', 'cell0', 'cell1', 'placement')
        }
    else:
        databases = {}
        for name in ('api', 'cell0', 'cell1', 'placement'):
            databases[name], cleanup = infra.database(kind)
            cleanups.append(cleanup)
    buses = []
    for _ in range(2):
        url, cleanup = infra.rabbit_vhost()
        buses.append(url)
        cleanups.append(cleanup)
    cloud = daemons.DaemonCloud(
        str(workdir / 'cloud'), buses[0], buses[1], databases, hosts=0
    )
    try:
        cloud.prepare()
        cloud.start_placement()
        api_db = databases['api']
        cloud._daemon(
            'scheduler', 'nimbus.cmd.scheduler', cloud._with(api=api_db)
        )
        api = cloud._with(api=api_db)
        cloud._daemon(
            'api',
            'nimbus.cmd.api',
            api,
            ['--host', '127.0.0.1', '--port', str(cloud.api_port)],
        )
        cloud.wait_http(cloud.api_url + '/')
        yield cloud
    finally:
        cloud.stop()
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception:  # best effort; names are unique anyway
                pass


def _fuzz(cloud, name, base_url, headers, tmp_path):
    """Run schemathesis on ``base_url``'s document; returns (generated
    test cases, failures, output)."""
    command = [
        os.path.join(os.path.dirname(sys.executable), 'st'),
        '--config-file',
        CONFIG,
        'run',
        base_url + '/openapi.json',
        '--checks',
        ','.join(CHECKS),
        # One worker: hypothesis' lambda descriptions are not
        # thread-safe (an "AST constructor recursion depth
        # mismatch" runtime error of the tool with two).
        '--max-examples',
        str(EXAMPLES),
        '--workers',
        '1',
        '--suppress-health-check',
        'all',
        '--no-color',
        '--request-timeout',
        '60',
        '--seed',
        '20261125',
        '--report',
        'junit',
        '--report-dir',
        str(tmp_path),
    ]
    for key, value in headers.items():
        command += ['-H', '%s: %s' % (key, value)]
    # Fuzzed data in the report need not be valid UTF-8.
    result = subprocess.run(
        command,
        capture_output=True,
        encoding='utf-8',
        errors='replace',
        timeout=3600,
    )
    output = result.stdout + result.stderr
    with open(os.path.join(str(tmp_path), 'schemathesis.log'), 'w') as f:
        f.write(output)
    match = re.search(r'(\d+) generated', output)
    generated = int(match.group(1)) if match else 0
    failures = re.search(r'(\d+) unique failures?', output)
    found = int(failures.group(1)) if failures else 0
    print(
        '%s: %d test cases, %d unique failures, exit %d'
        % (name, generated, found, result.returncode)
    )
    return generated, found, result.returncode, output


def _failures(output):
    """The failures section of schemathesis' report (not the progress)."""
    start = output.find('= FAILURES =')
    return output[start if start >= 0 else -8000 :][:30000]


def _served_is_checked_in(url, name):
    served = requests.get(url + '/openapi.json', timeout=30)
    assert served.status_code == 200
    assert served.headers['content-type'] == 'application/json'
    assert served.text == openapi_cmd.generated()[name]


def test_placement_api_survives_its_own_document(cloud, tmp_path):
    _served_is_checked_in(cloud.placement_url, 'placement.json')
    generated, found, code, output = _fuzz(
        cloud,
        'placement',
        cloud.placement_url,
        dict(ADMIN, **{'OpenStack-API-Version': 'placement latest'}),
        tmp_path,
    )
    assert code == 0 and found == 0, _failures(output) + cloud.logs()
    assert generated >= 36 * EXAMPLES
    assert cloud.daemons['placement-api'].alive()


def test_compute_api_survives_its_own_document(cloud, tmp_path):
    _served_is_checked_in(cloud.api_url, 'compute.json')
    generated, found, code, output = _fuzz(
        cloud,
        'compute',
        cloud.api_url,
        dict(ADMIN, **{'OpenStack-API-Version': 'compute latest'}),
        tmp_path,
    )
    assert code == 0 and found == 0, _failures(output) + cloud.logs()
    assert generated >= 47 * EXAMPLES
    assert cloud.daemons['api'].alive()
