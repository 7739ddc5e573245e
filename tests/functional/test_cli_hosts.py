"""``nimbus hosts`` reads in bulk (issue 22: two placement requests per
provider took 53 s at 1000 hosts): the number of HTTP requests it makes is
the same for a cloud of 2 hosts and one of 5, and what it shows per
provider and resource class is what placement holds (the per-provider
reading it did before is the oracle here): the used amounts, total,
reserved, and as capacity ``(total - reserved) * allocation_ratio``."""

import json
import threading

import pytest
import requests

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.cmd import cli


def _placement_view(placement_url):
    """What ``nimbus hosts`` read before: every provider, its inventories
    and usages (two requests per provider)."""
    session = requests.Session()
    session.headers.update(
        {
            'X-Auth-Token': 'admin:admin',
            'X-Roles': 'admin',
            'OpenStack-API-Version': 'placement 1.39',
        }
    )

    def get(path):
        response = session.get(placement_url + path, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    view = {}
    for rp in get('/resource_providers')['resource_providers']:
        inventories = get('/resource_providers/%s/inventories' % rp['uuid'])
        usages = get('/resource_providers/%s/usages' % rp['uuid'])
        view[rp['name']] = {
            'parent': rp['parent_provider_uuid'],
            'resources': {
                rc: {
                    'used': usages['usages'].get(rc, 0),
                    'total': inv['total'],
                    'reserved': inv['reserved'],
                    'capacity': int(
                        (inv['total'] - inv['reserved'])
                        * inv['allocation_ratio']
                    ),
                }
                for rc, inv in inventories['inventories'].items()
            },
        }
    return view


class _Requests:
    """Counts the HTTP requests this thread sends (the CLI's, not the
    in-process cloud's own threads')."""

    def __init__(self, monkeypatch):
        self.urls = []
        thread = threading.get_ident()
        send = requests.adapters.HTTPAdapter.send

        def counting(adapter, request, **kwargs):
            if threading.get_ident() == thread:
                self.urls.append(request.url)
            return send(adapter, request, **kwargs)

        monkeypatch.setattr(requests.adapters.HTTPAdapter, 'send', counting)


def _cloud_with_a_server(make_cloud, hosts):
    cloud = make_cloud(hosts=hosts)
    api = client_mod.ComputeClient(cloud.api_url)
    flavor = api.create_flavor('m1.small', 2, 2048, 20)
    image = api.create_image('cirros')
    uuid = api.create_server('vm-1', flavor['id'], image['id'])['server']['id']
    wait_for(
        lambda: api.server(uuid)['status'] == 'ACTIVE' or None,
        timeout=60,
        what='vm-1 ACTIVE',
    )
    return cloud


def _nimbus_hosts(cloud, capsys, monkeypatch, *extra):
    capsys.readouterr()
    counted = _Requests(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        cli.main(
            ['hosts', '--format', 'json', '--url', cloud.api_url]
            + ['--placement-url', cloud.placement_url]
            + list(extra)
        )
    monkeypatch.undo()
    assert exit_.value.code in (0, None)
    return json.loads(capsys.readouterr().out), counted.urls


@pytest.mark.slow
def test_hosts_reads_in_bulk_and_shows_what_placement_holds(
    make_cloud, capsys, monkeypatch
):
    requests_made = []
    for size in (2, 5):
        cloud = _cloud_with_a_server(make_cloud, size)
        shown, urls = _nimbus_hosts(cloud, capsys, monkeypatch)
        requests_made.append(len(urls))
        assert urls == [cloud.placement_url + '/nimbus/provider_usages']
        before = _placement_view(cloud.placement_url)
        assert [h['host'] for h in shown] == sorted(before)
        assert sorted(before) == sorted(cloud.host_names())
        for host in shown:
            assert host['resources'] == before[host['host']]['resources']
            assert (
                host['parent_provider_uuid'] == before[host['host']]['parent']
            )
            assert list(host['resources']) == ['VCPU', 'MEMORY_MB', 'DISK_GB']
        busy = [h for h in shown if h['resources']['VCPU']['used']]
        assert len(busy) == 1
        assert busy[0]['resources']['MEMORY_MB']['used'] == 2048
        assert busy[0]['resources']['VCPU']['used'] == 2
        assert busy[0]['resources']['DISK_GB']['used'] == 20
        # the host's reserved memory is not offered
        memory = shown[0]['resources']['MEMORY_MB']
        assert memory['reserved'] == 512
        assert memory['capacity'] < memory['total']
    assert requests_made[0] == requests_made[1]


class _StockPlacement:
    """A placement reader that answers 404 for Nimbus's own routes, as an
    OpenStack Placement does: ``nimbus hosts`` must walk the providers."""

    def __init__(self, reader):
        self.reader = reader
        self.paths = []

    def get(self, path, missing_ok=False):
        self.paths.append(path)
        if path.startswith('/nimbus/'):
            assert missing_ok
            return None
        return self.reader.get(path, missing_ok=missing_ok)


def test_against_stock_placement_it_walks_the_providers(make_cloud):
    from nimbus.cmd import cli_views

    cloud = _cloud_with_a_server(make_cloud, 2)
    bulk = cli_views.provider_usage(
        cli_views.PlacementReader(cloud.placement_url)
    )
    stock = _StockPlacement(cli_views.PlacementReader(cloud.placement_url))
    walked = cli_views.provider_usage(stock)
    assert walked == bulk
    assert len(stock.paths) == 2 + 2 * len(bulk)
