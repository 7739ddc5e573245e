"""Random small placement worlds and GET /allocation_candidates queries.

A *scenario* is plain data (seeded, reproducible): providers (nested trees
and sharing providers) with inventories, traits and aggregates, and a few
consumers' allocations. :func:`populate` writes one through the REST API of
any Placement-compatible server, returning every status code it got so two
servers can be checked to have agreed on every write. :func:`queries` draws
queries that use only what the given microversion offers.
"""

import random
import uuid

RCS = ('VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF', 'CUSTOM_PGPU')
TRAITS = ('CUSTOM_T1', 'CUSTOM_T2', 'CUSTOM_T3', 'HW_CPU_X86_AVX2')
SHARING = 'MISC_SHARES_VIA_AGGREGATE'
AGGS = tuple(str(uuid.UUID(int=0xA66000 + i)) for i in range(3))
MICROVERSIONS = (
    '1.10',
    '1.12',
    '1.17',
    '1.21',
    '1.24',
    '1.25',
    '1.28',
    '1.29',
    '1.31',
    '1.32',
    '1.33',
    '1.34',
    '1.35',
    '1.36',
    '1.38',
    '1.39',
)


def _uuid(seed, n):
    return str(uuid.UUID(int=(seed << 32) + n))


def _inventory(rng, small=False):
    total = rng.randint(2, 4 if small else 8)
    inv = {
        'total': total,
        'reserved': rng.choice((0, 0, 0, 1)),
        'allocation_ratio': rng.choice((1.0, 1.0, 1.0, 2.0, 1.5)),
    }
    if rng.random() < 0.2:
        inv['max_unit'] = rng.randint(1, total)
    if rng.random() < 0.1:
        inv['step_size'] = 2
    if rng.random() < 0.05:
        inv['min_unit'] = 2
        inv['max_unit'] = max(inv.get('max_unit', total), 2)
    return inv


def scenario(seed):
    """A reproducible world: ``{'providers': [...], 'consumers': [...]}``.

    Providers come parents first; each is ``{'uuid', 'name', 'parent',
    'inventories', 'traits', 'aggregates'}``.
    """
    rng = random.Random(seed)
    provs = []
    count = iter(range(1, 1000))

    def add(parent, rcs, traits=(), aggs=(), small=False):
        n = next(count)
        p = {
            'uuid': _uuid(seed, n),
            'name': 's%d-rp%d' % (seed, n),
            'parent': parent,
            'inventories': {rc: _inventory(rng, small) for rc in rcs},
            'traits': sorted(set(traits)),
            'aggregates': sorted(set(aggs)),
        }
        provs.append(p)
        return p['uuid']

    def some(seq, lo=0, hi=None):
        hi = len(seq) if hi is None else hi
        return rng.sample(list(seq), rng.randint(lo, min(hi, len(seq))))

    for _ in range(rng.randint(1, 4)):
        root_rcs = ['VCPU', 'MEMORY_MB'] if rng.random() < 0.8 else []
        if rng.random() < 0.6:
            root_rcs.append('DISK_GB')
        aggs = some(AGGS, 0, 2) if rng.random() < 0.6 else []
        root = add(None, root_rcs, some(TRAITS, 0, 2), aggs)
        for _ in range(rng.randint(0, 3)):
            kids = rng.choice(
                (
                    ('VCPU', 'MEMORY_MB'),
                    ('SRIOV_NET_VF',),
                    ('CUSTOM_PGPU',),
                    ('SRIOV_NET_VF',),
                    (),
                )
            )
            child = add(
                root,
                kids,
                some(TRAITS, 0, 2),
                some(AGGS, 0, 1) if rng.random() < 0.2 else [],
                small=True,
            )
            for _ in range(rng.choice((0, 0, 1, 2))):
                add(
                    child,
                    some(('SRIOV_NET_VF', 'CUSTOM_PGPU'), 1, 1),
                    some(TRAITS, 0, 1),
                    small=True,
                )
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        add(
            None,
            some(('DISK_GB', 'SRIOV_NET_VF'), 1, 2),
            [SHARING] + some(TRAITS, 0, 1),
            some(AGGS, 1, 1),
        )

    consumers = []
    with_inv = [p for p in provs if p['inventories']]
    for i in range(rng.randint(0, 3)):
        allocs = {}
        for p in rng.sample(with_inv, min(len(with_inv), rng.randint(1, 2))):
            rc = rng.choice(sorted(p['inventories']))
            allocs[p['uuid']] = {'resources': {rc: rng.randint(1, 2)}}
        if allocs:
            consumers.append(
                {'uuid': _uuid(seed, 500 + i), 'allocations': allocs}
            )
    # A sharing provider inside a tree now and then (own stream, so the
    # rest of the world does not depend on it).
    extra = random.Random(seed * 7919 + 1)
    roots = [
        p['uuid']
        for p in provs
        if p['parent'] is None and SHARING not in p['traits']
    ]
    if extra.random() < 0.3:
        rng = extra
        add(rng.choice(roots), ('DISK_GB',), [SHARING], some(AGGS, 1, 1))
    return {'seed': seed, 'providers': provs, 'consumers': consumers}


