"""The scheduler reads placement's compact answer row by row
(compact_answer.py): what it reads is what ``orjson.loads`` and
``compact_candidates.expand`` read, whatever the answers before it were and
however the body is laid out, and it decides the same."""

import random

import orjson
import pytest
import requests
from hypothesis import given, settings, strategies as st

from nimbus.common import context as ctx_mod
from nimbus.common.clients import compact_candidates
from nimbus.common.clients.placement import PlacementClient
from nimbus.scheduler import compact_answer, driver, testing
from nimbus.scheduler.host_manager import HostManager
from tests.unit.scheduler.test_compact_candidates import (
    Placement,
    _view,
    compact_of,
)


def _uuid(i):
    return '%08d-0000-4000-8000-%012d' % (i, i)


def _body(rows, requests=None, rcs=('VCPU', 'MEMORY_MB'), traits=(('T',),)):
    """A compact body as placement writes it (orjson, rows last)."""
    return {
        'compact': 1,
        'flat': {'resources': {'VCPU': 1}, 'suffix': ''},
        'allocation_requests': list(rows) if requests is None else requests,
        'resource_classes': list(rcs),
        'trait_sets': [list(t) for t in traits],
        'provider_summaries': rows,
    }


def _rows(n, used=0, child_every=0):
    rows = {}
    for i in range(n):
        u = _uuid(i)
        rows[u] = [None, u, 0, [0, 8, used + i % 3, 1, 4096, 512]]
        if child_every and i % child_every == 0:
            c = _uuid(1000 + i)
            rows[c] = [u, u, 0, [0, 2, 0]]
    return rows


def _same(got, content):
    """``got`` (what the reader read) is what expand(orjson.loads) reads."""
    want = compact_candidates.expand(orjson.loads(content))
    assert got['allocation_requests'] == want['allocation_requests']
    flat, wflat = got['flat_request'], want['flat_request']
    assert (flat is None) == (wflat is None)
    if flat is not None:
        assert (flat.resources, flat.suffix) == (wflat.resources, wflat.suffix)
    summaries, wsum = got['provider_summaries'], want['provider_summaries']
    assert list(summaries) == list(wsum)
    assert len(summaries) == len(wsum)
    for rp in wsum:
        assert rp in summaries
        assert summaries[rp] == wsum[rp]
        assert summaries.get(rp) == wsum.get(rp)
        assert summaries.root(rp) == wsum.root(rp)
        assert summaries.key(rp) == wsum.key(rp)
    assert summaries.get('nowhere') is None and 'nowhere' not in summaries
    assert summaries.root('nowhere') == 'nowhere'
    return want


def test_reads_what_orjson_reads():
    reader = compact_answer.Reader()
    for body in (_body(_rows(5, child_every=2)), _body({}), _body(_rows(1))):
        content = orjson.dumps(body)
        got = reader.read(content)
        assert isinstance(got['provider_summaries'], compact_answer.Rows)
        _same(got, content)


def test_a_changed_row_alone_is_decoded_again():
    reader = compact_answer.Reader()
    rows = _rows(6)
    first = reader.read(orjson.dumps(_body(rows)))
    second_rows = dict(rows)
    moved = _uuid(3)
    second_rows[moved] = [None, moved, 0, [0, 8, 5, 1, 4096, 512]]
    content = orjson.dumps(_body(second_rows, requests=list(rows)))
    second = reader.read(content)
    _same(second, content)
    old, new = first['provider_summaries'], second['provider_summaries']
    assert new.changed_since(old) == ([moved], False)
    # the head did not change: the very same requests; the other rows are
    # the last answer's objects
    assert second['allocation_requests'] is first['allocation_requests']
    for rp in rows:
        if rp != moved:
            assert new.key(rp)[1] is old.key(rp)[1]
    # the same again: nothing changed
    third = reader.read(content)
    assert third['provider_summaries'].changed_since(new) == ([], False)


def test_changed_since_as_the_summaries_say():
    reader = compact_answer.Reader()
    rows = _rows(4)
    a = reader.read(orjson.dumps(_body(rows)))['provider_summaries']
    rooted = dict(rows)
    u = _uuid(2)
    rooted[u] = [_uuid(0), _uuid(0), 0, rows[u][3]]
    b = reader.read(orjson.dumps(_body(rooted)))['provider_summaries']
    assert b.changed_since(a) == ([u], True)
    assert b.changed_since(None) is None
    # answers read apart compare too (each against its own last)
    c = compact_answer.Reader().read(orjson.dumps(_body(rows)))
    assert b.changed_since(c['provider_summaries']) == ([u], True)
    other = compact_candidates.expand(orjson.loads(orjson.dumps(_body(rows))))
    assert b.changed_since(other['provider_summaries']) is None


