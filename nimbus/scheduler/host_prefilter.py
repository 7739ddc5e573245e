"""What narrows the hosts before any filter runs: only hosts placement
proposed a candidate for, not ``ignore_hosts``, only ``force_hosts`` /
``force_nodes`` when forced, and only the ``requested_destination`` (a
host, a node, a cell) when one is asked. The filters then judge what is left, in every case.
Shared by the scheduler's selection, its slow reference implementation
and the capacity answer."""

from __future__ import annotations

import operator

_UUID = operator.attrgetter('uuid')


def pre_filter_hosts(
    hosts, spec, alloc_reqs, explanation=None, uuids=None, drawn=False
):
    """ignore_hosts / force_hosts / force_nodes / requested_destination
    and 'has an allocation candidate'. ``uuids``: the hosts' uuids, in
    order, when the caller has them; ``drawn``: True when the caller knows
    every host was looked up by a key of ``alloc_reqs``
    (``Candidates.drawn_from``), so each has a candidate."""
    out = hosts
    if alloc_reqs is not None:
        if uuids is None or len(uuids) != len(out):
            uuids = map(_UUID, out)
        if drawn or all(map(alloc_reqs.__contains__, uuids)):
            new = out  # the usual case: every host came from the candidates
        else:
            new = [h for h in out if h.uuid in alloc_reqs]
        if explanation:
            explanation.record_pre(
                'AllocationCandidates',
                out,
                new,
                'no allocation candidate from placement',
            )
        out = new
    if spec.ignore_hosts:
        ignore = set(spec.ignore_hosts)
        new = [h for h in out if h.host not in ignore]
        if explanation:
            explanation.record_pre(
                'IgnoreHosts', out, new, 'host is in ignore_hosts'
            )
        out = new
    if spec.force_hosts or spec.force_nodes:
        fh, fn = set(spec.force_hosts), set(spec.force_nodes)
        new = [
            h
            for h in out
            if (not fh or h.host in fh) and (not fn or h.nodename in fn)
        ]
        if explanation:
            explanation.record_pre(
                'ForceHosts', out, new, 'host is not in force_hosts/nodes'
            )
        out = new
    dest = requested_destination(spec)
    if dest:
        # Nova's requested_destination (a create with a host from 2.74, a
        # move to a chosen host from 2.68): only that host or node, and
        # the filters still run.
        new = [
            h
            for h in out
            if (not dest.get('host') or h.host == dest['host'])
            and (not dest.get('node') or h.nodename == dest['node'])
            and (not dest.get('cell') or h.cell_uuid == dest['cell'])
        ]
        if explanation:
            explanation.record_pre(
                'RequestedDestination',
                out,
                new,
                'host is not the requested destination',
            )
        out = new
    return out


def requested_destination(spec):
    """The spec's ``requested_destination`` ({'host', 'node', 'cell'},
    any may be None; ``cell``: a move that may not leave its cell), or
    None."""
    dest = (getattr(spec, 'extra', None) or {}).get('requested_destination')
    if not isinstance(dest, dict) or not (
        dest.get('host') or dest.get('node') or dest.get('cell')
    ):
        return None
    return dest