def populate(client, sc):
    """Write ``sc`` through REST; return the list of (what, status)."""
    log = []

    def do(what, method, path, mv, body=None):
        resp = client.call(method, path, mv, json=body)
        log.append((what, resp.status_code))
        return resp

    for rc in RCS:
        if rc.startswith('CUSTOM_'):
            do('rc', 'PUT', '/resource_classes/%s' % rc, '1.7')
    for t in TRAITS:
        if t.startswith('CUSTOM_'):
            do('trait', 'PUT', '/traits/%s' % t, '1.6')
    for p in sc['providers']:
        body = {'uuid': p['uuid'], 'name': p['name']}
        if p['parent']:
            body['parent_provider_uuid'] = p['parent']
        do('create', 'POST', '/resource_providers', '1.20', body)
        gen = 0
        if p['inventories']:
            r = do(
                'inv',
                'PUT',
                '/resource_providers/%s/inventories' % p['uuid'],
                '1.20',
                {
                    'resource_provider_generation': gen,
                    'inventories': p['inventories'],
                },
            )
            gen = r.json().get('resource_provider_generation', gen)
        if p['traits']:
            r = do(
                'traits',
                'PUT',
                '/resource_providers/%s/traits' % p['uuid'],
                '1.20',
                {'resource_provider_generation': gen, 'traits': p['traits']},
            )
            gen = r.json().get('resource_provider_generation', gen)
        if p['aggregates']:
            do(
                'aggs',
                'PUT',
                '/resource_providers/%s/aggregates' % p['uuid'],
                '1.20',
                {
                    'resource_provider_generation': gen,
                    'aggregates': p['aggregates'],
                },
            )
    for c in sc['consumers']:
        do(
            'alloc',
            'PUT',
            '/allocations/%s' % c['uuid'],
            '1.28',
            {
                'allocations': c['allocations'],
                'project_id': 'p',
                'user_id': 'u',
                'consumer_generation': None,
            },
        )
    return log


def depopulate(client, sc):
    """Remove the scenario's consumers and providers (leaves first)."""
    for c in sc['consumers']:
        client.call('DELETE', '/allocations/%s' % c['uuid'])
    for p in reversed(sc['providers']):
        resp = client.call('DELETE', '/resource_providers/%s' % p['uuid'])
        assert resp.status_code == 204, resp.text


def _mv(text):
    return tuple(int(x) for x in text.split('.'))


