"""RPC round trip and cast throughput of the transports Nimbus can run on.

Measures, side by side in one run: ``inproc://`` (Nimbus's in-process
driver), oslo.messaging's ``fake://`` and ``kombu+memory:////`` (the rabbit
driver on kombu's in-memory transport), and ``rabbit://`` when a broker
answers (``--rabbit-url``). Prints median/p95 call latency, calls/s and
casts/s end to end.

    python benchmarks/rpc_bench.py [--calls 2000] [--casts 5000]
        [--rabbit-url URL] [--skip-fake] [--json FILE]

``--json FILE`` writes ``{"run": {...}, "transports": {name: {"url",
"calls", "casts", "call_median_ms", "call_p95_ms", "calls_per_s",
"casts_per_s"}}}``; ``run`` records the conditions (date, Python and
oslo.messaging versions, CPUs, load averages before and after).
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import threading
import time
import warnings

warnings.filterwarnings('ignore', category=DeprecationWarning)

from nimbus.common import config  # noqa: E402
from nimbus.common import context  # noqa: E402
from nimbus.common import rpc  # noqa: E402


class Endpoint:
    def __init__(self):
        self.casts = 0
        self.done = threading.Event()
        self.expect = None

    @rpc.expose()
    def ping(self, ctxt, value):
        return value

    @rpc.expose(cast=True)
    def tick(self, ctxt, n):
        self.casts += 1
        if self.casts == self.expect:
            self.done.set()


def measure(url, calls, casts, topic):
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, url)
    endpoint = Endpoint()
    server = rpc.get_server(transport, topic, [endpoint], 'bench')
    server.start()
    client = rpc.get_client(transport, topic, '1.0', conf=conf)
    ctxt = context.get_admin_context()
    try:
        for _ in range(min(50, calls)):
            client.call(ctxt, 'ping', value=1)
        samples = []
        start = time.perf_counter()
        for i in range(calls):
            t0 = time.perf_counter()
            client.call(ctxt, 'ping', value=i)
            samples.append((time.perf_counter() - t0) * 1000)
        elapsed = time.perf_counter() - start
        endpoint.expect = casts
        t0 = time.perf_counter()
        for i in range(casts):
            client.cast(ctxt, 'tick', n=i)
        endpoint.done.wait(120)
        cast_elapsed = time.perf_counter() - t0
        samples.sort()
        return {
            'call_median_ms': round(statistics.median(samples), 3),
            'call_p95_ms': round(samples[int(len(samples) * 0.95) - 1], 3),
            'calls_per_s': round(calls / elapsed),
            'casts_per_s': round(casts / cast_elapsed),
        }
    finally:
        server.stop()
        server.wait()


def _load():
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover - not on this platform
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--casts', type=int, default=5000)
    parser.add_argument(
        '--rabbit-url',
        default=None,
        help='also measure rabbit:// on this broker',
    )
    parser.add_argument('--skip-fake', action='store_true')
    parser.add_argument(
        '--json',
        metavar='FILE',
        help='write the figures and run conditions here',
    )
    args = parser.parse_args()
    urls = [
        ('inproc', 'inproc:///bench', args.calls),
        ('kombu+memory', 'kombu+memory:////', args.calls),
    ]
    if not args.skip_fake:
        urls.append(('fake', 'fake://', min(args.calls, 40)))
    if args.rabbit_url:
        urls.append(('rabbit', args.rabbit_url, args.calls))
    run = {
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'
        ),
        'python': platform.python_version(),
        'oslo.messaging': importlib.metadata.version('oslo.messaging'),
        'cpus': os.cpu_count(),
        'load_before': _load(),
    }
    results = {}
    try:
        for name, url, calls in urls:
            casts = args.casts if name != 'fake' else 200
            figures = measure(url, calls, casts, 'bench-%s' % name)
            results[name] = dict(
                {'url': rpc.mask_url(url), 'calls': calls, 'casts': casts},
                **figures,
            )
            print(
                '%-13s call median %7.3f ms  p95 %7.3f ms  %6d calls/s  '
                '%6d casts/s'
                % (
                    name,
                    figures['call_median_ms'],
                    figures['call_p95_ms'],
                    figures['calls_per_s'],
                    figures['casts_per_s'],
                )
            )
    finally:
        rpc.cleanup_transports()
    run['load_after'] = _load()
    base = results['inproc']['call_median_ms']
    for name, figures in results.items():
        if name != 'inproc':
            print(
                'inproc call median is %.1fx faster than %s'
                % (figures['call_median_ms'] / base, name)
            )
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'run': run, 'transports': results}, f, indent=2)
            f.write('\n')
        print('figures written to %s' % args.json)


if __name__ == '__main__':
    main()
