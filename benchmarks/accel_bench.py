"""Boots per second with one accelerator each, against the same boots
without accelerators, side by side in one run.

One all-in-one cloud (in-process bus, SQLite, ``--hosts`` simulated hosts
sharing one RPC server, as ``nimbus all-in-one`` runs them) with the
accelerator service and one agent per host (one fake FPGA and one fake GPU
each). Two flavors differ only by ``accel:device_profile``: a profile of
one group asking for one FPGA. Each round boots ``--servers`` servers
with the plain flavor, deletes them, then boots as many with the
accelerator flavor (create the ARQ, bind it on the chosen host's FPGA,
wait for the accelerator-request-bound event, attach), and deletes them.

For each path: servers ACTIVE per second from the first request to the
last ACTIVE (a poller lists ``/servers/detail`` every 0.1 s), p50/p99
seconds from request to ACTIVE, errors. Then the ratio plain/accelerator
(the target: at most 2).

Then the accelerator API's own speed, call by call over HTTP (``--calls``
of each, one at a time, p50/p99 ms and calls/s): a device profile create,
an ARQ create, a list of 100 ARQs, and a bind round trip (the service's
PATCH until ``?instance=&bind_state=resolved`` answers 200, the device
programmed by the host's agent).

``--compare-cyborg VENV`` times the same calls, bind round trip
included, against OpenStack Cyborg's API run from VENV
(``openstack-cyborg`` and ``pymysql`` installed there;
``benchmarks/cyborg_api_calls.py``: its database seeded with one FPGA
device, deployable and attach handle per host as its agent would report
them, Nova's external-events API a local stub) and prints both side by
side with Cyborg's p50 over Nimbus's (the goal: at least 5).

Capacity is checked before anything starts: the accelerator round needs
one FPGA per server, and the hosts have ``[fake_fpga] count`` x
``num_accelerators`` each; asking for more is refused (exit 2), and
checked again against placement's FPGA inventory once the agents have
reported. Any server not ACTIVE (ERROR, refused, unfinished) makes the
exit status 1.

    .venv/bin/python benchmarks/accel_bench.py [--hosts 100]
        [--servers 100] [--concurrency 10] [--rounds 1] [--calls 50]
        [--compare-cyborg VENV] [--json FILE]
"""

import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import time

import requests
import requests.adapters

# the sibling module, also when this file is loaded by path (tests)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accel_api_calls  # noqa: E402

from nimbus.allinone import cloud as cloud_mod
from nimbus.allinone.client import ComputeClient
from nimbus.common import config

PROFILE = accel_api_calls.PROFILE
SERVICE = accel_api_calls.SERVICE
PLACEMENT = {
    'X-Auth-Token': 'admin',
    'X-Roles': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}


class CapacityError(Exception):
    """More servers asked for than the hosts have FPGAs."""


def configured_fpgas(hosts):
    """FPGAs the all-in-one's agents will report: ``[fake_fpga] count``
    devices per host, ``num_accelerators`` each."""
    conf = config.build_conf([])
    return hosts * conf.fake_fpga.count * conf.fake_fpga.num_accelerators


def check_capacity(servers, fpgas, where):
    if servers > fpgas:
        raise CapacityError(
            '%d servers with one FPGA each need %d FPGAs; %s has %d'
            % (servers, servers, where, fpgas)
        )


def placement_fpgas(cloud):
    """``(total FPGA inventory, the FPGA providers)`` placement knows."""
    url = cloud.placement_url
    providers = requests.get(
        url + '/resource_providers',
        params={'resources': 'FPGA:1'},
        headers=PLACEMENT,
        timeout=30,
    ).json()['resource_providers']
    total = 0
    for provider in providers:
        inventory = requests.get(
            '%s/resource_providers/%s/inventories' % (url, provider['uuid']),
            headers=PLACEMENT,
            timeout=30,
        ).json()['inventories']
        total += inventory.get('FPGA', {}).get('total', 0)
    return total, [p['uuid'] for p in providers]


def _percentile(values, fraction):
    values = sorted(values)
    if not values:
        return None
    return values[min(len(values) - 1, int(fraction * len(values)))]


