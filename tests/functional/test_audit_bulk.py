"""The audit reads placement in bulk: one ``GET /nimbus/allocations``
however many providers and consumers placement holds (it sent one request
per provider). Against a Placement without that route it walks the
providers, and both readings agree."""

import uuid as uuidlib

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.common import context
from nimbus.conductor import audit
from nimbus import services

CTXT = context.get_admin_context()


class Counting:
    """The cloud's placement client; every request the audit sends through
    it is counted."""

    def __init__(self, client):
        self.client = client
        self.sent = []

    def request(self, ctxt, method, path, **kwargs):
        self.sent.append((method, path))
        return self.client.request(ctxt, method, path, **kwargs)

    def __getattr__(self, name):
        return getattr(self.client, name)


class StockPlacement(Counting):
    """As OpenStack Placement 1.39 answers: it has no ``/nimbus/...``
    route, so a 404 (sent to the real placement under a path it does not
    serve either)."""

    def request(self, ctxt, method, path, **kwargs):
        if path == '/nimbus/allocations':
            path = '/nimbus/no-such-route'
        return super().request(ctxt, method, path, **kwargs)


def _auditor(cloud, placement):
    return audit.from_conf(
        cloud.conf,
        services.api_db(cloud.conf),
        services.cell_directory(cloud.conf),
        placement,
    )


def _add_providers(client, count, consumers):
    """``count`` providers (as many more hosts) with VCPU, and an
    allocation on each for one of ``consumers`` (servers of no cell, so
    the audit reports them orphaned)."""
    for index in range(count):
        rp = str(uuidlib.uuid4())
        assert (
            client.request(
                CTXT,
                'POST',
                '/resource_providers',
                json={'name': 'extra-%d' % index, 'uuid': rp},
            ).status_code
            == 200
        )
        assert (
            client.request(
                CTXT,
                'PUT',
                '/resource_providers/%s/inventories' % rp,
                json={
                    'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': 8}},
                },
            ).status_code
            == 200
        )
        consumer = consumers[index % len(consumers)]
        current = client.get_allocations_for_consumer(CTXT, consumer)
        allocations = {
            rp_uuid: {'resources': entry['resources']}
            for rp_uuid, entry in current.get('allocations', {}).items()
        }
        allocations[rp] = {'resources': {'VCPU': 1}}
        response = client.request(
            CTXT,
            'PUT',
            '/allocations/%s' % consumer,
            json={
                'allocations': allocations,
                'project_id': 'p1',
                'user_id': 'u1',
                'consumer_generation': current.get('consumer_generation'),
                'consumer_type': 'INSTANCE',
            },
        )
        assert response.status_code == 204, response.text


@pytest.mark.slow
def test_the_audit_sends_one_placement_request_at_any_size(make_cloud):
    cloud = make_cloud(
        hosts=2, overrides={'conductor': {'recovery_interval': 0}}
    )
    api = client_mod.ComputeClient(cloud.api_url)
    flavor = api.create_flavor('m1.small', 1, 512, 1)
    image = api.create_image('cirros')
    api.create_server(
        'vm', flavor['id'], image['id'], min_count=2, max_count=2
    )
    wait_for(
        lambda: (
            [s for s in api.servers() if s['status'] == 'ACTIVE'][1:] or None
        ),
        timeout=60,
        what='two servers',
    )
    client = services.placement(cloud.conf)

    small = Counting(client)
    report = _auditor(cloud, small).run(CTXT)
    assert report.disagreements == []
    assert report.checked['consumers'] == 2
    assert small.sent == [('GET', '/nimbus/allocations')]

    # Ten times the providers and three more consumers.
    orphans = [str(uuidlib.uuid4()) for _ in range(3)]
    _add_providers(client, 20, orphans)
    large = Counting(client)
    checker = _auditor(cloud, large)
    report = checker.run(CTXT)
    assert report.checked['consumers'] == 5
    assert {d.uuid for d in report.disagreements} == set(orphans)
    assert large.sent == small.sent

    # Read provider by provider (a Placement without the route), the
    # snapshot is the same.
    stock = StockPlacement(client)
    by_provider = _auditor(cloud, stock).gather(CTXT).consumers
    assert by_provider == checker.gather(CTXT).consumers
    assert len(by_provider) == 5
    # One 404, the provider list, one request per provider (2 + 20).
    assert len(stock.sent) == 1 + 1 + 22
