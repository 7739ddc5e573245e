"""Faults injected into a cloud of daemons while it boots and deletes.

A :class:`Burst` boots servers at a steady rate through the REST API and
deletes some of them as it goes; a fault (``kill -9`` of a daemon and its
restart, a RabbitMQ or MariaDB restart, a frozen compute, ...: see
:mod:`harness.injectors`) strikes in the middle. :func:`settle` then waits until the cloud is consistent again
and returns one :class:`Row` of the fault table: servers, ACTIVE, ERROR,
stuck (in BUILD or DELETING), leaked allocations (a consumer in placement
that is not an ACTIVE or building server), missing allocations (an ACTIVE
server without one), and the seconds it took to recover.
"""

import collections
import dataclasses
import json
import re
import threading
import time

import requests

from nimbus.allinone.client import ComputeClient
from nimbus.testing import accel_daemons
from nimbus.testing import daemons

_PLACEMENT_HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}
# Statuses a server ends in; anything else is still moving.
_SETTLED = ('ACTIVE', 'ERROR')
# Seconds the probe boots may take to find the struck service serving.
PROBE_TIMEOUT = 120
# The name of a server booted with the accelerator flavor ends so.
ACCEL_SUFFIX = '-accel'


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
    refusals: dict = dataclasses.field(default_factory=dict)
    # The probe boots after recovery: [(status, fault)], and why the
    # probe itself broke (an exception), if it did.
    probes: list = dataclasses.field(default_factory=list)
    probe_error: str = None
    # With the accelerator service (None without): ARQs whose instance
    # does not exist, and the servers whose ARQs disagree with their
    # status (an ACTIVE accelerator server without every ARQ Bound, a
    # Bound ARQ of a server that is not ACTIVE, a device allocation
    # without its Bound ARQ).
    orphan_arqs: int = None
    arq_mismatch: int = None

    def settled(self):
        return (
            self.stuck == 0
            and self.leaked == 0
            and self.missing == 0
            and not self.orphan_arqs
            and not self.arq_mismatch
        )

    def consistent(self):
        return (
            self.settled()
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
    'orphan ARQs',
    'ARQ mismatch',
    'recover s',
    'serves again',
)


def _served(row):
    if not row.serves_again:
        return 'NO'
    failed = sum(1 for status, _ in row.probes if status != 'ACTIVE')
    return 'yes' if not failed else 'yes (%d probe ERROR first)' % failed


def table(rows):
    """The fault table as Markdown, one row per fault."""
    lines = ['| ' + ' | '.join(HEADER) + ' |', '|' + '---|' * len(HEADER)]
    for row in rows:
        lines.append(
            '| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d '
            '| %s | %s | %s | %s |'
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
                '-' if row.orphan_arqs is None else row.orphan_arqs,
                '-' if row.arq_mismatch is None else row.arq_mismatch,
                '-' if row.recover_s is None else '%.1f' % row.recover_s,
                _served(row),
            )
        )
    return '\n'.join(lines)


class Burst(threading.Thread):
    """Boots ``boots`` servers at ``rate`` per second; after every
    ``delete_every`` boots it deletes the oldest server it booted and has
    not deleted yet. Requests refused while a service is down are counted,
    not retried (a client would see them fail).

    With ``accel_flavor`` (a flavor with a device profile), every
    ``accel_every``-th boot uses it; those servers' names end in
    :data:`ACCEL_SUFFIX`."""

    def __init__(
        self,
        api,
        flavor,
        image,
        boots=200,
        rate=10.0,
        delete_every=4,
        prefix='burst',
        accel_flavor=None,
        accel_every=4,
    ):
        super().__init__(daemon=True)
        self.api = api
        self.flavor = flavor
        self.image = image
        self.boots = boots
        self.rate = rate
        self.delete_every = delete_every
        self.prefix = prefix
        self.accel_flavor = accel_flavor
        self.accel_every = accel_every
        self.created = []
        self.deleted = []
        self.refused = 0
        # Why requests were refused: {answer: count}.
        self.refusals = collections.Counter()

    def _refused(self, exc):
        self.refused += 1
        self.refusals[_answer(exc)] += 1

    def run(self):
        began = time.monotonic()
        for index in range(self.boots):
            delay = began + index / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            name, flavor = '%s-%04d' % (self.prefix, index), self.flavor
            if self.accel_flavor and index % self.accel_every == 1:
                name, flavor = name + ACCEL_SUFFIX, self.accel_flavor
            try:
                body = self.api.create_server(name, flavor, self.image)
                self.created.append(body['server']['id'])
            except Exception as exc:
                self._refused(exc)
            if (
                self.delete_every
                and index % self.delete_every == self.delete_every - 1
                and len(self.deleted) < len(self.created) // 2
            ):
                victim = self.created[len(self.deleted) * 2]
                try:
                    self.api.delete('/servers/%s' % victim)
                    self.deleted.append(victim)
                except Exception as exc:
                    self._refused(exc)


def _answer(exc):
    """``POST 503 <the error's message>`` of a refused request (the
    client's RuntimeError), or the exception's class for no answer."""
    text = str(exc)
    match = re.match(r'(\w+) \S+ -> (\d+) (.*)', text, re.S)
    if not match:
        return type(exc).__name__
    method, status, body = match.groups()
    try:
        body = json.loads(body)
        body = next(iter(body.values())).get('message', body)
    except Exception:
        pass
    return '%s %s %s' % (method, status, str(body)[:100])


