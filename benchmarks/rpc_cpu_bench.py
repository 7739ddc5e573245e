"""CPU one RPC call and one cast cost, on the caller's side and the server's.

The server runs in a child process (``--serve``), the caller here, on
RabbitMQ (``--url``, default the tests' broker, vhost ``/``), each with
Nimbus's own RPC plumbing (:mod:`nimbus.common.rpc`: its serializer,
context, clients and server). The message carries what a boot's messages
carry: a user's request context and a request spec of a server with a
flavor, an image and a hint (``--payload none`` sends a bare integer).
The endpoint does nothing with it, so the figures are the RPC path's own:
oslo.messaging, kombu, py-amqp and what Nimbus adds around them.

Prints CPU microseconds per message for each side (process CPU, less each
process's idle background measured first), for ``--calls`` calls one after
the other and ``--casts`` casts (the last waited for).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/rpc_cpu_bench.py \\
        [--calls 2000] [--casts 2000] [--payload spec|none] [--json FILE]
        [--profile DIR]   # py-spy --gil of both sides (raw) into DIR

A benchmark, not a test: the figures move with the machine's load.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
import warnings

warnings.filterwarnings('ignore', category=DeprecationWarning)

import psutil  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stacks  # noqa: E402  (benchmarks/stacks.py)

from nimbus.common import config  # noqa: E402
from nimbus.common import context  # noqa: E402
from nimbus.common import rpc  # noqa: E402
from nimbus.common.objects import request_spec as spec_obj  # noqa: E402

IDLE_SECONDS = 2.0


class Endpoint:
    def __init__(self):
        self.casts = 0

    @rpc.expose()
    def ping(self, ctxt, value=None):
        return 1

    @rpc.expose()
    def count(self, ctxt):
        return self.casts

    @rpc.expose(cast=True)
    def tick(self, ctxt, value=None):
        self.casts += 1


def payload(kind):
    if kind == 'none':
        return 1
    spec = spec_obj.RequestSpec(
        instance_uuids=[str(uuid.uuid4())],
        project_id=uuid.uuid4().hex,
        user_id=uuid.uuid4().hex,
        flavor=spec_obj.Flavor(
            name='m1.small',
            flavorid='2',
            vcpus=1,
            memory_mb=2048,
            root_gb=20,
            extra_specs={'hw:cpu_policy': 'shared'},
        ),
        image=spec_obj.ImageMeta(
            id=str(uuid.uuid4()),
            name='cirros',
            properties={'hw_architecture': 'x86_64', 'os_type': 'linux'},
        ),
        scheduler_hints={'group': [str(uuid.uuid4())]},
        request_id='req-' + str(uuid.uuid4()),
    )
    return spec.to_primitive()


def user_context():
    return context.RequestContext(
        user_id=uuid.uuid4().hex,
        project_id=uuid.uuid4().hex,
        roles=['member', 'reader'],
        overwrite=False,
    )


def serve(url, topic):
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, url)
    server = rpc.get_server(transport, topic, [Endpoint()], 'bench')
    server.start()
    print('ready', flush=True)
    for line in sys.stdin:
        print('ok', flush=True)
        if line.strip() == 'stop':
            break
    server.stop()
    server.wait()
    rpc.cleanup_transports()


def _cpu(process=None):
    times = (process or psutil.Process()).cpu_times()
    return times.user + times.system


def _record(processes, directory, tag):
    """py-spy on each of ``{name: pid}``, only the thread holding the GIL
    (CPU, not waits on the socket); for :func:`stacks.finish`."""
    recorders = []
    for name, pid in processes.items():
        path = os.path.join(directory, '%s-%s.txt' % (name, tag))
        argv = [stacks._py_spy(), 'record', '--pid', str(pid), '--rate']
        argv += ['250', '--nonblocking', '--gil', '--format', 'raw']
        process = subprocess.Popen(
            argv + ['--output', path],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        recorders.append((name, process, path))
    return recorders


class Child:
    def __init__(self, url, topic):
        argv = [sys.executable, __file__, '--serve', url, '--topic', topic]
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline().strip() == 'ready'
        self.ps = psutil.Process(self.process.pid)

    def tell(self, command):
        self.process.stdin.write(command + '\n')
        self.process.stdin.flush()
        self.process.stdout.readline()

    def cpu(self):
        return _cpu(self.ps)

    def stop(self):
        try:
            self.tell('stop')
        except (BrokenPipeError, OSError):
            pass
        self.process.wait(timeout=30)


def measure(url, calls, casts, kind, profile_dir):
    topic = 'rpc-cpu-bench-%s' % uuid.uuid4().hex[:8]
    child = Child(url, topic)
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, url)
    client = rpc.get_client(transport, topic, '1.0', conf=conf)
    ctxt = user_context()
    body = payload(kind)
    recorders = []
    try:
        for _ in range(50):
            client.call(ctxt, 'ping', value=body)
        # the idle background of each side
        c0, s0, t0 = _cpu(), child.cpu(), time.monotonic()
        time.sleep(IDLE_SECONDS)
        idle_c = (_cpu() - c0) / (time.monotonic() - t0)
        idle_s = (child.cpu() - s0) / (time.monotonic() - t0)
        if profile_dir:
            recorders = _record(
                {'client': os.getpid(), 'server': child.process.pid},
                profile_dir,
                kind,
            )
            time.sleep(1)
        c0, s0, t0 = _cpu(), child.cpu(), time.monotonic()
        for _ in range(calls):
            client.call(ctxt, 'ping', value=body)
        elapsed = time.monotonic() - t0
        call_c = (_cpu() - c0 - idle_c * elapsed) / calls
        call_s = (child.cpu() - s0 - idle_s * elapsed) / calls
        c0, s0, t0 = _cpu(), child.cpu(), time.monotonic()
        for _ in range(casts):
            client.cast(ctxt, 'tick', value=body)
        sent = time.monotonic()
        cast_c = _cpu() - c0
        while client.call(ctxt, 'count') < casts:
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
        cast_c = (cast_c - idle_c * (sent - t0)) / casts
        cast_s = (child.cpu() - s0 - idle_s * elapsed) / casts
        stacks.finish(recorders)
    finally:
        child.stop()
        rpc.cleanup_transports()
    return {
        'call_client_us': round(call_c * 1e6),
        'call_server_us': round(call_s * 1e6),
        'cast_client_us': round(cast_c * 1e6),
        'cast_server_us': round(cast_s * 1e6),
        'idle_client_cpu_per_s': round(idle_c, 4),
        'idle_server_cpu_per_s': round(idle_s, 4),
        'message_bytes': len(json.dumps(body)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--url', default='rabbit://guest:guest@127.0.0.1:5672/'
    )
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--casts', type=int, default=2000)
    parser.add_argument('--payload', choices=('spec', 'none'), default='spec')
    parser.add_argument('--json', metavar='FILE')
    parser.add_argument('--profile', metavar='DIR')
    parser.add_argument('--serve', metavar='URL', help=argparse.SUPPRESS)
    parser.add_argument('--topic', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.topic)
        return
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    load_before = os.getloadavg()[0]
    figures = measure(
        args.url, args.calls, args.casts, args.payload, args.profile
    )
    figures['load'] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print(
        'call: caller %(call_client_us)d us, server %(call_server_us)d us; '
        'cast: caller %(cast_client_us)d us, server %(cast_server_us)d us '
        '(payload %(message_bytes)d bytes; load %(load)s)' % figures
    )
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(figures, f, indent=2)
            f.write('\n')


if __name__ == '__main__':
    main()