def _traits_value(rng, mv, may_forbid=True):
    """Values of one required<S> parameter (a list: repeats from 1.39)."""
    values = []
    for _ in range(rng.choice((1, 1, 2)) if mv >= (1, 39) else 1):
        names = rng.sample(TRAITS, rng.choice((1, 1, 2)))
        if mv >= (1, 39) and len(names) > 1 and rng.random() < 0.4:
            values.append('in:' + ','.join(names))
            continue
        if may_forbid and mv >= (1, 22) and rng.random() < 0.4:
            names[-1] = '!' + names[-1]
        values.append(','.join(names))
    return values


def _member_of_value(rng, mv):
    values = []
    for _ in range(rng.choice((1, 1, 2)) if mv >= (1, 24) else 1):
        r = rng.random()
        if mv >= (1, 32) and r < 0.3:
            if rng.random() < 0.3:
                values.append('!in:' + ','.join(rng.sample(AGGS, 2)))
            else:
                values.append('!' + rng.choice(AGGS))
        elif r < 0.6:
            values.append('in:' + ','.join(rng.sample(AGGS, 2)))
        else:
            values.append(rng.choice(AGGS))
    return values


def _resources(rng, rcs, lo, hi):
    chosen = rng.sample(rcs, min(len(rcs), rng.randint(lo, hi)))
    return ','.join('%s:%d' % (rc, rng.choice((1, 1, 1, 2))) for rc in chosen)


def query(rng, mv_text, sc):
    """One query allowed at ``mv_text``: a list of (key, value) pairs."""
    mv = _mv(mv_text)
    uuids = [p['uuid'] for p in sc['providers']]
    present = sorted({rc for p in sc['providers'] for rc in p['inventories']})
    rcs = present if present and rng.random() < 0.9 else list(RCS)
    pairs = []

    def group(suffix, resources):
        if resources:
            pairs.append(('resources' + suffix, resources))
        if mv >= (1, 17) and rng.random() < 0.2:
            pairs.extend(
                ('required' + suffix, v) for v in _traits_value(rng, mv)
            )
        if mv >= (1, 21) and rng.random() < 0.2:
            pairs.extend(
                ('member_of' + suffix, v) for v in _member_of_value(rng, mv)
            )
        if mv >= (1, 31) and rng.random() < 0.1:
            pairs.append(('in_tree' + suffix, rng.choice(uuids)))

    def targeted(suffix, p):
        """A group one given provider satisfies (more answers)."""
        rc = rng.choice(sorted(p['inventories']))
        pairs.append(('resources' + suffix, '%s:1' % rc))
        if mv >= (1, 17) and p['traits'] and rng.random() < 0.4:
            pairs.append(('required' + suffix, rng.choice(p['traits'])))
        aggs = p['aggregates'] or by_uuid[root_of(p)]['aggregates']
        if mv >= (1, 21) and aggs and rng.random() < 0.3:
            pairs.append(('member_of' + suffix, rng.choice(aggs)))

    by_uuid = {p['uuid']: p for p in sc['providers']}

    def root_of(p):
        while p['parent']:
            p = by_uuid[p['parent']]
        return p['uuid']

    n_gran = rng.choice((0, 1, 1, 2, 2, 3)) if mv >= (1, 25) else 0
    if n_gran == 0 or rng.random() < 0.6:
        group('', _resources(rng, rcs, 1, 3 if n_gran == 0 else 2))
    if mv >= (1, 33) and rng.random() < 0.5:
        suffixes = ['_NET', '_GPU', '_X'][:n_gran]
    else:
        suffixes = ['1', '2', '3'][:n_gran]
    with_inv = [p for p in sc['providers'] if p['inventories']]
    for s in suffixes:
        if with_inv and rng.random() < 0.5:
            targeted(s, rng.choice(with_inv))
        else:
            group(s, _resources(rng, rcs, 1, 2 if rng.random() < 0.2 else 1))
    policy = n_gran > 1 or (n_gran and rng.random() < 0.5)
    if mv >= (1, 36) and n_gran and rng.random() < 0.5:
        members = rng.sample(suffixes, min(len(suffixes), 2))
        if rng.random() < 0.5:
            # a resourceless group: where the others must meet
            parents = [
                by_uuid[p['parent']]
                for p in sc['providers']
                if p['parent'] and by_uuid[p['parent']]['traits']
            ]
            pairs.append(
                (
                    'required_ANC',
                    rng.choice(
                        rng.choice(parents)['traits'] if parents else TRAITS
                    ),
                )
            )
            members.append('_ANC')
            policy = True
        if len(members) > 1:
            pairs.append(('same_subtree', ','.join(members)))
    if policy:
        pairs.append(('group_policy', rng.choice(('none', 'isolate'))))
    if mv >= (1, 35) and rng.random() < 0.15:
        t1, t2 = rng.sample(TRAITS, 2)
        pairs.append(
            ('root_required', rng.choice((t1, '!' + t1, '%s,!%s' % (t1, t2))))
        )
    if mv >= (1, 16) and rng.random() < 0.1:
        pairs.append(('limit', str(rng.randint(1, 3))))
    return pairs


