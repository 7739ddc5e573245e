"""Faults injected into a cloud of daemons while it boots and deletes.

A :class:`Burst` boots servers at a steady rate through the REST API and
deletes some of them as it goes; a fault (``kill -9`` of a daemon and its
restart, a RabbitMQ or MariaDB restart, a frozen compute, ...) strikes in
the middle. :func:`settle` then waits until the cloud is consistent again
and returns one :class:`Row` of the fault table: servers, ACTIVE, ERROR,
stuck (in BUILD or DELETING), leaked allocations (a consumer in placement
that is not an ACTIVE or building server), missing allocations (an ACTIVE
server without one), and the seconds it took to recover.
"""

import dataclasses
import os
import shutil
import subprocess
import threading
import time

import requests

from nimbus.testing import daemons

_PLACEMENT_HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}
# Statuses a server ends in; anything else is still moving.
_SETTLED = ('ACTIVE', 'ERROR')


@dataclasses.dataclass
class Row:
    fault: str
    booted: int = 0
    refused: int = 0
    deleted: int = 0
    servers: int = 0
    active: int = 0
    error: int = 0
    stuck: int = 0
    leaked: int = 0
    missing: int = 0
    recover_s: float = None
    serves_again: bool = False
    errors_without_fault: int = 0

    def consistent(self):
        return (
            self.stuck == 0
            and self.leaked == 0
            and self.missing == 0
            and self.errors_without_fault == 0
            and self.serves_again
        )


HEADER = (
    'fault',
    'boots accepted',
    'refused',
    'deleted',
    'servers',
    'ACTIVE',
    'ERROR',
    'stuck',
    'leaked allocs',
    'missing allocs',
    'recover s',
    'serves again',
)


def table(rows):
    """The fault table as Markdown, one row per fault."""
    lines = ['| ' + ' | '.join(HEADER) + ' |', '|' + '---|' * len(HEADER)]
    for row in rows:
        lines.append(
            '| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d '
            '| %s | %s |'
            % (
                row.fault,
                row.booted,
                row.refused,
                row.deleted,
                row.servers,
                row.active,
                row.error,
                row.stuck,
                row.leaked,
                row.missing,
                '-' if row.recover_s is None else '%.1f' % row.recover_s,
                'yes' if row.serves_again else 'NO',
            )
        )
    return '\n'.join(lines)


class Burst(threading.Thread):
    """Boots ``boots`` servers at ``rate`` per second; after every
    ``delete_every`` boots it deletes the oldest server it booted and has
    not deleted yet. Requests refused while a service is down are counted,
    not retried (a client would see them fail)."""

    def __init__(
        self,
        api,
        flavor,
        image,
        boots=200,
        rate=10.0,
        delete_every=4,
        prefix='burst',
    ):
        super().__init__(daemon=True)
        self.api = api
        self.flavor = flavor
        self.image = image
        self.boots = boots
        self.rate = rate
        self.delete_every = delete_every
        self.prefix = prefix
        self.created = []
        self.deleted = []
        self.refused = 0

    def run(self):
        began = time.monotonic()
        for index in range(self.boots):
            delay = began + index / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                body = self.api.create_server(
                    '%s-%04d' % (self.prefix, index), self.flavor, self.image
                )
                self.created.append(body['server']['id'])
            except Exception:
                self.refused += 1
            if (
                self.delete_every
                and index % self.delete_every == self.delete_every - 1
                and len(self.deleted) < len(self.created) // 2
            ):
                victim = self.created[len(self.deleted) * 2]
                try:
                    self.api.delete('/servers/%s' % victim)
                    self.deleted.append(victim)
                except Exception:
                    self.refused += 1


def consumers(placement_url):
    """Every consumer holding an allocation in placement."""
    session = requests.Session()
    session.headers.update(_PLACEMENT_HEADERS)
    providers = session.get(
        placement_url + '/resource_providers', timeout=60
    ).json()['resource_providers']
    found = set()
    for provider in providers:
        allocations = session.get(
            '%s/resource_providers/%s/allocations'
            % (placement_url, provider['uuid']),
            timeout=60,
        ).json()['allocations']
        found.update(allocations)
    return found


def snapshot(api, placement_url, fault='', prefix=''):
    """A :class:`Row` for the cloud as it is now (no recovery time): the
    servers named ``prefix...`` counted, every server checked."""
    servers = api.get(
        '/servers/detail', params={'all_tenants': '1', 'limit': 100000}
    )['servers']
    row = Row(fault=fault)
    active = set()
    moving = set()
    for server in servers:
        mine = server['name'].startswith(prefix)
        row.servers += mine
        if server['status'] == 'ACTIVE':
            active.add(server['id'])
            row.active += mine
        elif server['status'] == 'ERROR':
            row.error += mine
            if not (server.get('fault') or {}).get('message'):
                row.errors_without_fault += 1
        else:
            moving.add(server['id'])
    row.stuck = len(moving)
    held = consumers(placement_url)
    # A building server may hold its claim; a settled cloud has none.
    row.leaked = len(held - active - moving)
    row.missing = len(active - held)
    return row


