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

FLAVORS = [
    ('m1.tiny', 1, 512, 1),
    ('m1.small', 1, 2048, 20),
    ('m1.medium', 2, 4096, 40),
    ('m1.large', 4, 8192, 80),
]
IMAGE = ('cirros-demo', {'hw_architecture': 'x86_64'})


def seed(api_url):
    """The standard flavors and a demo image, each created unless it exists
    (a cloud to try needs something to boot). Returns (flavors, image)."""
    client = ComputeClient(api_url)
    existing = {f['name']: f for f in client.get('/flavors')['flavors']}
    flavors = [
        existing.get(name) or client.create_flavor(name, vcpus, ram, disk)
        for name, vcpus, ram, disk in FLAVORS
    ]
    name, properties = IMAGE
    image = next(
        (i for i in client.images() if i.get('name') == name), None
    ) or client.create_image(name, properties)
    return flavors, image


ACCEL_PROFILE = (
    'demo-gpu',
    [{'resources:PGPU': '1', 'trait:CUSTOM_GPU_PRODUCT_ID_1EB8': 'required'}],
)
ACCEL_FLAVOR = ('m1.gpu', 1, 512, 1)


def seed_accelerators(api_url, accelerator_url):
    """The device profile ``demo-gpu`` (one fake GPU) in the accelerator
    service and the flavor ``m1.gpu`` that asks for it, each created
    unless it exists. Returns the flavor."""
    import requests

    headers = {'X-Auth-Token': 'admin:admin', 'X-Roles': 'admin'}
    name, groups = ACCEL_PROFILE
    found = requests.get(
        accelerator_url + '/v2/device_profiles',
        params={'name': name},
        headers=headers,
        timeout=30,
    )
    found.raise_for_status()
    if not found.json()['device_profiles']:
        requests.post(
            accelerator_url + '/v2/device_profiles',
            headers=headers,
            timeout=30,
            json=[
                {'name': name, 'groups': groups, 'description': 'one fake GPU'}
            ],
        ).raise_for_status()
    client = ComputeClient(api_url)
    existing = {f['name']: f for f in client.get('/flavors')['flavors']}
    flavor, vcpus, ram, disk = ACCEL_FLAVOR
    return existing.get(flavor) or client.create_flavor(
        flavor, vcpus, ram, disk, extra_specs={'accel:device_profile': name}
    )


