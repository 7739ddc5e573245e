"""``nimbus hosts|servers|cells|services``: what the cloud holds, read from
the compute API (``hosts`` from placement, in one request), as a
table that fits the terminal (80 columns when the output is not one)
without cutting host names, or as JSON (``--format json``)."""

import json

import requests
from rich import box
from rich.console import Console
from rich.table import Table


PLACEMENT_VERSION = '1.39'
BAR_MIN, BAR_MAX = 6, 30


def host_column(table, header, names, **kwargs):
    """A column that never wraps nor cuts: as wide as its longest name."""
    width = max([len(header)] + [len(str(n)) for n in names])
    table.add_column(header, no_wrap=True, min_width=width, **kwargs)


def print_rows(headers, rows, console=None, right=()):
    """A table when every cell fits whole in the console's width; else one
    block of ``header: value`` lines per row, so nothing (a host name, an
    id) is ever cut or folded."""
    console = console or Console()
    rows = [[str('-' if v is None else v) for v in row] for row in rows]
    widths = [
        max([len(h)] + [len(r[i]) for r in rows])
        for i, h in enumerate(headers)
    ]
    if sum(widths) + 3 * (len(widths) - 1) + 2 <= console.width:
        table = Table(box=box.SIMPLE, pad_edge=False)
        for header, width in zip(headers, widths, strict=False):
            table.add_column(
                header,
                no_wrap=True,
                min_width=width,
                justify='right' if header in right else 'left',
            )
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    label = max(len(h) for h in headers) + 1
    for index, row in enumerate(rows):
        if index:
            console.print()
        for header, value in zip(headers, row, strict=False):
            console.print(
                '%-*s %s' % (label, header + ':', value),
                highlight=False,
                soft_wrap=True,
            )


def _print_json(data):
    print(json.dumps(data, indent=2))


class PlacementReader:
    """GETs against the placement API with the noauth2 token."""

    def __init__(
        self, url, user='admin', project='admin', roles='admin', timeout=30
    ):
        self.url = url.strip().rstrip('/')
        # Like allinone.client.Client's session, for placement's API (its
        # own version header); the two clients share no other code.
        self.session = requests.Session()
        self.session.headers.update(
            {
                'X-Auth-Token': '%s:%s' % (user, project),
                'X-Roles': roles,
                'OpenStack-API-Version': 'placement %s' % PLACEMENT_VERSION,
                'Accept': 'application/json',
            }
        )
        self.timeout = timeout

    def get(self, path, missing_ok=False):
        """The JSON answer; ``None`` for a 404 when ``missing_ok``."""
        response = self.session.request(
            'GET', self.url + path, timeout=self.timeout
        )
        if missing_ok and response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise RuntimeError(
                'GET %s%s -> %s %s'
                % (self.url, path, response.status_code, response.text[:500])
            )
        return response.json()


BULK_PATH = '/nimbus/provider_usages'


def rc_order(rc):
    """Standard classes in os-resource-classes' order, then custom ones by
    name (as placement's summaries list them; os_resource_classes alone,
    not the placement service's modules)."""
    import os_resource_classes

    global _RC_INDEX
    if _RC_INDEX is None:
        _RC_INDEX = {
            name: i for i, name in enumerate(os_resource_classes.STANDARDS)
        }
    index = _RC_INDEX.get(rc)
    return (0, index, '') if index is not None else (1, 0, rc)


_RC_INDEX = None


def _walk(placement):
    """Stock OpenStack Placement: two requests per provider (its API has
    no bulk inventory or usage listing)."""
    providers = placement.get('/resource_providers')['resource_providers']
    for provider in providers:
        uuid = provider['uuid']
        provider['inventories'] = placement.get(
            '/resource_providers/%s/inventories' % uuid
        )['inventories']
        provider['usages'] = placement.get(
            '/resource_providers/%s/usages' % uuid
        )['usages']
    return providers


def provider_usage(placement):
    """``nimbus hosts``: per resource provider (devices included), each
    class's used, total, reserved and capacity (``(total - reserved) *
    allocation_ratio``, what placement offers), standard classes first.

    One request to Nimbus placement (``GET /nimbus/provider_usages``,
    docs/placement.md); against a Placement without it (404), the walk of
    two requests per provider."""
    body = placement.get(BULK_PATH, missing_ok=True)
    providers = body['resource_providers'] if body else _walk(placement)
    out = []
    for provider in sorted(providers, key=lambda p: p['name']):
        inventories = provider['inventories']
        usages = provider['usages']
        resources = {}
        for rc in sorted(inventories, key=rc_order):
            inv = inventories[rc]
            resources[rc] = {
                'used': usages.get(rc, 0),
                'total': inv['total'],
                'reserved': inv.get('reserved', 0),
                'capacity': int(
                    (inv['total'] - inv.get('reserved', 0))
                    * inv.get('allocation_ratio', 1.0)
                ),
            }
        out.append(
            {
                'host': provider['name'],
                'uuid': provider['uuid'],
                'parent_provider_uuid': provider.get('parent_provider_uuid'),
                'resources': resources,
            }
        )
    return out


