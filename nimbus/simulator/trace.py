"""Arrival traces: reading, writing and generating them.

A trace is JSON lines, one arrival each, in time order::

    {"t": 12.5, "flavor": "m1.small", "lifetime": 300.0,
     "group": "web", "policy": "anti-affinity"}

``t`` and ``lifetime`` are simulated seconds (``lifetime`` null: forever);
``group`` and ``policy`` (``affinity`` or ``anti-affinity``) are optional:
arrivals naming the same group share one server group.
"""

import json
import random

FLAVORS = {
    'm1.tiny': (1, 512, 1),
    'm1.small': (1, 2048, 20),
    'm1.medium': (2, 4096, 40),
    'm1.large': (4, 8192, 80),
    'm1.xlarge': (8, 16384, 160),
}

DEFAULT_SPEC = (
    'arrivals=1000,rate=2,lifetime=600,'
    'flavors=m1.small:4+m1.medium:2+m1.large:1,groups=0.1'
)


def read(path):
    arrivals = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            try:
                item = json.loads(line)
                float(item['t'])
                str(item['flavor'])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(
                    '%s:%d: not an arrival: %s' % (path, number, exc)
                )
            arrivals.append(item)
    arrivals.sort(key=lambda a: float(a['t']))
    return arrivals


def write(path, arrivals):
    with open(path, 'w') as f:
        for item in arrivals:
            f.write(json.dumps(item, sort_keys=True) + '\n')


def parse_spec(text):
    """``arrivals=N,rate=R,lifetime=L,flavors=a:w+b:w,groups=P``: N
    arrivals, Poisson at R per second, exponential lifetimes of mean L
    (0: forever), flavors by weight, a fraction P in anti-affinity groups
    of 3."""
    spec = dict(item.split('=', 1) for item in DEFAULT_SPEC.split(','))
    for item in (text or '').split(','):
        if not item.strip():
            continue
        key, sep, value = item.partition('=')
        if not sep or key.strip() not in spec:
            raise ValueError(
                'bad --generate item %r (keys: %s)'
                % (item, ', '.join(sorted(spec)))
            )
        spec[key.strip()] = value.strip()
    flavors = []
    for part in spec['flavors'].split('+'):
        name, _, weight = part.partition(':')
        flavors.append((name, float(weight or 1)))
    return {
        'arrivals': int(spec['arrivals']),
        'rate': float(spec['rate']),
        'lifetime': float(spec['lifetime']),
        'flavors': flavors,
        'groups': float(spec['groups']),
    }


def generate(text, seed=0):
    spec = parse_spec(text)
    rng = random.Random(seed)
    names = [n for n, _ in spec['flavors']]
    weights = [w for _, w in spec['flavors']]
    t, out, group_n, open_group = 0.0, [], 0, None
    for _ in range(spec['arrivals']):
        t += rng.expovariate(spec['rate']) if spec['rate'] > 0 else 0.0
        life = (
            rng.expovariate(1.0 / spec['lifetime'])
            if spec['lifetime'] > 0
            else None
        )
        item = {
            't': round(t, 3),
            'flavor': rng.choices(names, weights)[0],
            'lifetime': None if life is None else round(life, 3),
        }
        if open_group is not None and open_group[1] < 3:
            item['group'], item['policy'] = open_group[0], 'anti-affinity'
            open_group[1] += 1
        elif rng.random() < spec['groups']:
            group_n += 1
            open_group = ['group-%d' % group_n, 1]
            item['group'], item['policy'] = open_group[0], 'anti-affinity'
        else:
            open_group = None
        out.append(item)
    return out