def ready_for_bursts(cloud, hosts, profile, prefix):
    """Get an :class:`~nimbus.testing.accel_daemons.AccelDaemonCloud`
    whose ``hosts`` simulated hosts (each with a fake FPGA and GPU) were
    started ready for :func:`run`: the hosts up and mapped to their cell,
    their device providers in placement, a device profile ``profile``
    asking for one GPU, and a plain flavor, a GPU flavor and an image
    (named after ``prefix``). Returns ``(api, (flavor, accel_flavor),
    image)``, ``api`` a compute API client."""
    api = ComputeClient(cloud.api_url + '/v2.1')
    daemons.wait_for(
        lambda: (
            sum(
                1
                for h in api.get('/os-hypervisors/detail')['hypervisors']
                if h.get('state') == 'up'
            )
            == hosts
        ),
        120,
        'the %d hosts' % hosts,
        list(cloud.daemons.values()),
    )
    cloud.manage('cell', 'discover-hosts')
    daemons.wait_for(
        lambda: len(cloud.device_providers()) == 2 * hosts,
        120,
        'an FPGA and a GPU provider per host',
        list(cloud.daemons.values()),
    )
    response = cloud.accel(
        'POST',
        '/device_profiles',
        json=[{'name': profile, 'groups': [{'resources:PGPU': '1'}]}],
    )
    if response.status_code != 201:
        raise RuntimeError('device profile %s: %s' % (profile, response.text))
    flavor = api.create_flavor(prefix + '.tiny', 1, 256, 1)['id']
    accel_flavor = api.create_flavor(
        prefix + '.gpu', 1, 256, 1, {'accel:device_profile': profile}
    )['id']
    image = api.create_image(prefix + '-image')['id']
    return api, (flavor, accel_flavor), image


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


def snapshot(api, placement_url, fault='', prefix='', accel=None):
    """A :class:`Row` for the cloud as it is now (no recovery time): the
    servers named ``prefix...`` counted, every server checked. ``accel``:
    the :class:`~nimbus.testing.accel_daemons.AccelDaemonCloud` whose ARQs
    are checked too."""
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
    if accel is not None:
        row.orphan_arqs, row.arq_mismatch = accel_daemons.disagreements(
            accel, servers, active, moving, ACCEL_SUFFIX
        )
    return row


def settle(
    api,
    placement_url,
    fault,
    began,
    timeout=300,
    probe=None,
    prefix='',
    accel=None,
):
    """Wait until no server is moving and placement (and the accelerator
    service, with ``accel``) agrees with the servers; the row, with the
    seconds from ``began`` (the fault) until then. ``probe()`` must then
    succeed for ``serves_again``."""
    deadline = time.monotonic() + timeout
    row = None
    while time.monotonic() < deadline:
        try:
            row = snapshot(api, placement_url, fault, prefix, accel)
        except Exception:
            row = None  # an API still coming back
        if row is not None and row.settled():
            row.recover_s = time.monotonic() - began
            break
        time.sleep(1.0)
    if row is None:
        row = Row(fault=fault)
    try:
        row.serves_again = bool(probe() if probe else True)
    except Exception as exc:
        row.serves_again = False
        row.probe_error = repr(exc)[:2000]
    return row


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
    accel_flavor=None,
):
    """One row: a burst of ``boots``; ``fault()`` once ``strike_after`` of
    them are sent; then :func:`settle`, and a probe boot that must reach
    ACTIVE. With ``accel_flavor`` (the cloud then runs the accelerator
    service) part of the burst uses it, the ARQs are checked, and a
    second probe boots with it."""
    prefix = name.replace(' ', '-')[:24]
    burst = Burst(
        api,
        flavor,
        image,
        boots=boots,
        rate=rate,
        prefix=prefix,
        accel_flavor=accel_flavor,
    )
    burst.start()
    strike_at = time.monotonic() + strike_after * boots / rate
    time.sleep(max(0.0, strike_at - time.monotonic()))
    began = time.monotonic()
    fault()
    burst.join()

    probes = []

    def probe_one(suffix, flavor_id, deadline):
        """Boot until one reaches ACTIVE (an ERROR one is deleted and
        the boot tried again 3 s later) or ``deadline``."""
        while True:
            body = api.create_server(prefix + suffix, flavor_id, image)
            uuid = body['server']['id']
            daemons.wait_for(
                lambda uuid=uuid: api.server(uuid)['status'] in _SETTLED,
                max(1.0, deadline - time.monotonic()),
                'the probe server',
                list(cloud.daemons.values()),
            )
            server = api.server(uuid)
            probes.append((server['status'], server.get('fault')))
            if server['status'] == 'ACTIVE':
                return True
            api.delete('/servers/%s' % uuid)
            if time.monotonic() + 3 > deadline:
                return False
            time.sleep(3)

    def probe():
        deadline = time.monotonic() + PROBE_TIMEOUT
        ok = probe_one('-probe', flavor, deadline)
        if accel_flavor:
            suffix = '-probe' + ACCEL_SUFFIX
            ok = probe_one(suffix, accel_flavor, deadline) and ok
        return ok

    row = settle(
        api,
        cloud.placement_url,
        name,
        began,
        timeout,
        probe,
        prefix + '-',
        cloud if accel_flavor else None,
    )
    row.booted, row.refused = len(burst.created), burst.refused
    row.deleted = len(burst.deleted)
    row.refusals = dict(burst.refusals)
    row.probes = probes
    return row