@pytest.mark.parametrize(
    'change', ['reorder', 'drop', 'add', 'traits', 'classes']
)
def test_other_providers_or_tables_are_read_whole(change):
    reader = compact_answer.Reader()
    rows = _rows(5)
    first = reader.read(orjson.dumps(_body(rows)))['provider_summaries']
    body = _body(rows)
    if change == 'reorder':
        body = _body(dict(reversed(list(rows.items()))))
    elif change == 'drop':
        body = _body(dict(list(rows.items())[1:]))
    elif change == 'add':
        body = _body(_rows(6))
    elif change == 'traits':
        body = _body(rows, traits=(('U',),))
    elif change == 'classes':
        body = _body(rows, rcs=('PCPU', 'MEMORY_MB'))
    content = orjson.dumps(body)
    got = reader.read(content)
    _same(got, content)
    assert got['provider_summaries'].changed_since(first) is None


def test_a_swap_of_two_providers_is_read_whole():
    reader = compact_answer.Reader()
    rows = _rows(4)
    reader.read(orjson.dumps(_body(rows)))
    items = list(rows.items())
    items[1], items[2] = items[2], items[1]
    content = orjson.dumps(_body(dict(items)))
    _same(reader.read(content), content)


def _spaced(content):
    return orjson.dumps(orjson.loads(content), option=orjson.OPT_INDENT_2)


@pytest.mark.parametrize(
    'layout',
    [
        _spaced,
        # the rows first
        lambda c: orjson.dumps(
            dict(
                provider_summaries=orjson.loads(c)['provider_summaries'],
                **{
                    k: v
                    for k, v in orjson.loads(c).items()
                    if k != 'provider_summaries'
                },
            )
        ),
        # a provider listed twice: the last row wins, as in orjson
        lambda c: c[:-2] + b',' + c[c.rindex(b'{') + 1 : -2] + b'}}',
    ],
)
def test_another_layout_is_read_by_orjson(layout):
    reader = compact_answer.Reader()
    rows = _rows(4)
    reader.read(orjson.dumps(_body(rows)))
    content = layout(orjson.dumps(_body(rows)))
    got = reader.read(content)
    want = compact_candidates.expand(orjson.loads(content))
    assert dict(got['provider_summaries']) == dict(want['provider_summaries'])
    assert got['allocation_requests'] == want['allocation_requests']
    # and the next answer is read again from scratch, the same
    content = orjson.dumps(_body(rows))
    _same(reader.read(content), content)


@pytest.mark.parametrize(
    'row', [b'[null,"r",0,[0,8]]', b'[null,"r",0,[0,8,1],9]', b'{"a":1}']
)
def test_a_row_that_is_no_summary_row_is_left_to_orjson(row):
    reader = compact_answer.Reader()
    rows = _rows(3)
    content = orjson.dumps(_body(rows))
    reader.read(content)
    first = b'"%s":' % _uuid(0).encode()
    at = content.index(first) + len(first)
    end = content.index(b']]', at) + 2
    bad = content[:at] + row + content[end:]
    got = reader.read(bad)['provider_summaries']
    assert isinstance(got, compact_candidates.Summaries)
    assert list(got) == list(rows)


def test_a_malformed_body_fails_as_orjson_fails():
    reader = compact_answer.Reader()
    with pytest.raises(orjson.JSONDecodeError):
        reader.read(b'{"compact":1,"provider_summaries":{"a":[}}')


_ROW = st.tuples(
    st.sampled_from([0, 1, 2]),  # parent: none, the first provider, itself
    st.integers(0, 1),  # trait set
    st.lists(st.integers(0, 2**40), min_size=1, max_size=4),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 7), min_size=0, max_size=8, unique=True),
            st.lists(_ROW, min_size=8, max_size=8),
            st.booleans(),  # the same requests as the last answer
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_sequence_of_answers(answers):
    """Each answer is read as orjson reads it, and changed_since against
    the last one says what compact_candidates.Summaries says."""
    reader = compact_answer.Reader()
    last = last_want = None
    for present, rows_in, same_requests in answers:
        rows = {}
        for i in present:
            parent, j, used = rows_in[i]
            u = _uuid(i)
            res = []
            for rc, n in enumerate(used[:2]):
                res += [rc, 2**41, n]
            p = (
                None
                if parent == 0
                else (_uuid(present[0]) if parent == 1 else u)
            )
            rows[u] = [p, p or u, j, res]
        requests_ = list(rows)[:: 2 if same_requests else 1]
        content = orjson.dumps(
            _body(rows, requests=requests_, traits=(('A',), ('B', 'C')))
        )
        got = reader.read(content)
        want = _same(got, content)
        if last is not None:
            assert got['provider_summaries'].changed_since(last) == want[
                'provider_summaries'
            ].changed_since(last_want)
        last, last_want = got['provider_summaries'], want['provider_summaries']


