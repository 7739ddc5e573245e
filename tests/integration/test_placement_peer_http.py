"""HTTP details against Placement 16.0.0: headers of every route around
the 1.15 boundary, empty responses, missing content types, CORS.

Status, body (without uuids, timestamps and wording) and the headers of
:data:`placement_peer_compare.HEADERS` (``cache-control``,
``last-modified`` from 1.15, ``content-type``, ``location``, ``allow``,
``vary``, the ``access-control-*`` headers) must be equal.
"""

import pytest

from tests.integration import placement_peer
from tests.integration import placement_peer_compare as compare
from tests.integration import test_placement_peer_rbac as rbac

pytestmark = pytest.mark.integration

CORS = (
    '[cors]\nallowed_origin = https://dashboard.example.com\n'
    'allow_headers = openstack-api-version,x-auth-token,content-type\n'
    'expose_headers = openstack-api-version\n'
)
ORIGIN = 'https://dashboard.example.com'
MICROVERSIONS = ('1.0', '1.14', '1.15', '1.39')


@pytest.fixture(scope='module')
def servers(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('peer-http'))
    with (
        placement_peer.openstack_placement(workdir, CORS) as peer_url,
        placement_peer.nimbus_placement(workdir, CORS) as nimbus_url,
    ):
        peer = placement_peer.Client(peer_url)
        nimbus = placement_peer.Client(nimbus_url)
        yield peer, nimbus
        peer.close()
        nimbus.close()


def _both(servers, steps):
    names = rbac._names()
    peer, nimbus = servers
    return compare.run(peer, names, steps), compare.run(nimbus, names, steps)


def _at(steps, mv):
    return [(m, p, b, dict(o, mv=mv)) for m, p, b, o in steps]


@pytest.mark.parametrize('mv', MICROVERSIONS)
def test_every_route_agrees(servers, mv):
    """Every route as the service (allowed everywhere), with headers."""
    svc = {
        'headers': {
            'x-auth-token': 'nova:services',
            'x-roles': 'admin,service',
        }
    }
    steps = [(m, p, b, svc) for m, p, b, _o in rbac._setup(None)]
    steps += [(m, p, b, svc) for m, p, b, _o in rbac._every_route('service')]
    steps.append(
        (
            'POST',
            '/resource_providers',
            {'name': 'rp-{EMPTY}', 'uuid': '{EMPTY}'},
            svc,
        )
    )
    steps += [
        ('GET', '/', None, {}),
        ('GET', '/resource_providers/{EMPTY}/aggregates', None, svc),
        ('DELETE', '/resource_providers/{EMPTY}', None, svc),
    ]
    peer, nimbus = _both(servers, _at(steps, mv))
    assert any(e['status'] == 200 for e in peer)
    diffs = compare.differences(peer, nimbus)
    assert not diffs, '\n'.join(diffs)


ADMIN = {'x-auth-token': 'admin'}
EDGES = [
    # no Content-Type on a body: 415
    (
        'POST',
        '/resource_providers',
        None,
        {'data': b'{"name": "x"}', 'headers': {'content-type': None}},
    ),
    (
        'PUT',
        '/traits/CUSTOM_X',
        None,
        {'data': b'{}', 'headers': {'content-type': None}},
    ),
    (
        'POST',
        '/resource_providers',
        None,
        {'data': b'{"name": "x"}', 'headers': {'content-type': 'text/plain'}},
    ),
    # aggregates of a provider that does not exist: 404
    ('PUT', '/resource_providers/{RP}/aggregates', ['{AGG}'], {'mv': '1.1'}),
    (
        'PUT',
        '/resource_providers/{RP}/aggregates',
        {'aggregates': ['{AGG}'], 'resource_provider_generation': 0},
        {},
    ),
    # wrong method: 405 with allow
    ('PATCH', '/resource_providers', {}, {}),
    ('DELETE', '/', None, {}),
    # CORS: a preflight is answered by the middleware, an allowed origin
    # gets access-control-allow-origin, another origin does not
    (
        'OPTIONS',
        '/resource_providers',
        None,
        {
            'headers': {
                'origin': ORIGIN,
                'access-control-request-method': 'GET',
                'access-control-request-headers': 'x-auth-token',
            }
        },
    ),
    (
        'OPTIONS',
        '/resource_providers',
        None,
        {
            'headers': {
                'origin': 'https://elsewhere.example.com',
                'access-control-request-method': 'GET',
            }
        },
    ),
    ('GET', '/resource_providers', None, {'headers': {'origin': ORIGIN}}),
    ('GET', '/', None, {'headers': {'origin': ORIGIN}}),
    (
        'GET',
        '/resource_providers',
        None,
        {'headers': {'origin': 'https://elsewhere.example.com'}},
    ),
    (
        'GET',
        '/resource_providers',
        None,
        {'mv': '1.15', 'headers': {'origin': ORIGIN}},
    ),
    # microversion negotiation and content negotiation
    ('GET', '/resource_providers', None, {'mv': '9.0'}),
    ('GET', '/resource_providers', None, {'mv': 'x.y'}),
    ('GET', '/resource_providers', None, {'mv': 'latest'}),
    ('GET', '/', None, {'headers': {'openstack-api-version': None}}),
    ('GET', '/resource_providers', None, {'headers': {'accept': 'text/html'}}),
    ('GET', '/nowhere', None, {}),
    ('GET', '/resource_providers', None, {'headers': {'x-auth-token': None}}),
]


