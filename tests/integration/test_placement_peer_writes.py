"""Provider generations after the same writes, against Placement 16.0.0.

Clients carry a provider's generation from one call to the next, so every
write must move it exactly as OpenStack Placement 16.0.0 does. Each
sequence below runs on both servers (see
:mod:`tests.integration.placement_peer_compare`); every step's status, body
(without uuids, timestamps and wording) and the generations of the named
providers afterwards must be equal. Later steps send the generation the
server itself reported, so a drift also shows as a 409 on one side.
"""

import uuid

import pytest

from tests.integration import placement_peer
from tests.integration import placement_peer_compare as compare

pytestmark = pytest.mark.integration

SERVICE = {'headers': {'x-roles': 'admin,service'}}
ALL = ('A', 'B', 'CH', 'CH2')


@pytest.fixture(scope='module')
def servers(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('peer-writes'))
    with (
        placement_peer.openstack_placement(workdir) as peer_url,
        placement_peer.nimbus_placement(workdir) as nimbus_url,
    ):
        peer = placement_peer.Client(peer_url)
        nimbus = placement_peer.Client(nimbus_url)
        yield peer, nimbus
        peer.close()
        nimbus.close()


def _names():
    return {
        k: str(uuid.uuid4())
        for k in ('A', 'B', 'CH', 'CH2', 'c1', 'c2', 'c3', 'agg1')
    }


def _o(**kw):
    kw.setdefault('gens', ALL)
    return kw


def _alloc(gen, **rps):
    return {
        'allocations': {
            '{%s}' % rp: {'resources': res} for rp, res in rps.items()
        },
        'project_id': 'p',
        'user_id': 'u',
        'consumer_generation': gen,
        'consumer_type': 'INSTANCE',
    }


INV = {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024}}


def _trees():
    """A and B roots, CH and CH2 children of A, each with VCPU and MEMORY."""
    steps = [
        ('POST', '/resource_providers', {'name': 'rp-{A}', 'uuid': '{A}'}, {}),
        ('POST', '/resource_providers', {'name': 'rp-{B}', 'uuid': '{B}'}, {}),
        (
            'POST',
            '/resource_providers',
            {'name': 'rp-{CH}', 'uuid': '{CH}', 'parent_provider_uuid': '{A}'},
            {},
        ),
        (
            'POST',
            '/resource_providers',
            {
                'name': 'rp-{CH2}',
                'uuid': '{CH2}',
                'parent_provider_uuid': '{A}',
            },
            {},
        ),
    ]
    for rp in ALL:
        steps.append(
            (
                'PUT',
                '/resource_providers/{%s}/inventories' % rp,
                {
                    'resource_provider_generation': '@gen:' + rp,
                    'inventories': INV,
                },
                _o(),
            )
        )
    return steps


ALLOCATION_WRITES = _trees() + [
    ('PUT', '/allocations/{c1}', _alloc(None, A={'VCPU': 1}), _o()),
    # the same allocations again
    ('PUT', '/allocations/{c1}', _alloc(1, A={'VCPU': 1}), _o()),
    # moved: the provider left behind keeps its generation
    ('PUT', '/allocations/{c1}', _alloc(2, B={'VCPU': 1}), _o()),
    (
        'PUT',
        '/allocations/{c1}',
        _alloc(3, A={'VCPU': 1}, B={'VCPU': 2}),
        _o(),
    ),
    # emptied (1.28+): every provider that lost them is bumped
    (
        'PUT',
        '/allocations/{c1}',
        {
            'allocations': {},
            'project_id': 'p',
            'user_id': 'u',
            'consumer_generation': 4,
            'consumer_type': 'INSTANCE',
        },
        _o(),
    ),
    (
        'PUT',
        '/allocations/{c1}',
        {
            'allocations': {'{A}': {'resources': {'VCPU': 1}}},
            'project_id': 'p',
            'user_id': 'u',
        },
        _o(mv='1.12'),
    ),
    (
        'PUT',
        '/allocations/{c1}',
        {
            'allocations': [
                {
                    'resource_provider': {'uuid': '{CH}'},
                    'resources': {'VCPU': 1},
                }
            ]
        },
        _o(mv='1.0'),
    ),
    # DELETE bumps nothing
    ('DELETE', '/allocations/{c1}', None, _o()),
    (
        'POST',
        '/allocations',
        {
            '{c1}': _alloc(None, A={'VCPU': 1}),
            '{c2}': _alloc(None, B={'VCPU': 1}),
        },
        _o(),
    ),
    (
        'POST',
        '/allocations',
        {
            '{c1}': _alloc(1, B={'VCPU': 1}),
            '{c2}': {
                'allocations': {},
                'project_id': 'p',
                'user_id': 'u',
                'consumer_generation': 1,
                'consumer_type': 'INSTANCE',
            },
        },
        _o(),
    ),
    # a refused write moves nothing
    ('PUT', '/allocations/{c3}', _alloc(None, A={'VCPU': 100}), _o()),
    ('PUT', '/allocations/{c3}', _alloc(7, A={'VCPU': 1}), _o()),
    (
        'PUT',
        '/allocations/{c3}',
        _alloc(None, CH={'VCPU': 1}, CH2={'MEMORY_MB': 64}),
        _o(),
    ),
    ('PUT', '/allocations/{c3}', _alloc(1, CH={'VCPU': 2}), _o()),
    ('GET', '/allocations/{c3}', None, {}),
    ('GET', '/resource_providers/{CH}/allocations', None, {}),
    ('GET', '/resource_providers/{CH2}/usages', None, {}),
    ('DELETE', '/allocations/{c3}', None, _o()),
    ('DELETE', '/allocations/{c3}', None, _o()),
]

