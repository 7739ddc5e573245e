"""Two operators moving the same server at once (issue 24, section 3):
two threads send their resize or migrate to the in-process API together
(released by one barrier); the API's compare-and-swap on the task lets
exactly one in (202) and answers the other 409, and nothing leaks: one
migration record, placement holding the server's destination and the
migration's source only, then exactly one allocation set after the
confirm."""

import threading

import pytest

from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_resize import MoveApi

ROUNDS = 3


@pytest.fixture
def api(make_cloud):
    return MoveApi(make_cloud(hosts=3))


def _bodies(api, server):
    """A resize to the flavor the server does not have (big and small in
    turn), and a migrate."""
    other = api.flavor if server['flavor']['vcpus'] == 2 else api.big
    return {
        'resize': {'resize': {'flavorRef': other['id']}},
        'migrate': {'migrate': None},
    }


def _consumers(api):
    """Every consumer holding an allocation in placement."""
    from nimbus import services
    from nimbus.common import context

    client = services.placement(api.cloud.conf)
    ctxt = context.get_admin_context()
    found = set()
    providers = client.request(ctxt, 'GET', '/resource_providers').json()
    for provider in providers['resource_providers']:
        found.update(
            client.request(
                ctxt,
                'GET',
                '/resource_providers/%s/allocations' % provider['uuid'],
            ).json()['allocations']
        )
    return found


def _race(api, uuid, first, second):
    """Send ``first`` and ``second`` (action bodies) at once; their
    responses, in that order."""
    barrier = threading.Barrier(2)
    answers = [None, None]

    def send(index, body):
        barrier.wait()
        answers[index] = api.action(uuid, body, ADMIN)

    threads = [
        threading.Thread(target=send, args=(i, body))
        for i, body in enumerate((first, second))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers


@pytest.mark.parametrize(
    'first,second',
    [('resize', 'resize'), ('migrate', 'migrate'), ('resize', 'migrate')],
)
def test_two_moves_at_once_one_202_one_409_nothing_leaked(api, first, second):
    uuid = api.boot()
    for round_ in range(ROUNDS):
        server = api.show(uuid)
        source = server['OS-EXT-SRV-ATTR:host']
        bodies = _bodies(api, server)
        answers = _race(api, uuid, bodies[first], bodies[second])
        codes = sorted(a.status_code for a in answers)
        assert codes == [202, 409], [(a.status_code, a.text) for a in answers]
        refused = next(a for a in answers if a.status_code == 409)
        assert refused.json()['conflictingRequest']['message']
        server, _ = api.wait(uuid, 'VERIFY_RESIZE')
        dest = server['OS-EXT-SRV-ATTR:host']
        assert dest != source
        # One move only: one migration made in this round.
        migrations = api.migrations(uuid)
        assert len(migrations) == round_ + 1, migrations
        migration = migrations[-1]
        assert migration['status'] == 'finished'
        assert list(api.hosts_of(uuid)) == [dest]
        assert list(api.hosts_of(migration['uuid'])) == [source]
        assert _consumers(api) == {uuid, migration['uuid']}
        response = api.action(uuid, {'confirmResize': None}, ADMIN)
        assert response.status_code == 204, response.text
        server, _ = api.wait(uuid, 'ACTIVE')
        assert server['OS-EXT-SRV-ATTR:host'] == dest
        _wait_confirmed(api, uuid, migration['uuid'])
        assert _consumers(api) == {uuid}
        assert list(api.hosts_of(uuid)) == [dest]


def _wait_confirmed(api, uuid, migration_uuid, bound=30):
    import time

    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        found = {m['uuid']: m for m in api.migrations(uuid)}
        if found[migration_uuid]['status'] == 'confirmed':
            return
        time.sleep(0.05)
    raise AssertionError(found[migration_uuid])