def _html_406(peer, nimbus):
    """Documented (docs/placement.md, "406 bodies are JSON"): for an
    Accept without JSON both answer 406, Placement's body follows the
    Accept header, Nimbus's is JSON."""
    if (
        peer['status'] == nimbus['status'] == 406
        and peer['headers'].get('content-type') == 'text/html'
    ):
        return '406 body in HTML'
    return None


def test_edges_agree(servers):
    peer, nimbus = _both(servers, EDGES)
    assert {e['status'] for e in peer} >= {415, 404, 405, 200}
    diffs = compare.differences(peer, nimbus, known=(_html_406,))
    assert not diffs, '\n'.join(diffs)


def _key_order(value):
    """Every object's keys in the order sent (dict equality ignores it)."""
    if isinstance(value, dict):
        return [
            list(value),
            {
                k: _key_order(v)
                for k, v in value.items()
                if isinstance(v, (dict, list))
            },
        ]
    if isinstance(value, list):
        return [_key_order(v) for v in value]
    return None


def test_resource_class_order_agrees(servers):
    """Summaries, inventories and usages list classes as Placement does:
    standard classes by id, then custom ones as they were created (here
    CUSTOM_ZED before CUSTOM_ALPHA)."""
    svc = {'headers': {'x-auth-token': 'admin', 'x-roles': 'admin'}}
    rcs = (
        'CUSTOM_ZED',
        'SRIOV_NET_VF',
        'DISK_GB',
        'CUSTOM_ALPHA',
        'VCPU',
        'MEMORY_MB',
        'PCPU',
    )
    steps = [
        ('PUT', '/resource_classes/CUSTOM_ZED', None, svc),
        ('PUT', '/resource_classes/CUSTOM_ALPHA', None, svc),
        (
            'POST',
            '/resource_providers',
            {'name': 'rp-{RP}', 'uuid': '{RP}'},
            svc,
        ),
        (
            'PUT',
            '/resource_providers/{RP}/inventories',
            {
                'resource_provider_generation': 0,
                'inventories': {rc: {'total': 100} for rc in rcs},
            },
            svc,
        ),
        (
            'PUT',
            '/allocations/{C}',
            {
                'allocations': {
                    '{RP}': {
                        'resources': {
                            'VCPU': 1,
                            'CUSTOM_ZED': 1,
                            'DISK_GB': 1,
                            'CUSTOM_ALPHA': 2,
                        }
                    }
                },
                'project_id': 'porder',
                'user_id': 'u',
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            },
            svc,
        ),
    ]
    reads = [
        '/allocation_candidates?resources=VCPU:1&in_tree={RP}',
        '/resource_providers/{RP}/inventories',
        '/resource_providers/{RP}/usages',
        '/usages?project_id=porder',
        '/resource_providers/{RP}/allocations',
    ]
    names = rbac._names()
    peer, nimbus = servers
    orders = []
    for client in (peer, nimbus):
        compare.run(client, names, steps)
        got = []
        for path in reads:
            resp = client.call('GET', path.format(**names))
            assert resp.status_code == 200, resp.text
            body = resp.json()
            body.pop('resource_provider_generation', None)
            got.append(
                (
                    path,
                    _key_order(
                        compare._unname(body, {v: k for k, v in names.items()})
                    ),
                )
            )
        orders.append(got)
    assert orders[0] == orders[1]
    summary = orders[1][0][1][1]['provider_summaries'][1]['RP'][1]
    assert summary['resources'][0] == [
        'VCPU',
        'MEMORY_MB',
        'DISK_GB',
        'SRIOV_NET_VF',
        'PCPU',
        'CUSTOM_ZED',
        'CUSTOM_ALPHA',
    ]
