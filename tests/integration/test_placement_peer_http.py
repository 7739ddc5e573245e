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

CORS = ('[cors]\nallowed_origin = https://dashboard.example.com\n'
        'allow_headers = openstack-api-version,x-auth-token,content-type\n'
        'expose_headers = openstack-api-version\n')
ORIGIN = 'https://dashboard.example.com'
MICROVERSIONS = ('1.0', '1.14', '1.15', '1.39')


@pytest.fixture(scope='module')
def servers(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('peer-http'))
    with placement_peer.openstack_placement(workdir, CORS) as peer_url, \
            placement_peer.nimbus_placement(workdir, CORS) as nimbus_url:
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
    svc = {'headers': {'x-auth-token': 'nova:services',
                       'x-roles': 'admin,service'}}
    steps = [(m, p, b, svc) for m, p, b, _o in rbac._setup(None)]
    steps += [(m, p, b, svc) for m, p, b, _o in rbac._every_route('service')]
    steps.append(('POST', '/resource_providers',
                  {'name': 'rp-{EMPTY}', 'uuid': '{EMPTY}'}, svc))
    steps += [('GET', '/', None, {}),
              ('GET', '/resource_providers/{EMPTY}/aggregates', None, svc),
              ('DELETE', '/resource_providers/{EMPTY}', None, svc)]
    peer, nimbus = _both(servers, _at(steps, mv))
    assert any(e['status'] == 200 for e in peer)
    diffs = compare.differences(peer, nimbus)
    assert not diffs, '\n'.join(diffs)


ADMIN = {'x-auth-token': 'admin'}
EDGES = [
    # no Content-Type on a body: 415
    ('POST', '/resource_providers', None,
     {'data': b'{"name": "x"}', 'headers': {'content-type': None}}),
    ('PUT', '/traits/CUSTOM_X', None,
     {'data': b'{}', 'headers': {'content-type': None}}),
    ('POST', '/resource_providers', None,
     {'data': b'{"name": "x"}', 'headers': {'content-type': 'text/plain'}}),
    # aggregates of a provider that does not exist: 404
    ('PUT', '/resource_providers/{RP}/aggregates', ['{AGG}'],
     {'mv': '1.1'}),
    ('PUT', '/resource_providers/{RP}/aggregates',
     {'aggregates': ['{AGG}'], 'resource_provider_generation': 0}, {}),
    # wrong method: 405 with allow
    ('PATCH', '/resource_providers', {}, {}),
    ('DELETE', '/', None, {}),
    # CORS: a preflight is answered by the middleware, an allowed origin
    # gets access-control-allow-origin, another origin does not
    ('OPTIONS', '/resource_providers', None, {'headers': {
        'origin': ORIGIN, 'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-auth-token'}}),
    ('OPTIONS', '/resource_providers', None, {'headers': {
        'origin': 'https://elsewhere.example.com',
        'access-control-request-method': 'GET'}}),
    ('GET', '/resource_providers', None, {'headers': {'origin': ORIGIN}}),
    ('GET', '/', None, {'headers': {'origin': ORIGIN}}),
    ('GET', '/resource_providers', None, {'headers': {
        'origin': 'https://elsewhere.example.com'}}),
    ('GET', '/resource_providers', None, {'mv': '1.15', 'headers': {
        'origin': ORIGIN}}),
]


def test_edges_agree(servers):
    peer, nimbus = _both(servers, EDGES)
    assert {e['status'] for e in peer} >= {415, 404, 405, 200}
    diffs = compare.differences(peer, nimbus)
    assert not diffs, '\n'.join(diffs)
