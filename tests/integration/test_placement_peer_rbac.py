"""Policies and scopes per persona, against Placement 16.0.0.

Both servers run with the same ``[oslo_policy]`` settings (legacy and new
defaults, scope enforced or not, a policy file overriding rules) and get
the same requests, every route of the API, from six personas sent as
noauth2 headers: system admin and system reader (``OpenStack-System-Scope:
all``), project admin, member and reader, and the service role. Status
codes and bodies (without wording) must be equal.
"""

import os
import uuid

import pytest

from tests.integration import placement_peer
from tests.integration import placement_peer_compare as compare

pytestmark = pytest.mark.integration

SYSTEM = {'openstack-system-scope': 'all'}
# noauth2: the token is user[:project]; the user "admin" is avoided, as
# Nimbus's noauth2 gives it the admin role whatever X-Roles says.
PERSONAS = {
    'system_admin': dict(
        SYSTEM, **{'x-auth-token': 'sysadm', 'x-roles': 'admin,member,reader'}
    ),
    'system_reader': dict(
        SYSTEM, **{'x-auth-token': 'sysread', 'x-roles': 'reader'}
    ),
    'project_admin': {
        'x-auth-token': 'padm:p1',
        'x-roles': 'admin,member,reader',
    },
    'project_member': {'x-auth-token': 'pmem:p1', 'x-roles': 'member,reader'},
    'project_reader': {'x-auth-token': 'pread:p1', 'x-roles': 'reader'},
    'service': {'x-auth-token': 'nova:services', 'x-roles': 'service'},
}
ADMIN = {'x-auth-token': 'padm:p1', 'x-roles': 'admin,service'}
POLICY_FILE = """
"placement:resource_providers:list": "@"
"placement:traits:list": "role:member"
"placement:usages": "!"
"""
CONFIGS = {
    'new_defaults': '[oslo_policy]\nenforce_new_defaults = True\n'
    'enforce_scope = True\n',
    'legacy_defaults': '[oslo_policy]\nenforce_new_defaults = False\n'
    'enforce_scope = True\n',
    'scope_not_enforced': '[oslo_policy]\nenforce_new_defaults = True\n'
    'enforce_scope = False\n',
    'policy_file': '[oslo_policy]\nenforce_new_defaults = True\n'
    'policy_file = {policy}\n',
}


def _setup(n):
    """Provider RP with inventory, a consumer's allocation (as admin)."""
    o = {'headers': ADMIN}
    return [
        (
            'POST',
            '/resource_providers',
            {'name': 'rp-{RP}', 'uuid': '{RP}'},
            o,
        ),
        (
            'PUT',
            '/resource_providers/{RP}/inventories',
            {
                'resource_provider_generation': 0,
                'inventories': {'VCPU': {'total': 64}},
            },
            o,
        ),
        (
            'PUT',
            '/allocations/{C}',
            {
                'allocations': {'{RP}': {'resources': {'VCPU': 1}}},
                'project_id': 'p1',
                'user_id': 'u1',
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            },
            o,
        ),
    ]


