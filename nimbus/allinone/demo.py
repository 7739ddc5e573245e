"""The all-in-one demo: create flavors, boot servers, show where they went.

Everything goes through the compute REST API, the way an operator's tools
would drive it.
"""

import collections
import time

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from nimbus.allinone.client import ComputeClient

FLAVORS = [('m1.tiny', 1, 512, 1), ('m1.small', 1, 2048, 20),
           ('m1.medium', 2, 4096, 40), ('m1.large', 4, 8192, 80)]


def run(api_url, servers=20, console=None, timeout=300):
    """Boot ``servers`` servers; True when every one is ACTIVE."""
    console = console or Console()
    client = ComputeClient(api_url)
    existing = {f['name']: f for f in client.get('/flavors')['flavors']}
    flavors = []
    for name, vcpus, ram, disk in FLAVORS:
        flavors.append(existing.get(name) or
                       client.create_flavor(name, vcpus, ram, disk))
    image = client.create_image('cirros-demo', {'hw_architecture':
                                                'x86_64'})
    uuids = []
    started = time.monotonic()
    for index in range(servers):
        flavor = flavors[index % len(flavors)]
        server = client.create_server('demo-%03d' % (index + 1),
                                      flavor['id'], image['id'])['server']
        uuids.append(server['id'])
    final = {}
    with Progress(TextColumn('[bold]Booting servers'), BarColumn(),
                  TextColumn('{task.completed}/{task.total}'),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task('boot', total=servers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listing = {s['id']: s for s in client.servers()}
            final = {uuid: listing[uuid] for uuid in uuids
                     if uuid in listing and
                     listing[uuid]['status'] in ('ACTIVE', 'ERROR')}
            progress.update(task, completed=len(final))
            if len(final) == servers:
                break
            time.sleep(0.2)
    elapsed = time.monotonic() - started
    _print_servers(console, client, uuids, final)
    _print_hosts(console, client)
    active = sum(1 for s in final.values() if s['status'] == 'ACTIVE')
    console.print('%d of %d servers ACTIVE in %.1f s' % (active, servers,
                                                         elapsed))
    return active == servers


def _print_servers(console, client, uuids, final):
    table = Table(title='Where each server landed', box=box.SIMPLE)
    for column in ('server', 'flavor', 'status', 'host'):
        table.add_column(column)
    for uuid in uuids:
        server = final.get(uuid) or client.server(uuid)
        flavor = server.get('flavor', {})
        table.add_row(server['name'],
                      flavor.get('original_name') or str(flavor.get('id')),
                      server['status'],
                      server.get('OS-EXT-SRV-ATTR:host') or '-')
    console.print(table)


def _print_hosts(console, client):
    hypervisors = client.get('/os-hypervisors/detail')['hypervisors']
    counts = collections.Counter(
        s.get('OS-EXT-SRV-ATTR:host') for s in client.servers()
        if s['status'] == 'ACTIVE')
    table = Table(title='Per-host utilisation', box=box.SIMPLE)
    for column in ('host', 'servers', 'vCPUs used', 'RAM used (MB)',
                   'disk used (GB)', 'state'):
        table.add_column(column)
    for hv in sorted(hypervisors, key=lambda h: h['hypervisor_hostname']):
        host = hv.get('service', {}).get('host') or hv['hypervisor_hostname']
        table.add_row(host, str(counts.get(host, 0)),
                      '%s/%s' % (hv.get('vcpus_used', '?'),
                                 hv.get('vcpus', '?')),
                      '%s/%s' % (hv.get('memory_mb_used', '?'),
                                 hv.get('memory_mb', '?')),
                      '%s/%s' % (hv.get('local_gb_used', '?'),
                                 hv.get('local_gb', '?')),
                      hv.get('state', '?'))
    console.print(table)