# Malformed or refused queries: (microversion, query string). Each is also
# sent at 1.39 when its syntax exists there, since error codes only exist
# from 1.23.
MALFORMED = (
    ('1.10', ''),
    ('1.10', 'resources='),
    ('1.10', 'resources=VCPU'),
    ('1.10', 'resources=VCPU:0'),
    ('1.10', 'resources=VCPU:-1'),
    ('1.10', 'resources=VCPU:x'),
    ('1.10', 'resources=NO_SUCH_RC:1'),
    ('1.10', 'resources=VCPU:1&resources=VCPU:2'),
    ('1.10', 'resources=VCPU:1&foo=bar'),
    ('1.15', 'resources=VCPU:1&limit=1'),
    ('1.16', 'resources=VCPU:1&limit=0'),
    ('1.16', 'resources=VCPU:1&limit=-1'),
    ('1.16', 'resources=VCPU:1&limit=x'),
    ('1.16', 'resources=VCPU:1&required=CUSTOM_T1'),
    ('1.17', 'resources=VCPU:1&required=CUSTOM_NO_SUCH'),
    ('1.17', 'resources=VCPU:1&required='),
    ('1.17', 'resources=VCPU:1&required=!CUSTOM_T1'),
    ('1.20', 'resources=VCPU:1&member_of=%s' % AGGS[0]),
    ('1.21', 'resources=VCPU:1&member_of=not-a-uuid'),
    ('1.21', 'resources=VCPU:1&member_of=%s,%s' % AGGS[:2]),
    ('1.21', 'resources=VCPU:1&member_of=%s&member_of=%s' % AGGS[:2]),
    ('1.31', 'resources=VCPU:1&member_of=!%s' % AGGS[0]),
    ('1.32', 'resources=VCPU:1&member_of=in:%s,!%s' % AGGS[:2]),
    ('1.22', 'resources=VCPU:1&required=CUSTOM_T1,!CUSTOM_T1'),
    ('1.24', 'resources1=VCPU:1'),
    ('1.25', 'resources1=VCPU:1&resources2=VCPU:1'),
    ('1.25', 'resources1=VCPU:1&group_policy=bogus'),
    ('1.25', 'resources=VCPU:1&required1=CUSTOM_T1'),
    ('1.25', 'resources=VCPU:1&member_of1=%s' % AGGS[0]),
    ('1.32', 'resources_A=VCPU:1'),
    ('1.33', 'resources_A!=VCPU:1'),
    ('1.30', 'resources=VCPU:1&in_tree=%s' % AGGS[0]),
    ('1.31', 'resources=VCPU:1&in_tree=not-a-uuid'),
    ('1.34', 'resources=VCPU:1&root_required=CUSTOM_T1'),
    ('1.35', 'resources=VCPU:1&root_required=in:CUSTOM_T1,CUSTOM_T2'),
    ('1.35', 'resources=VCPU:1&root_required=CUSTOM_T1,!CUSTOM_T1'),
    ('1.35', 'resources=VCPU:1&root_required=CUSTOM_NO_SUCH'),
    (
        '1.35',
        'resources=VCPU:1&root_required=CUSTOM_T1&root_required=CUSTOM_T2',
    ),
    ('1.35', 'resources=VCPU:1&required1=CUSTOM_T1'),
    ('1.35', 'resources1=VCPU:1&same_subtree=1'),
    ('1.36', 'resources1=VCPU:1&same_subtree=1,9&group_policy=none'),
    ('1.36', 'resources1=VCPU:1&same_subtree=,1&group_policy=none'),
    ('1.36', 'resources1=VCPU:1&required2=CUSTOM_T1&group_policy=none'),
    ('1.36', 'required=CUSTOM_T1&resources1=VCPU:1'),
    ('1.36', 'required1=CUSTOM_T1&same_subtree=1'),
    ('1.38', 'resources=VCPU:1&required=in:CUSTOM_T1,CUSTOM_T2'),
    ('1.38', 'resources=VCPU:1&required=CUSTOM_T1&required=CUSTOM_T2'),
    ('1.39', 'resources=VCPU:1&required=in:CUSTOM_T1,!CUSTOM_T2'),
    ('1.39', 'resources=VCPU:1&required=in:'),
    ('1.39', 'resources=VCPU:1&required=in:CUSTOM_NO_SUCH,CUSTOM_T1'),
    ('1.39', 'resources=VCPU:1&required=CUSTOM_T1&required=!CUSTOM_T1'),
    (
        '1.39',
        'resources=VCPU:1&member_of=%s&member_of=!%s' % (AGGS[0], AGGS[0]),
    ),
    ('1.9', 'resources=VCPU:1'),
    ('1.40', 'resources=VCPU:1'),
    ('1.x', 'resources=VCPU:1'),
)


