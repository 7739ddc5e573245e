"""Server CPU per populate request of Nimbus's placement, in process.

Sends ``placement_bench.populate_one``'s requests (the bench's populate:
provider create, inventories, traits, aggregates, PGPU children) straight
into the placement WSGI app built as ``nimbus-placement-api`` builds it
(noauth2), one thread, and prints the process's CPU per request (the
database server's own CPU is not in it). ``--profile N`` prints cProfile's
top N entries by own time and by cumulative time.

    placement_populate_profile.py --providers 500 [--db-url URL] \
        [--profile 30]

``--db-url`` names a MariaDB/MySQL or PostgreSQL database the tool creates
(it must not exist) and drops afterwards; the default is a fresh SQLite
file.
"""

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time

import orjson

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import placement_bench as pb  # noqa: E402


class _Resp:
    def __init__(self, status, body):
        self.status_code = status
        self.body = body


class AppClient:
    """:class:`placement_bench.Client`'s ``call`` into a WSGI app."""

    def __init__(self, app):
        self.app = app
        self.requests = 0
        self.retries = 0
        self._lock = threading.Lock()
        self.headers = {
            'HTTP_' + k.upper().replace('-', '_'): v
            for k, v in pb.HEADERS.items()
            if k != 'content-type'
        }

    def call(self, method, path, body=None, ok=(200, 201, 204)):
        data = b'' if body is None else orjson.dumps(body)
        path, _, query = path.partition('?')
        environ = {
            'REQUEST_METHOD': method,
            'SCRIPT_NAME': '',
            'PATH_INFO': path,
            'QUERY_STRING': query,
            'SERVER_NAME': '127.0.0.1',
            'SERVER_PORT': '8778',
            'SERVER_PROTOCOL': 'HTTP/1.1',
            'REMOTE_ADDR': '127.0.0.1',
            'wsgi.version': (1, 0),
            'wsgi.url_scheme': 'http',
            'wsgi.input': io.BytesIO(data),
            'wsgi.errors': sys.stderr,
            'wsgi.multithread': True,
            'wsgi.multiprocess': False,
            'wsgi.run_once': False,
            'CONTENT_LENGTH': str(len(data)),
            'CONTENT_TYPE': 'application/json',
            **self.headers,
        }
        status = []

        def start_response(s, headers, exc_info=None):
            status.append(int(s[:3]))

        chunks = self.app(environ, start_response)
        out = b''.join(chunks)
        if hasattr(chunks, 'close'):
            chunks.close()
        with self._lock:
            self.requests += 1
        if status[0] not in ok:
            raise RuntimeError('%s %s -> %s %s' % (method, path, status, out))
        return _Resp(status[0], out)


def make_app(db_url, workdir):
    """The app as nimbus-placement-api builds it (its options and oslo.log
    set up the same way; the log lines go to a file in ``workdir``)."""
    from nimbus.cmd import common
    from nimbus import services

    conf_file = os.path.join(workdir, 'nimbus.conf')
    with open(conf_file, 'w') as f:
        f.write(
            '[DEFAULT]\nlog_file = %s\n[api]\nauth_strategy = noauth2\n'
            '[placement_database]\nconnection = %s\n'
            % (os.path.join(workdir, 'placement.log'), db_url)
        )
    conf = common.setup('nimbus-placement-api', ['--config-file', conf_file])
    return services.placement_app(conf)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--providers', type=int, default=500)
    p.add_argument('--db-url')
    p.add_argument('--profile', type=int, default=0, metavar='N')
    p.add_argument('--sort', default='tottime,cumulative')
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='placement-populate-')
    db_url = args.db_url or 'sqlite:///%s/nimbus.sqlite' % workdir
    drop = None if db_url.startswith('sqlite') else pb.create_database(db_url)
    try:
        client = AppClient(make_app(db_url, workdir))
        client.call('PUT', '/traits/CUSTOM_FAST_DISK')
        client.call('PUT', '/resource_classes/CUSTOM_PGPU')
        # The first compute nodes warm every path (imports, caches).
        for i in range(10):
            pb.populate_one(client, args.providers + i)
        prof = cProfile.Profile() if args.profile else None
        before = client.requests
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        for i in range(args.providers):
            pb.populate_one(client, i)
        if prof:
            prof.disable()
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        n = client.requests - before
        print(
            '%d populate requests (%s): %.3f ms CPU and %.3f ms wall per '
            'request%s'
            % (
                n,
                db_url.split(':', 1)[0],
                cpu * 1000 / n,
                wall * 1000 / n,
                ' (under cProfile)' if prof else '',
            ),
            flush=True,
        )
        if prof:
            for key in args.sort.split(','):
                out = io.StringIO()
                stats = pstats.Stats(prof, stream=out)
                stats.sort_stats(key).print_stats(args.profile)
                print(out.getvalue())
    finally:
        if drop is not None:
            drop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