def _wait(predicate, timeout, what, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise RuntimeError('timed out waiting for %s' % what)


def boot_phase(api, flavor, image, count, concurrency, prefix, timeout):
    """Boot ``count`` servers; the phase's figures."""
    sent = {}
    errors = []
    began = time.monotonic()

    def boot(index):
        at = time.monotonic()
        try:
            body = api.create_server(
                '%s-%05d' % (prefix, index), flavor['id'], image['id']
            )
            sent[body['server']['id']] = at
        except Exception as exc:
            errors.append(str(exc)[:200])

    done = {}
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        futures = [pool.submit(boot, i) for i in range(count)]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _poll(api, prefix, sent, done)
            if all(f.done() for f in futures) and set(sent) <= set(done):
                break
            time.sleep(0.1)
    active = {u: t for u, (s, t) in done.items() if s == 'ACTIVE'}
    latencies = [t - sent[u] for u, t in active.items()]
    last = max(active.values(), default=began)
    return {
        'servers': count,
        'active': len(active),
        'error': sum(1 for s, _t in done.values() if s == 'ERROR'),
        'request_errors': len(errors),
        'unfinished': len(set(sent) - set(done)),
        'seconds': round(last - began, 2),
        'boots_per_s': round(len(active) / max(last - began, 1e-9), 2),
        'p50_s': round(_percentile(latencies, 0.5) or 0, 2),
        'p99_s': round(_percentile(latencies, 0.99) or 0, 2),
        'uuids': sorted(sent),
    }


def _poll(api, prefix, sent, done):
    now = time.monotonic()
    for server in api.get('/servers/detail', params={'limit': 100000})[
        'servers'
    ]:
        if (
            server['name'].startswith(prefix + '-')
            and server['status'] in ('ACTIVE', 'ERROR')
            and server['id'] not in done
        ):
            done[server['id']] = (server['status'], now)


def delete_all(api, accel_url, uuids, timeout):
    """Delete the servers and wait until they and their ARQs are gone."""
    for uuid in uuids:
        api.delete('/servers/%s' % uuid)
    wanted = set(uuids)

    def gone():
        listed = api.get('/servers', params={'limit': 100000})['servers']
        if wanted & {s['id'] for s in listed}:
            return False
        arqs = requests.get(
            accel_url + '/v2/accelerator_requests', headers=SERVICE, timeout=30
        ).json()['arqs']
        return not wanted & {a['instance_uuid'] for a in arqs}

    _wait(gone, timeout, 'the deletes to finish', interval=0.2)


def prepare(cloud, concurrency):
    api = ComputeClient(cloud.api_url)
    # The boot threads and the poller share the session.
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=concurrency + 2)
    api.session.mount('http://', adapter)
    _wait(
        lambda: (
            len(api.get('/os-hypervisors')['hypervisors']) >= cloud.num_hosts
        ),
        300,
        'every host to be mapped',
        interval=0.5,
    )
    response = requests.post(
        cloud.accelerator_url + '/v2/device_profiles',
        headers=SERVICE,
        json=[{'name': PROFILE, 'groups': [{'resources:FPGA': '1'}]}],
        timeout=30,
    )
    response.raise_for_status()
    plain = api.create_flavor('bench-plain', 1, 256, 1)
    accel = api.create_flavor(
        'bench-accel', 1, 256, 1, {'accel:device_profile': PROFILE}
    )
    image = api.create_image('bench')
    return api, plain, accel, image


def run(args, state_dir):
    check_capacity(
        args.servers, configured_fpgas(args.hosts), 'the configuration'
    )
    cloud = cloud_mod.Cloud(
        state_dir, hosts=args.hosts, shared_hosts=True, accelerators=True
    ).start()
    try:
        api, plain, accel, image = prepare(cloud, args.concurrency)
        fpgas, rp_uuids = _wait(
            lambda: (
                placement_fpgas(cloud)
                if placement_fpgas(cloud)[0] >= configured_fpgas(args.hosts)
                else None
            ),
            120,
            'the agents to report their FPGAs',
            interval=0.5,
        )
        check_capacity(args.servers, fpgas, 'placement')
        rounds = []
        for number in range(args.rounds):
            result = {}
            for name, flavor in (('plain', plain), ('accelerator', accel)):
                phase = boot_phase(
                    api,
                    flavor,
                    image,
                    args.servers,
                    args.concurrency,
                    '%s%d' % (name[:5], number),
                    args.timeout,
                )
                delete_all(api, cloud.accelerator_url, phase.pop('uuids'), 300)
                result[name] = phase
            rounds.append(result)
        calls = (
            accel_api_calls.api_calls(
                cloud.accelerator_url, args.calls, rp_uuids
            )
            if args.calls
            else {}
        )
        return rounds, calls
    finally:
        cloud.stop()