def _every_route(persona):
    """Every route and method, as ``persona``; writes it may repeat."""
    o = {'headers': PERSONAS[persona]}
    rp = '/resource_providers/{RP}'
    mine = '{RP_%s}' % persona
    return [
        ('GET', '/resource_providers', None, o),
        (
            'POST',
            '/resource_providers',
            {'name': 'rp-' + mine, 'uuid': mine},
            o,
        ),
        ('GET', '/resource_providers/' + mine, None, o),
        ('PUT', '/resource_providers/' + mine, {'name': 'x-' + mine}, o),
        ('DELETE', '/resource_providers/' + mine, None, o),
        ('GET', rp, None, o),
        ('GET', rp + '/inventories', None, o),
        (
            'POST',
            rp + '/inventories',
            {
                'resource_class': 'DISK_GB',
                'total': 10,
                'resource_provider_generation': '@gen:RP',
            },
            o,
        ),
        ('GET', rp + '/inventories/DISK_GB', None, o),
        (
            'PUT',
            rp + '/inventories/DISK_GB',
            {'total': 20, 'resource_provider_generation': '@gen:RP'},
            o,
        ),
        ('DELETE', rp + '/inventories/DISK_GB', None, o),
        (
            'PUT',
            rp + '/inventories',
            {
                'resource_provider_generation': '@gen:RP',
                'inventories': {'VCPU': {'total': 64}},
            },
            o,
        ),
        ('DELETE', '/resource_providers/{EMPTY}/inventories', None, o),
        ('GET', rp + '/usages', None, o),
        ('GET', rp + '/aggregates', None, o),
        (
            'PUT',
            rp + '/aggregates',
            {
                'aggregates': ['{AGG}'],
                'resource_provider_generation': '@gen:RP',
            },
            o,
        ),
        ('GET', rp + '/traits', None, o),
        (
            'PUT',
            rp + '/traits',
            {
                'traits': ['HW_CPU_X86_AVX2'],
                'resource_provider_generation': '@gen:RP',
            },
            o,
        ),
        ('DELETE', rp + '/traits', None, o),
        ('GET', rp + '/allocations', None, o),
        ('GET', '/resource_classes', None, o),
        (
            'POST',
            '/resource_classes',
            {'name': 'CUSTOM_%s' % persona.upper()},
            o,
        ),
        ('GET', '/resource_classes/VCPU', None, o),
        ('PUT', '/resource_classes/CUSTOM_P_%s' % persona.upper(), None, o),
        ('DELETE', '/resource_classes/CUSTOM_%s' % persona.upper(), None, o),
        ('GET', '/traits', None, o),
        ('GET', '/traits/HW_CPU_X86_AVX2', None, o),
        ('PUT', '/traits/CUSTOM_%s' % persona.upper(), None, o),
        ('DELETE', '/traits/CUSTOM_%s' % persona.upper(), None, o),
        ('GET', '/allocations/{C}', None, o),
        (
            'PUT',
            '/allocations/{C_%s}' % persona,
            {
                'allocations': {'{RP}': {'resources': {'VCPU': 1}}},
                'project_id': 'p1',
                'user_id': 'u1',
                'consumer_generation': None,
                'consumer_type': 'INSTANCE',
            },
            o,
        ),
        (
            'POST',
            '/allocations',
            {
                '{C_%s}' % persona: {
                    'allocations': {'{RP}': {'resources': {'VCPU': 2}}},
                    'project_id': 'p1',
                    'user_id': 'u1',
                    'consumer_generation': 1,
                    'consumer_type': 'INSTANCE',
                }
            },
            o,
        ),
        ('DELETE', '/allocations/{C_%s}' % persona, None, o),
        ('GET', '/allocation_candidates?resources=VCPU:1', None, o),
        ('GET', '/usages?project_id=p1', None, o),
        ('GET', '/usages?project_id=p2', None, o),
        ('POST', '/reshaper', {'inventories': {}, 'allocations': {}}, o),
        # no authentication needed
        ('GET', '/', None, o),
    ]


def _names():
    names = {k: str(uuid.uuid4()) for k in ('RP', 'C', 'AGG', 'EMPTY')}
    for persona in PERSONAS:
        names['RP_' + persona] = str(uuid.uuid4())
        names['C_' + persona] = str(uuid.uuid4())
    return names


@pytest.mark.parametrize('config', sorted(CONFIGS))
def test_personas_agree(tmp_path, config):
    policy = os.path.join(str(tmp_path), 'policy.yaml')
    with open(policy, 'w') as f:
        f.write(POLICY_FILE)
    extra = CONFIGS[config].format(policy=policy)
    workdir = str(tmp_path)
    names = _names()
    steps = _setup(names) + [
        (
            'POST',
            '/resource_providers',
            {'name': 'rp-{EMPTY}', 'uuid': '{EMPTY}'},
            {'headers': ADMIN},
        )
    ]
    for persona in PERSONAS:
        steps += _every_route(persona)
    with (
        placement_peer.openstack_placement(workdir, extra) as peer_url,
        placement_peer.nimbus_placement(workdir, extra) as nimbus_url,
    ):
        runs = []
        for url in (peer_url, nimbus_url):
            client = placement_peer.Client(url)
            try:
                runs.append(compare.run(client, names, steps))
            finally:
                client.close()
    peer, nimbus = runs
    statuses = {e['status'] for e in peer}
    # the matrix exercises both answers (allowed and refused)
    assert 403 in statuses and statuses & {200, 201, 204}
    diffs = compare.differences(peer, nimbus)
    assert not diffs, '\n'.join(diffs)
