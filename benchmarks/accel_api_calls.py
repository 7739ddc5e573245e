"""The accelerator API's speed, call by call, for ``accel_bench.py``:
a device profile create, an ARQ create, a list of 100 ARQs and a bind
round trip (the service's PATCH until ``?instance=&bind_state=resolved``
answers 200), each ``calls`` times one after another, over HTTP with the
service's noauth2 headers; and the same calls against Cyborg
(:func:`cyborg_calls`, ``cyborg_api_calls.py`` in a Cyborg venv) side by
side (:func:`side_by_side`)."""

import json
import os
import subprocess
import time
import uuid as uuid_mod

import requests

PROFILE = 'bench-one-fpga'
SERVICE = {'X-Auth-Token': 'nimbus:service', 'X-Roles': 'admin,service'}


def _percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))]


def _timed(calls, fn):
    """Run ``fn(i)`` ``calls`` times, one after another; p50/p99 ms and
    calls per second."""
    took = []
    for index in range(calls):
        began = time.perf_counter()
        fn(index)
        took.append(time.perf_counter() - began)
    return {
        'calls': calls,
        'p50_ms': round(_percentile(took, 0.5) * 1000, 2),
        'p99_ms': round(_percentile(took, 0.99) * 1000, 2),
        'calls_per_s': round(calls / max(sum(took), 1e-9), 1),
    }


def _ok(response, status):
    if response.status_code != status:
        raise RuntimeError(
            '%s %s: %d %s'
            % (
                response.request.method,
                response.request.url,
                response.status_code,
                response.text[:200],
            )
        )
    return response


def api_calls(accelerator_url, calls, rp_uuids):
    """Per-call figures of the accelerator API at ``accelerator_url``
    (see the module doc); ``rp_uuids``: FPGA providers to bind to."""
    url = accelerator_url + '/v2'
    session = requests.Session()
    session.headers.update(SERVICE)
    figures = {}
    run_id = uuid_mod.uuid4().hex[:8]

    figures['profile_create'] = _timed(
        calls,
        lambda i: _ok(
            session.post(
                url + '/device_profiles',
                json=[
                    {
                        'name': 'call-%s-%d' % (run_id, i),
                        'groups': [{'resources:FPGA': '1'}],
                    }
                ],
                timeout=30,
            ),
            201,
        ),
    )
    names = ','.join('call-%s-%d' % (run_id, i) for i in range(calls))
    _ok(session.delete(url + '/device_profiles', params={'value': names}), 204)

    made = []

    def create(_i):
        response = _ok(
            session.post(
                url + '/accelerator_requests',
                json={'device_profile_name': PROFILE},
                timeout=30,
            ),
            201,
        )
        made.extend(a['uuid'] for a in response.json()['arqs'])

    figures['arq_create'] = _timed(calls, create)
    while len(made) < 100:
        create(None)

    def list_arqs(_i):
        arqs = _ok(
            session.get(url + '/accelerator_requests', timeout=30), 200
        ).json()['arqs']
        if len(arqs) < 100:
            raise RuntimeError('listed %d ARQs, not 100' % len(arqs))

    figures['arq_list_100'] = _timed(calls, list_arqs)

    deployables = _ok(session.get(url + '/deployables'), 200).json()[
        'deployables'
    ]
    hostnames = {
        d['hostname']
        for d in _ok(session.get(url + '/devices'), 200).json()['devices']
    }
    # the fake driver names a deployable <host>_<driver>_<n>
    host_of = {
        d['rp_uuid']: h
        for d in deployables
        for h in hostnames
        if d['name'].startswith(h + '_')
    }

    def bind(index):
        """PATCH until resolved; the instance, to free it afterwards."""
        arq, instance = made[index], str(uuid_mod.uuid4())
        rp_uuid = rp_uuids[index % len(rp_uuids)]
        ops = [
            ('hostname', host_of[rp_uuid]),
            ('device_rp_uuid', rp_uuid),
            ('instance_uuid', instance),
        ]
        _ok(
            session.patch(
                url + '/accelerator_requests',
                json={
                    arq: [
                        {'path': '/' + f, 'op': 'add', 'value': v}
                        for f, v in ops
                    ]
                },
                timeout=30,
            ),
            202,
        )
        params = {'instance': instance, 'bind_state': 'resolved'}
        deadline = time.monotonic() + 60
        while True:
            response = session.get(
                url + '/accelerator_requests', params=params, timeout=30
            )
            if response.status_code == 200:
                [bound] = response.json()['arqs']
                if bound['state'] != 'Bound':
                    raise RuntimeError('bind of %s: %s' % (arq, bound))
                return instance
            _ok(response, 423)
            if time.monotonic() > deadline:
                raise RuntimeError('bind of %s never resolved' % arq)
            time.sleep(0.002)

    took = []
    for index in range(min(calls, len(made))):
        began = time.perf_counter()
        instance = bind(index)
        took.append(time.perf_counter() - began)
        # free the device for the next bind (not timed)
        _ok(
            session.delete(
                url + '/accelerator_requests',
                params={'instance': instance},
                timeout=30,
            ),
            204,
        )
    figures['bind_round_trip'] = {
        'calls': len(took),
        'p50_ms': round(_percentile(took, 0.5) * 1000, 2),
        'p99_ms': round(_percentile(took, 0.99) * 1000, 2),
        'calls_per_s': round(len(took) / max(sum(took), 1e-9), 1),
    }
    left = made[len(took) :]
    for start in range(0, len(left), 50):
        _ok(
            session.delete(
                url + '/accelerator_requests',
                params={'arqs': ','.join(left[start : start + 50])},
                timeout=30,
            ),
            204,
        )
    return figures


def cyborg_calls(venv, calls):
    """The per-call figures of Cyborg's API (benchmarks/
    cyborg_api_calls.py run with VENV's Python)."""
    script = os.path.join(os.path.dirname(__file__), 'cyborg_api_calls.py')
    result = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), script, '--calls', str(calls)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        raise RuntimeError(
            'Cyborg side failed: %s' % result.stderr.strip()[-2000:]
        )
    return json.loads(result.stdout.strip().splitlines()[-1])


def side_by_side(nimbus, cyborg):
    """``{call: {nimbus_p50_ms, cyborg_p50_ms, times}}`` for the calls
    both measured."""
    out = {}
    for name, figures in nimbus.items():
        theirs = cyborg.get(name)
        if not isinstance(theirs, dict):
            continue
        out[name] = {
            'nimbus_p50_ms': figures['p50_ms'],
            'cyborg_p50_ms': theirs['p50_ms'],
            'times': round(theirs['p50_ms'] / max(figures['p50_ms'], 1e-9), 1),
        }
    return out
