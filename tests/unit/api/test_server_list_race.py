"""A server the super conductor moves from its build request into its cell
while a list is being read is listed, never lost between the two reads."""

import dataclasses
import datetime
import types

from nimbus.api.objects import server_list

CREATED = datetime.datetime(2026, 11, 27, 12, 0, 0)


@dataclasses.dataclass(frozen=True)
class Cell:
    name: str
    id: int


def _world(monkeypatch):
    """One server, a build request until the first of the two reads
    (build requests, cell) finishes; then the conductor moves it into the
    cell (instance created, build request deleted)."""
    cell = Cell('cell1', 1)
    server = {'uuid': 'srv-1', 'created_at': CREATED, 'vm_state': 'building'}
    world = {'build_requests': [dict(server, cell=None)], 'cell': []}
    reads = []

    def after_a_read(what):
        reads.append(what)
        if len(reads) == 1:
            world['cell'] = [dict(server, cell=cell, host='h1')]
            world['build_requests'] = []

    def build_request_rows(*args):
        rows = list(world['build_requests'])
        after_a_read('build requests')
        return rows

    def read(cells, c, query):
        rows = list(world['cell'])
        after_a_read('cell')
        return rows

    monkeypatch.setattr(server_list, '_build_request_rows', build_request_rows)
    monkeypatch.setattr(server_list, '_read', read)
    cells = types.SimpleNamespace(cells=lambda: [cell])
    return cells, reads


def test_a_server_moving_into_its_cell_during_a_list_is_listed(monkeypatch):
    cells, reads = _world(monkeypatch)
    page, more, unreachable = server_list.list_page(None, cells)
    assert [r['uuid'] for r in page] == ['srv-1']
    assert (more, unreachable) == (False, [])
    assert reads == ['build requests', 'cell']


def test_a_server_in_both_reads_is_listed_once_from_its_cell(monkeypatch):
    cells, _ = _world(monkeypatch)
    page, _, _ = server_list.list_page(None, cells)
    assert len(page) == 1 and page[0]['cell'] is not None