def settle(
    api, placement_url, fault, began, timeout=300, probe=None, prefix=''
):
    """Wait until no server is moving and placement agrees with the
    servers; the row, with the seconds from ``began`` (the fault) until
    then. ``probe()`` must then succeed for ``serves_again``."""
    deadline = time.monotonic() + timeout
    row = None
    while time.monotonic() < deadline:
        try:
            row = snapshot(api, placement_url, fault, prefix)
        except Exception:
            row = None  # an API still coming back
        if (
            row is not None
            and row.stuck == 0
            and row.leaked == 0
            and row.missing == 0
        ):
            row.recover_s = time.monotonic() - began
            break
        time.sleep(1.0)
    if row is None:
        row = Row(fault=fault)
    try:
        row.serves_again = bool(probe() if probe else True)
    except Exception:
        row.serves_again = False
    return row


# -- faults --------------------------------------------------------------


def kill_and_restart(cloud, name, down_s=3.0):
    """``kill -9`` daemon ``name`` (and its process group), restart it
    after ``down_s`` seconds."""

    def fault():
        daemon = cloud.daemons[name]
        daemon.kill9()
        time.sleep(down_s)
        daemon.start()

    return fault


def freeze(cloud, name, frozen_s=20.0):
    """SIGSTOP daemon ``name`` for ``frozen_s`` seconds (no heartbeats, no
    messages: cut off as far as everyone else can tell), then SIGCONT."""
    import signal

    def fault():
        pid = cloud.daemons[name].process.pid
        os.killpg(pid, signal.SIGSTOP)
        time.sleep(frozen_s)
        os.killpg(pid, signal.SIGCONT)

    return fault


def rabbitmq_restart(down_s=3.0):
    """``rabbitmqctl stop_app`` / ``start_app``: every connection drops."""
    ctl = shutil.which('rabbitmqctl')

    def fault():
        subprocess.run(
            [ctl, 'stop_app'], check=True, capture_output=True, timeout=120
        )
        time.sleep(down_s)
        subprocess.run(
            [ctl, 'start_app'], check=True, capture_output=True, timeout=120
        )

    return fault


def mariadb_restart(down_s=3.0):
    """Shut MariaDB down (``mysqladmin shutdown``) and start it again as
    .ci/run does; waits for its port."""

    def fault():
        subprocess.run(
            ['mysqladmin', '-uroot', '-h127.0.0.1', 'shutdown'],
            check=True,
            capture_output=True,
            timeout=120,
        )
        time.sleep(down_s)
        subprocess.run(
            [
                'start-stop-daemon',
                '--start',
                '--oknodo',
                '--background',
                '--exec',
                '/usr/sbin/mariadbd',
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        daemons.wait_for(lambda: _port_open(3306), 120, 'MariaDB', [])

    return fault


def _port_open(port):
    import socket

    try:
        with socket.create_connection(('127.0.0.1', port), timeout=1):
            return True
    except OSError:
        return False


def run(
    cloud,
    api,
    flavor,
    image,
    name,
    fault,
    boots=200,
    rate=10.0,
    strike_after=0.4,
    timeout=300,
):
    """One row: a burst of ``boots``; ``fault()`` once ``strike_after`` of
    them are sent; then :func:`settle`, and a probe boot that must reach
    ACTIVE."""
    prefix = name.replace(' ', '-')[:24]
    burst = Burst(api, flavor, image, boots=boots, rate=rate, prefix=prefix)
    burst.start()
    strike_at = time.monotonic() + strike_after * boots / rate
    time.sleep(max(0.0, strike_at - time.monotonic()))
    began = time.monotonic()
    fault()
    burst.join()

    def probe():
        body = api.create_server(prefix + '-probe', flavor, image)
        uuid = body['server']['id']
        daemons.wait_for(
            lambda: api.server(uuid)['status'] in _SETTLED,
            120,
            'the probe server',
            list(cloud.daemons.values()),
        )
        return api.server(uuid)['status'] == 'ACTIVE'

    row = settle(
        api, cloud.placement_url, name, began, timeout, probe, prefix + '-'
    )
    row.booted, row.refused = len(burst.created), burst.refused
    row.deleted = len(burst.deleted)
    return row
