"""What the scheduler made of placement's last compact answer, to redo only
the part the next answer changed.

At 1000 hosts, successive answers to the boots of one flavor list the same
providers in the same order, with one row changed (the host the previous
boot claimed on) and a few more when computes report. Turning each answer
into allocation requests by root (``driver.candidates_by_root``) and
refreshing a HostState per candidate (``HostManager.
host_states_for_candidates``) looked at every provider in Python: most of
the scheduler's CPU per boot. Both now compare the answer with the last one
in C (:meth:`compact_candidates.Summaries.changed_since`, list equality) and,
when they match provider by provider, reuse what they built from it and
redo the changed providers only.

The outcome is the one the full pass gives: a reused result is used only
when the full pass over the new answer would build the same one, and a
HostState is skipped only when ``HostState.update_from_compact`` would skip
it (its provider's row is unchanged and nothing set or forgot its applied
summary since: ``HostTable.touched``). Anything else (other providers or
order, other resource-class or trait tables, a request that is not flat, a
host added or removed, a candidate placement knows and no cell does) takes
the full pass.
"""

from __future__ import annotations

from nimbus.common.clients import compact_candidates


class RequestsMemo:
    """``driver.candidates_by_root`` of the last compact answer whose
    allocation requests were all flat (provider uuids)."""

    def __init__(self):
        self._last = None  # (summaries, requests, flat, order, raw)

    def by_root(self, body, compute):
        """``compute(body)`` (candidates_by_root), or the same result built
        from the last answer's when ``body`` has the same flat requests over
        the same roots."""
        last, self._last = self._last, None
        flat = body.get('flat_request')
        summaries = body.get('provider_summaries')
        changed_since = getattr(summaries, 'changed_since', None)
        if flat is None or changed_since is None:
            return compute(body)
        requests = body.get('allocation_requests', [])
        if last is not None:
            before, reqs, (resources, suffix), order, raw = last
            diff = changed_since(before)
            if (
                diff is not None
                and not diff[1]  # no provider changed its root
                and flat.suffix == suffix
                and flat.resources == resources
                and requests == reqs
            ):
                self._last = (
                    summaries,
                    requests,
                    (resources, suffix),
                    order,
                    raw,
                )
                return list(order), compact_candidates.Requests(flat, raw)
        order, areqs = compute(body)
        if set(map(type, requests)) <= {str}:
            # the requests by root as they came (before any is looked up)
            raw = dict.copy(areqs)
            self._last = (
                summaries,
                requests,
                (flat.resources, flat.suffix),
                list(order),
                raw,
            )
        return order, areqs


class HostsMemo:
    """The candidates ``HostManager.host_states_for_candidates`` built from
    the last compact answer, when every candidate had a HostState."""

    def __init__(self):
        self._last = None

    def forget(self) -> None:
        self._last = None

    def reuse(self, members, table, summaries, roots):
        """``(hosts, uuids, slots)`` of the last answer, its HostStates
        refreshed from ``summaries`` where its rows changed or the host was
        touched since; None when the full pass must run. ``members``: the
        host manager's count of HostState additions and removals."""
        last, self._last = self._last, None
        if last is None:
            return None
        before, seen_members, order, hosts, uuids, slots, at, pos = last
        if seen_members != members or list(roots) != order:
            return None
        diff = summaries.changed_since(before)
        if diff is None:
            return None
        redo = {at[rp] for rp in diff[0] if rp in at}
        for hs in table.touched:
            i = pos.get(hs)
            if i is not None:
                redo.add(i)
        for i in sorted(redo):
            rp = uuids[i]
            if rp in summaries:
                hosts[i].update_from_compact(summaries, rp)
        table.touched.clear()
        self._last = (summaries, members, order, hosts, uuids, slots, at, pos)
        return list(hosts), list(uuids), slots.copy()

    def remember(self, members, table, summaries, roots, hosts, uuids, slots):
        """After a full pass over ``summaries`` in which every root of
        ``roots`` had a HostState (``hosts``, ``uuids`` and ``slots`` in
        that order)."""
        table.touched.clear()
        self._last = (
            summaries,
            members,
            list(roots),
            list(hosts),
            list(uuids),
            slots.copy(),
            {u: i for i, u in enumerate(uuids)},
            {hs: i for i, hs in enumerate(hosts)},
        )