def run(
    api_url,
    placement_url,
    servers=20,
    console=None,
    timeout=300,
    accelerator_url=None,
    accelerator_servers=0,
):
    """Boot ``servers`` servers, and ``accelerator_servers`` more with a
    fake GPU each; True when every one is ACTIVE."""
    console = console or Console()
    client = ComputeClient(api_url)
    flavors, image = seed(api_url)
    uuids = []
    started = time.monotonic()
    for index in range(servers):
        flavor = flavors[index % len(flavors)]
        server = client.create_server(
            'demo-%03d' % (index + 1), flavor['id'], image['id']
        )['server']
        uuids.append(server['id'])
    gpu_uuids = []
    if accelerator_url and accelerator_servers:
        gpu_flavor = seed_accelerators(api_url, accelerator_url)
        for index in range(accelerator_servers):
            server = client.create_server(
                'gpu-%03d' % (index + 1), gpu_flavor['id'], image['id']
            )['server']
            gpu_uuids.append(server['id'])
    servers += len(gpu_uuids)
    final = {}
    with Progress(
        TextColumn('[bold]Booting servers'),
        BarColumn(),
        TextColumn('{task.completed}/{task.total}'),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task('boot', total=servers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listing = {s['id']: s for s in client.servers()}
            final = {
                uuid: listing[uuid]
                for uuid in uuids + gpu_uuids
                if uuid in listing
                and listing[uuid]['status'] in ('ACTIVE', 'ERROR')
            }
            progress.update(task, completed=len(final))
            if len(final) == servers:
                break
            time.sleep(0.2)
    elapsed = time.monotonic() - started
    _print_servers(console, client, uuids, final)
    if gpu_uuids:
        _print_accelerated(console, client, accelerator_url, gpu_uuids, final)
    _print_hosts(console, client, placement_url)
    active = sum(1 for s in final.values() if s['status'] == 'ACTIVE')
    console.print(
        '%d of %d servers ACTIVE in %.1f s' % (active, servers, elapsed)
    )
    return active == servers


def _print_servers(console, client, uuids, final):
    table = Table(title='Where each server landed', box=box.SIMPLE)
    for column in ('server', 'flavor', 'status', 'host'):
        table.add_column(column)
    for uuid in uuids:
        server = final.get(uuid) or client.server(uuid)
        flavor = server.get('flavor', {})
        table.add_row(
            server['name'],
            flavor.get('original_name') or str(flavor.get('id')),
            server['status'],
            server.get('OS-EXT-SRV-ATTR:host') or '-',
        )
    console.print(table)


def _print_accelerated(console, client, accelerator_url, uuids, final):
    """The servers with a device profile, and the device each was bound
    to (from the accelerator service's ARQs)."""
    import requests

    table = Table(title='Servers with an accelerator', box=box.SIMPLE)
    for column in ('server', 'status', 'host', 'ARQ', 'device (PCI)'):
        table.add_column(column)
    for uuid in uuids:
        server = final.get(uuid) or client.server(uuid)
        response = requests.get(
            accelerator_url + '/v2/accelerator_requests',
            params={'instance': uuid},
            timeout=30,
            headers={'X-Auth-Token': 'admin:admin', 'X-Roles': 'admin'},
        )
        arqs = response.json().get('arqs', []) if response.ok else []
        for arq in arqs or [{}]:
            info = arq.get('attach_handle_info') or {}
            table.add_row(
                server['name'],
                server['status'],
                server.get('OS-EXT-SRV-ATTR:host') or '-',
                arq.get('state', '-'),
                '%s:%s:%s.%s'
                % (
                    info['domain'],
                    info['bus'],
                    info['device'],
                    info['function'],
                )
                if info
                else '-',
            )
    console.print(table)


def _print_hosts(console, client, placement_url):
    """Usage per host as placement, the source of truth, records it."""
    import requests

    headers = {
        'X-Auth-Token': 'admin',
        'OpenStack-API-Version': 'placement 1.39',
    }

    def get(path):
        response = requests.get(
            placement_url + path, headers=headers, timeout=30
        )
        response.raise_for_status()
        return response.json()

    counts = collections.Counter(
        s.get('OS-EXT-SRV-ATTR:host')
        for s in client.servers()
        if s['status'] == 'ACTIVE'
    )
    states = {
        h['hypervisor_hostname']: h.get('state', '?')
        for h in client.get('/os-hypervisors/detail')['hypervisors']
    }
    table = Table(
        title='Per-host utilisation (from placement)', box=box.SIMPLE
    )
    for column in ('host', 'servers', 'VCPU', 'MEMORY_MB', 'DISK_GB', 'state'):
        table.add_column(column)
    roots = [
        rp
        for rp in get('/resource_providers')['resource_providers']
        if rp['parent_provider_uuid'] is None
    ]
    for rp in sorted(roots, key=lambda r: r['name']):
        usages = get('/resource_providers/%s/usages' % rp['uuid'])['usages']
        inventories = get('/resource_providers/%s/inventories' % rp['uuid'])[
            'inventories'
        ]

        def cell(rc, inventories=inventories, usages=usages):
            inv = inventories.get(rc)
            if inv is None:
                return '-'
            capacity = int(
                (inv['total'] - inv['reserved']) * inv['allocation_ratio']
            )
            return '%d/%d' % (usages.get(rc, 0), capacity)

        table.add_row(
            rp['name'],
            str(counts.get(rp['name'], 0)),
            cell('VCPU'),
            cell('MEMORY_MB'),
            cell('DISK_GB'),
            states.get(rp['name'], '?'),
        )
    console.print(table)
