"""Helpers for the scheduler's functional tests: everything goes through the
REST APIs (compute and placement) the way a user or an operator would."""

import requests

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for  # noqa: F401 (re-exported)

PLACEMENT_HEADERS = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}


def admin_client(cloud, microversion='2.72'):
    api = client_mod.ComputeClient(cloud.api_url, microversion=microversion)
    api.cloud = cloud
    return api


def boot(api, name, flavor, image, hints=None, **extra):
    """POST /servers; returns the id (or the reservation of a multi-create)."""
    body = api.create_server(
        name, flavor['id'], image['id'], hints=hints, **extra
    )
    return body['server']['id'] if 'server' in body else body


def settle(api, uuids, timeout=60):
    """Wait until every server is ACTIVE or ERROR; returns {id: server}."""
    uuids = list(uuids)

    def done():
        servers = {s['id']: s for s in api.servers()}
        if all(
            u in servers and servers[u]['status'] in ('ACTIVE', 'ERROR')
            for u in uuids
        ):
            return servers
        return None

    return wait_for(done, timeout=timeout, what='servers to settle')


def boot_and_settle(api, name, flavor, image, hints=None, **extra):
    server_id = boot(api, name, flavor, image, hints=hints, **extra)
    return settle(api, [server_id])[server_id]


def host_of(server):
    return server.get('OS-EXT-SRV-ATTR:host')


def placement_get(cloud, path):
    response = requests.get(
        cloud.placement_url + path, headers=PLACEMENT_HEADERS, timeout=30
    )
    response.raise_for_status()
    return response.json()


def provider_usages(cloud):
    """{provider name: {rc: (used, capacity)}} from placement."""
    out = {}
    for rp in placement_get(cloud, '/resource_providers')[
        'resource_providers'
    ]:
        inv = placement_get(
            cloud, '/resource_providers/%s/inventories' % rp['uuid']
        )['inventories']
        use = placement_get(
            cloud, '/resource_providers/%s/usages' % rp['uuid']
        )['usages']
        out[rp['name']] = {
            rc: (
                use.get(rc, 0),
                int((i['total'] - i['reserved']) * i['allocation_ratio']),
            )
            for rc, i in inv.items()
        }
    return out


def consumer_allocations(cloud, consumer):
    return placement_get(cloud, '/allocations/%s' % consumer)['allocations']


def create_group(api, name, policy, rules=None):
    body = {'name': name, 'policy': policy}
    if rules:
        body['rules'] = rules
    return api.post('/os-server-groups', {'server_group': body})[
        'server_group'
    ]


def create_aggregate(api, name, hosts, metadata=None, zone=None):
    body = {'name': name}
    if zone:
        body['availability_zone'] = zone
    agg = api.post('/os-aggregates', {'aggregate': body})['aggregate']
    for host in hosts:
        agg = api.post(
            '/os-aggregates/%s/action' % agg['id'],
            {'add_host': {'host': host}},
        )['aggregate']
    if metadata:
        agg = api.post(
            '/os-aggregates/%s/action' % agg['id'],
            {'set_metadata': {'metadata': metadata}},
        )['aggregate']
    return agg


def dry_run(api, flavor, image=None, hints=None, zone=None):
    body = {'flavorRef': flavor['id']}
    if image:
        body['imageRef'] = image['id']
    if hints:
        body['scheduler_hints'] = hints
    if zone:
        body['availability_zone'] = zone
    return api.post('/os-scheduler/dry-run', body)['dry_run']


def wait_dry_run(
    api, flavor, predicate, what, image=None, hints=None, timeout=30
):
    """Casts to the scheduler (aggregate, service changes) are asynchronous:
    poll the dry run until ``predicate(result)`` holds."""
    return wait_for(
        lambda: (lambda r: r if predicate(r) else None)(
            dry_run(api, flavor, image=image, hints=hints)
        ),
        timeout=timeout,
        interval=0.2,
        what=what,
    )


def ranked_hosts(result):
    return [h['host'] for h in result['ranked']]