def failures(rounds):
    """Servers of any phase that did not go ACTIVE."""
    return sum(
        phase['servers'] - phase['active']
        for r in rounds
        for phase in r.values()
    )


def summary(rounds):
    """Both paths over every round, and the ratio of their rates."""
    out = {}
    for name in ('plain', 'accelerator'):
        active = sum(r[name]['active'] for r in rounds)
        seconds = sum(r[name]['seconds'] for r in rounds)
        out[name] = {
            'active': active,
            'error': sum(r[name]['error'] for r in rounds),
            'boots_per_s': round(active / max(seconds, 1e-9), 2),
        }
    accel_rate = out['accelerator']['boots_per_s']
    out['ratio'] = (
        round(out['plain']['boots_per_s'] / accel_rate, 2)
        if accel_rate
        else None
    )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=100)
    parser.add_argument('--servers', type=int, default=100)
    parser.add_argument('--concurrency', type=int, default=10)
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--timeout', type=float, default=600)
    parser.add_argument(
        '--calls',
        type=int,
        default=50,
        help='calls of each accelerator API call timed (0: none)',
    )
    parser.add_argument(
        '--compare-cyborg',
        metavar='VENV',
        help='also time the calls against Cyborg run from this venv',
    )
    parser.add_argument('--json', help='write the results to this file')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='accel-bench-') as tmp:
        rounds, calls = run(args, os.path.join(tmp, 'state'))
    result = {
        'hosts': args.hosts,
        'servers': args.servers,
        'concurrency': args.concurrency,
        'rounds': rounds,
        'summary': summary(rounds),
        'api_calls': calls,
        'failed_servers': failures(rounds),
    }
    if args.compare_cyborg and calls:
        cyborg = accel_api_calls.cyborg_calls(args.compare_cyborg, args.calls)
        result['cyborg_api_calls'] = cyborg
        result['side_by_side'] = accel_api_calls.side_by_side(calls, cyborg)
    print(
        '%-12s %8s %6s %6s %10s %7s %7s'
        % ('path', 'servers', 'active', 'error', 'boots/s', 'p50 s', 'p99 s')
    )
    for _number, r in enumerate(rounds):
        for name in ('plain', 'accelerator'):
            p = r[name]
            print(
                '%-12s %8d %6d %6d %10.2f %7.2f %7.2f'
                % (
                    name,
                    p['servers'],
                    p['active'],
                    p['error'],
                    p['boots_per_s'],
                    p['p50_s'],
                    p['p99_s'],
                )
            )
    s = result['summary']
    print(
        'plain %.2f boots/s, accelerator %.2f boots/s: ratio %s '
        '(target <= 2)'
        % (
            s['plain']['boots_per_s'],
            s['accelerator']['boots_per_s'],
            s['ratio'],
        )
    )
    if calls:
        print(
            '%-16s %6s %9s %9s %9s'
            % ('API call', 'calls', 'p50 ms', 'p99 ms', 'calls/s')
        )
        for name, c in calls.items():
            print(
                '%-16s %6d %9.2f %9.2f %9.1f'
                % (
                    name,
                    c['calls'],
                    c['p50_ms'],
                    c['p99_ms'],
                    c['calls_per_s'],
                )
            )
    if result.get('side_by_side'):
        print(
            '%-16s %12s %12s %8s  (Cyborg %s)'
            % (
                'API call',
                'Nimbus p50',
                'Cyborg p50',
                'times',
                result['cyborg_api_calls'].get('cyborg'),
            )
        )
        for name, row in result['side_by_side'].items():
            print(
                '%-16s %10.2fms %10.2fms %7.1fx'
                % (
                    name,
                    row['nimbus_p50_ms'],
                    row['cyborg_p50_ms'],
                    row['times'],
                )
            )
    if result['failed_servers']:
        print(
            'FAILED: %d server(s) did not go ACTIVE'
            % result['failed_servers'],
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == '__main__':
    try:
        outcome = main()
    except CapacityError as exc:
        print('accel_bench: %s' % exc, file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if outcome['failed_servers'] else 0)
