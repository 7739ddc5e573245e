"""Arrival traces: reading, writing and generating them.

A trace is JSON lines, one arrival each, in time order::

    {"t": 12.5, "flavor": "m1.small", "lifetime": 300.0,
     "group": "web", "policy": "anti-affinity"}

``t`` and ``lifetime`` are simulated seconds (``lifetime`` null: forever);
``group`` and ``policy`` (``affinity`` or ``anti-affinity``) are optional:
arrivals naming the same group share one server group.

Accelerators (optional): ``"accelerators": {"FPGA": 1, "PGPU": 2}`` asks
for that many devices of each class, one device-profile group per device
(each device is a provider of its own); ``"device_profile": "NAME"`` names
a profile whose groups are in the accelerator service's device-profile
format (``[{"resources:FPGA": "1", "trait:CUSTOM_FPGA_SIM": "required"}]``):
the built-in ``fpga`` and ``gpu`` (one FPGA, one PGPU) or one from
``--profiles FILE`` (a JSON object, name -> groups); ``"device_groups":
[...]`` gives such groups inline (what the recorder writes).
"""

import json
import random

from nimbus.common.clients import accelerator

FLAVORS = {
    'm1.tiny': (1, 512, 1),
    'm1.small': (1, 2048, 20),
    'm1.medium': (2, 4096, 40),
    'm1.large': (4, 8192, 80),
    'm1.xlarge': (8, 16384, 160),
}

DEFAULT_SPEC = (
    'arrivals=1000,rate=2,lifetime=600,'
    'flavors=m1.small:4+m1.medium:2+m1.large:1,groups=0.1,'
    'accelerators=,accelerated=0'
)

PROFILES = {
    'fpga': [{'resources:FPGA': '1'}],
    'gpu': [{'resources:PGPU': '1'}],
}


def profiles(source=None):
    """The built-in device profiles plus ``source`` (a path to a JSON
    object name -> groups, or such a dict)."""
    out = dict(PROFILES)
    if source is None:
        return out
    if isinstance(source, str):
        try:
            with open(source) as f:
                source = json.load(f)
        except ValueError as exc:
            raise ValueError('%s: not JSON: %s' % (source, exc)) from exc
    if not isinstance(source, dict):
        raise ValueError('device profiles: a JSON object name -> groups')
    for name, groups in source.items():
        if not isinstance(groups, list):
            raise ValueError('device profile %r: a list of groups' % name)
        try:
            accelerator.request_groups(groups)
        except accelerator.DeviceProfileError as exc:
            raise ValueError('device profile %r: %s' % (name, exc)) from exc
        out[name] = groups
    return out


def _accelerator_groups(item, known):
    groups = []
    wanted = item.get('accelerators') or {}
    if not isinstance(wanted, dict):
        raise ValueError('accelerators: an object class -> count')
    for rc, count in sorted(wanted.items()):
        if isinstance(count, bool) or not isinstance(count, int):
            raise ValueError('accelerators: %s count is not an integer' % rc)
        groups.extend({'resources:%s' % rc: '1'} for _ in range(count))
    inline = item.get('device_groups') or []
    if not isinstance(inline, list):
        raise ValueError('device_groups: a list of device-profile groups')
    groups.extend(inline)
    name = item.get('device_profile')
    if name is not None:
        if name not in known:
            raise ValueError(
                'unknown device profile %r (known: %s)'
                % (name, ', '.join(sorted(known)))
            )
        groups.extend(known[name])
    return groups


def request_groups(item, known=None):
    """The RequestSpec ``requested_resources`` of an arrival (what the
    compute API puts there from the flavor's device profile)."""
    groups = _accelerator_groups(item, PROFILES if known is None else known)
    if not groups:
        return []
    try:
        return accelerator.request_groups(groups)
    except accelerator.DeviceProfileError as exc:
        raise ValueError(str(exc)) from exc


def check(arrivals, known=None):
    """Raise ValueError naming the first arrival that cannot be replayed."""
    known = PROFILES if known is None else known
    for n, item in enumerate(arrivals, 1):
        if item['flavor'] not in FLAVORS:
            raise ValueError(
                'arrival %d: unknown flavor %r (known: %s)'
                % (n, item['flavor'], ', '.join(sorted(FLAVORS)))
            )
        try:
            request_groups(item, known)
        except ValueError as exc:
            raise ValueError('arrival %d: %s' % (n, exc)) from exc


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
                ) from exc
            arrivals.append(item)
    arrivals.sort(key=lambda a: float(a['t']))
    return arrivals


def write(path, arrivals):
    with open(path, 'w') as f:
        for item in arrivals:
            f.write(json.dumps(item, sort_keys=True) + '\n')


def parse_spec(text):
    """``arrivals=N,rate=R,lifetime=L,flavors=a:w+b:w,groups=P,
    accelerators=FPGA:1+PGPU:1,accelerated=Q``: N arrivals, Poisson at R
    per second, exponential lifetimes of mean L (0: forever), flavors by
    weight, a fraction P in anti-affinity groups of 3, a fraction Q asking
    for the accelerators."""
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
    wanted = {}
    for part in spec['accelerators'].split('+'):
        if part:
            rc, _, count = part.partition(':')
            wanted[rc.strip().upper()] = int(count or 1)
    return {
        'accelerators': wanted,
        'accelerated': float(spec['accelerated']),
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
        if spec['accelerators'] and rng.random() < spec['accelerated']:
            item['accelerators'] = dict(spec['accelerators'])
        out.append(item)
    return out
