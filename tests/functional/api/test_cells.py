"""GET /os-cells (admin only): cells with their numbers of hosts and
servers, and no connection URLs."""


def test_cells_are_admin_only_and_counted(api):
    api.add_compute('host1')
    api.add_compute('host2')
    assert api.req('GET', '/v2.1/os-cells').status_code == 403
    r = api.admin('GET', '/v2.1/os-cells')
    assert r.status_code == 200
    cells = {c['name']: c for c in r.json['cells']}
    assert cells['cell1']['hosts'] == 2
    assert cells['cell0']['hosts'] == 0
    assert cells['cell1']['servers'] == 0
    assert not any(
        'transport_url' in c or 'database_connection' in c
        for c in cells.values()
    )