def bar(used, capacity, width):
    filled = 0 if capacity <= 0 else min(width, round(width * used / capacity))
    return '#' * filled + '.' * (width - filled)


def render_hosts(hosts, console=None):
    """One line per host (its name whole), then one per resource class:
    used/total, a bar (when the width leaves room for one) and percent.

    Laid out here and written in one piece: a rich Table of 10,000 rows
    (1000 hosts with two devices each) took 2 s to lay out, and rich's
    Text 0.6 s to style them."""
    console = console or Console()
    rows = []
    for h in hosts:
        rows.append((h['host'], None))
        for rc, r in h['resources'].items():
            rows.append(('  ' + rc, r))
    used = {
        id(r): '%d/%d' % (r['used'], r['capacity'])
        for _n, r in rows
        if r is not None
    }
    first = max([len('host / class')] + [len(n) for n, _r in rows])
    amounts = max([0] + [len(u) for u in used.values()])
    heading, sep = 'used/total', '  '
    middle = max(len(heading), amounts)
    if 1 + first + middle + 3 + 2 * len(sep) > console.width:
        # a long name: tighter columns rather than a cut name
        heading, sep = 'used', ' '
        middle = max(len(heading), amounts)
    width = console.width - (first + middle + 12)
    width = min(BAR_MAX, width) if width >= BAR_MIN else 0

    def line(name, amount, usage, pct):
        cells = [name.ljust(first), amount.rjust(middle)]
        if width:
            cells.append(usage.ljust(width))
        cells.append(pct.rjust(3))
        return (' ' + sep.join(cells)).rstrip()

    # Bold (the heading and the host lines) only on a terminal that takes
    # colour; the lines are written as they are, not through rich's Text
    # (8000 lines: 0.6 s of CPU to wrap and style what needs neither).
    strong = console.is_terminal and not console.no_color

    def bold(text):
        return '\x1b[1m%s\x1b[0m' % text if strong else text

    header = line('host / class', heading, 'usage', '%')
    out = [bold(header), ' ' + '─' * (len(header) - 1)]
    for name, r in rows:
        if r is None:
            out.append(bold(line(name, '', '', '')))
            continue
        pct = 0 if r['capacity'] <= 0 else 100 * r['used'] // r['capacity']
        usage = bar(r['used'], r['capacity'], width) if width else ''
        out.append(line(name, used[id(r)], usage, str(pct)))
    out.append('')
    console.file.write('\n'.join(out))
    console.file.flush()


def hosts(args):
    from nimbus.cmd import cli_conf

    placement = PlacementReader(
        args.placement_url, args.user, args.project, args.roles
    )
    keystone = cli_conf.keystone_session(args, placement.session.headers)
    if keystone is not None:
        placement.session = keystone
    data = provider_usage(placement)
    if args.format == 'json':
        _print_json(data)
    else:
        render_hosts(data)
    return 0


def _compute(args):
    from nimbus.cmd import cli_conf

    return cli_conf.compute_client(args)


def server_rows(servers):
    return [
        {
            'id': s['id'],
            'name': s['name'],
            'status': s['status'],
            'host': s.get('OS-EXT-SRV-ATTR:host'),
            'zone': s.get('OS-EXT-AZ:availability_zone'),
            'flavor': (s.get('flavor') or {}).get('original_name'),
            'project_id': s.get('tenant_id'),
        }
        for s in servers
    ]


def servers(args):
    client = _compute(args)
    data = server_rows(
        client.get('/servers/detail', params={'all_tenants': '1'})['servers']
    )
    if args.format == 'json':
        _print_json(data)
        return 0
    print_rows(
        ['name', 'status', 'host', 'flavor', 'id'],
        [
            [r['name'], r['status'], r['host'], r['flavor'], r['id']]
            for r in data
        ],
    )
    return 0


def cells(args):
    data = _compute(args).get('/os-cells')['cells']
    if args.format == 'json':
        _print_json(data)
        return 0
    print_rows(
        ['name', 'uuid', 'hosts', 'servers', 'state'],
        [
            [
                c['name'],
                c['uuid'],
                c['hosts'],
                c['servers'],
                'disabled' if c['disabled'] else 'enabled',
            ]
            for c in data
        ],
        right=('hosts', 'servers'),
    )
    return 0


def _nimbus_binary(name):
    """The compute API shows Nova's service names (nova-compute); this
    CLI shows the services as they run (nimbus-compute)."""
    if name.startswith('nova-'):
        return 'nimbus-' + name[len('nova-') :]
    return name


def services(args):
    data = _compute(args).get('/os-services')['services']
    for service in data:
        service['binary'] = _nimbus_binary(service['binary'])
    if args.format == 'json':
        _print_json(data)
        return 0
    headers = ['binary', 'host', 'zone', 'status', 'state']
    rows = [
        [
            x['binary'],
            x['host'],
            x.get('zone'),
            x['status'],
            x['state'],
            x.get('disabled_reason') or '',
        ]
        for x in data
    ]
    if any(row[-1] for row in rows):
        headers.append('reason')
    else:
        rows = [row[:-1] for row in rows]
    print_rows(headers, rows)
    return 0