# -- the scheduler over the REST client ------------------------------------


class _Session:
    """A placement behind PlacementClient: GET /allocation_candidates
    answers ``placement``'s compact body as bytes (the header says so
    unless ``compact`` is False), PUT /allocations claims."""

    def __init__(self, placement, compact=True):
        self.placement = placement
        self.compact = compact
        self.gets = 0

    def request(
        self, method, url, params=None, json=None, headers=None, **_kw
    ):
        response = requests.Response()
        response.status_code = 204
        response._content = b''
        if method == 'GET':
            self.gets += 1
            body = self.placement.get_allocation_candidates(None, params)
            response.status_code = 200
            if self.compact and headers.get(compact_candidates.HEADER):
                body = compact_of(body)
                response.headers[compact_candidates.HEADER] = (
                    compact_candidates.VERSION
                )
            response._content = orjson.dumps(body)
        elif method == 'PUT':
            self.placement.claim_resources(None, None, json, None, None)
        return response


def _rest_scheduler(conf, n, seed, compact=True):
    hm = HostManager(conf, testing.make_source(n, seed=seed))
    hm.refresh()
    placement = Placement(hm)
    client = PlacementClient(
        'http://placement', session=_Session(placement, compact)
    )
    return driver.Scheduler(conf, client, hm)


@pytest.mark.parametrize('seed', [1, 2])
def test_same_decisions_read_row_by_row(conf, seed):
    rng = random.Random(seed)
    plain = _rest_scheduler(conf, 30, seed, compact=False)
    brief = _rest_scheduler(conf, 30, seed)
    ctxt = ctx_mod.get_admin_context()
    decided = 0
    for step in range(40):
        if step % 5 == 4:
            cn = testing.compute_node(step % 30, random.Random(step))
            for s in (plain, brief):
                s.host_manager.update_compute_node(dict(cn))
        kw = dict(
            vcpus=rng.choice([1, 2, 4]),
            memory_mb=rng.choice([512, 2048]),
            root_gb=rng.choice([1, 10]),
            num=rng.choice([1, 1, 1, 3]),
        )
        a, b = testing.spec(**kw), testing.spec(**kw)
        b.instance_uuids = list(a.instance_uuids)
        try:
            want = _view(plain.select_destinations(ctxt, a))
        except Exception as exc:  # noqa: BLE001 - the same must happen
            with pytest.raises(type(exc)):
                brief.select_destinations(ctxt, b)
            continue
        assert _view(brief.select_destinations(ctxt, b)) == want
        decided += 1
    assert decided > 10
    assert isinstance(brief._answers._last[3], compact_answer.Rows), (
        'the compact answers were read row by row'
    )


def test_a_standard_answer_from_the_rest_client(conf):
    sched = _rest_scheduler(conf, 5, 1, compact=False)
    spec = testing.spec(vcpus=1, memory_mb=512, root_gb=1)
    assert sched.select_destinations(ctx_mod.get_admin_context(), spec)
    assert sched._answers._last is None


def test_another_placement_client_is_asked_again(conf):
    sched = _rest_scheduler(conf, 5, 1)
    ctxt = ctx_mod.get_admin_context()
    sched.select_destinations(ctxt, testing.spec(vcpus=1, memory_mb=512))
    other = _rest_scheduler(conf, 5, 1).placement
    sched.placement = other
    sched.select_destinations(ctxt, testing.spec(vcpus=1, memory_mb=512))
    assert other.session.gets == 1


def test_successive_answers_are_followed_not_split(monkeypatch):
    """Only the first answer, and one listing other providers, is split
    into its rows; the others are compared with the last one's bytes."""
    splits = []
    split = compact_answer.answer_rows.split

    def counted(*args):
        splits.append(1)
        return split(*args)

    monkeypatch.setattr(compact_answer.answer_rows, 'split', counted)
    reader = compact_answer.Reader()
    rows = _rows(50)
    for step in range(20):
        u = _uuid(step % 50)
        rows = dict(rows)
        rows[u] = [None, u, 0, [0, 8, 10**step, 1, 4096, 512]]
        content = orjson.dumps(_body(rows, requests=list(_rows(50))))
        _same(reader.read(content), content)
    assert len(splits) == 1
    content = orjson.dumps(_body(_rows(49)))
    _same(reader.read(content), content)
    assert len(splits) == 2