def aggregate_world():
    """A fixed world for the aggregate rules (X, Y, Z are aggregates).

    * tree R1 (VCPU, DISK_GB; in X) with child C1 (CUSTOM_PGPU; none)
    * tree R2 (VCPU; in Y) with child C2 (CUSTOM_PGPU; in X)
    * tree R3 (VCPU; in X and Z)
    * tree R4 (VCPU; in W)
    * S1 shares DISK_GB via Y and W (serves R2, R4), S3 via Z (serves R3)
    """
    x, y, z = AGGS
    w = str(uuid.UUID(int=0xA66003))
    n = iter(range(1, 100))

    def rp(name, parent=None, inv=(), aggs=(), traits=()):
        return {
            'uuid': _uuid(0xD, next(n)),
            'name': 'agg-world-' + name,
            'parent': parent,
            'inventories': {rc: {'total': 8} for rc in inv},
            'traits': sorted(traits),
            'aggregates': sorted(aggs),
        }

    r1 = rp('R1', inv=('VCPU', 'DISK_GB'), aggs=(x,))
    c1 = rp('C1', r1['uuid'], inv=('CUSTOM_PGPU',))
    r2 = rp('R2', inv=('VCPU',), aggs=(y,))
    c2 = rp('C2', r2['uuid'], inv=('CUSTOM_PGPU',), aggs=(x,))
    r3 = rp('R3', inv=('VCPU',), aggs=(x, z))
    r4 = rp('R4', inv=('VCPU',), aggs=(w,))
    s1 = rp('S1', inv=('DISK_GB',), aggs=(y, w), traits=(SHARING,))
    s3 = rp('S3', inv=('DISK_GB',), aggs=(z,), traits=(SHARING,))
    provs = [r1, c1, r2, c2, r3, r4, s1, s3]
    names = {p['uuid']: p['name'].rsplit('-', 1)[1] for p in provs}
    return {'seed': 0xD, 'providers': provs, 'consumers': []}, names