PROVIDER_WRITES = _trees() + [
    (
        'POST',
        '/resource_providers/{A}/inventories',
        {
            'resource_class': 'DISK_GB',
            'total': 100,
            'resource_provider_generation': '@gen:A',
        },
        _o(),
    ),
    (
        'PUT',
        '/resource_providers/{A}/inventories/DISK_GB',
        {'total': 200, 'resource_provider_generation': '@gen:A'},
        _o(),
    ),
    # the same inventory again still counts as a write
    (
        'PUT',
        '/resource_providers/{A}/inventories/DISK_GB',
        {'total': 200, 'resource_provider_generation': '@gen:A'},
        _o(),
    ),
    (
        'PUT',
        '/resource_providers/{A}/inventories/DISK_GB',
        {'total': 200, 'resource_provider_generation': 0},
        _o(),
    ),
    ('DELETE', '/resource_providers/{A}/inventories/DISK_GB', None, _o()),
    ('DELETE', '/resource_providers/{B}/inventories', None, _o()),
    (
        'PUT',
        '/resource_providers/{A}/traits',
        {
            'traits': ['HW_CPU_X86_AVX2'],
            'resource_provider_generation': '@gen:A',
        },
        _o(),
    ),
    (
        'PUT',
        '/resource_providers/{A}/traits',
        {
            'traits': ['HW_CPU_X86_AVX2'],
            'resource_provider_generation': '@gen:A',
        },
        _o(),
    ),
    ('DELETE', '/resource_providers/{A}/traits', None, _o()),
    ('PUT', '/resource_providers/{A}/aggregates', ['{agg1}'], _o(mv='1.1')),
    (
        'PUT',
        '/resource_providers/{A}/aggregates',
        {'aggregates': ['{agg1}'], 'resource_provider_generation': '@gen:A'},
        _o(mv='1.19'),
    ),
    (
        'PUT',
        '/resource_providers/{A}/aggregates',
        {'aggregates': [], 'resource_provider_generation': '@gen:A'},
        _o(mv='1.19'),
    ),
    ('PUT', '/resource_providers/{B}', {'name': 'rp2-{B}'}, _o()),
    (
        'PUT',
        '/resource_providers/{CH2}',
        {'name': 'rp-{CH2}', 'parent_provider_uuid': '{B}'},
        _o(mv='1.37'),
    ),
    ('PUT', '/resource_providers/{CH2}', {'name': 'rp-{CH2}'}, _o(mv='1.37')),
    ('GET', '/resource_providers?in_tree={A}', None, {}),
]

RESHAPES = _trees() + [
    ('PUT', '/allocations/{c1}', _alloc(None, CH={'VCPU': 2}), _o()),
    ('PUT', '/allocations/{c2}', _alloc(None, CH2={'VCPU': 3}), _o()),
    # consolidate both children's VCPU into the root, allocations moved
    (
        'POST',
        '/reshaper',
        {
            'inventories': {
                '{A}': {
                    'resource_provider_generation': '@gen:A',
                    'inventories': {
                        'VCPU': {'total': 16},
                        'MEMORY_MB': {'total': 1024},
                    },
                },
                '{CH}': {
                    'resource_provider_generation': '@gen:CH',
                    'inventories': {'MEMORY_MB': {'total': 1024}},
                },
                '{CH2}': {
                    'resource_provider_generation': '@gen:CH2',
                    'inventories': {},
                },
            },
            'allocations': {
                '{c1}': _alloc(1, A={'VCPU': 2}),
                '{c2}': _alloc(1, A={'VCPU': 3}),
            },
        },
        _o(headers=SERVICE['headers']),
    ),
    # and back out to a child, carrying the generations just reported
    (
        'POST',
        '/reshaper',
        {
            'inventories': {
                '{A}': {
                    'resource_provider_generation': '@gen:A',
                    'inventories': {'MEMORY_MB': {'total': 1024}},
                },
                '{CH2}': {
                    'resource_provider_generation': '@gen:CH2',
                    'inventories': {'VCPU': {'total': 16}},
                },
            },
            'allocations': {
                '{c1}': _alloc(2, CH2={'VCPU': 2}),
                '{c2}': _alloc(2, CH2={'VCPU': 3}, B={'VCPU': 1}),
            },
        },
        _o(headers=SERVICE['headers']),
    ),
    # a stale generation is refused and moves nothing
    (
        'POST',
        '/reshaper',
        {
            'inventories': {
                '{B}': {'resource_provider_generation': 0, 'inventories': INV}
            },
            'allocations': {},
        },
        _o(headers=SERVICE['headers']),
    ),
    # an allocation-only reshape
    (
        'POST',
        '/reshaper',
        {
            'inventories': {},
            'allocations': {'{c1}': _alloc(3, B={'MEMORY_MB': 10})},
        },
        _o(headers=SERVICE['headers']),
    ),
    ('GET', '/resource_providers/{A}/inventories', None, {}),
    ('GET', '/resource_providers/{CH2}/usages', None, {}),
]


@pytest.mark.parametrize('sequence', ['allocations', 'providers', 'reshaper'])
def test_generations_agree(servers, sequence):
    steps = {
        'allocations': ALLOCATION_WRITES,
        'providers': PROVIDER_WRITES,
        'reshaper': RESHAPES,
    }[sequence]
    peer, nimbus = servers
    names = _names()
    p = compare.run(peer, names, steps)
    n = compare.run(nimbus, names, steps)
    # the sequences do write (a run of refusals would agree trivially)
    assert sum(e['status'] in (200, 201, 204) for e in p) > len(steps) // 2
    diffs = compare.differences(p, n)
    assert not diffs, '\n'.join(diffs)
