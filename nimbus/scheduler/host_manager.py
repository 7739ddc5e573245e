"""Host state cache: HostStates kept in memory and updated from events.

The data comes through a :class:`~nimbus.scheduler.host_source.HostInfoSource`
(DB-backed in production, see ``db_source.py``; ``host_source.py`` has an in-memory
one for tests and benchmarks). A full load happens once (and on demand); afterwards
computes, the API and conductors send events (``update_aggregates``,
``update_instance_info``, ``delete_instance_info``, compute node and service updates)
which touch only the affected hosts. Per request, placement's
provider summaries refresh capacity and usage of the returned providers only.

Consistency: a decision (``with host_manager.decision():``) holds the lock from
placement's answer to the last claim, so filters never see an ``instances`` dict
change under them and a reload cannot overwrite what the decision consumed. Events
never wait for a decision: one that finds the lock taken is queued and applied, in
arrival order, as soon as the holder lets go.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time

import numpy as np

from oslo_log import log as logging

from nimbus.scheduler import answer_memo, host_table, instance_events
from nimbus.scheduler import tombstones
from nimbus.scheduler.host_source import HostInfoSource
from nimbus.scheduler.host_source import (  # noqa: F401 - for plugins' tests
    InMemoryHostInfoSource,
)
from nimbus.scheduler.host_state import HostState

LOG = logging.getLogger(__name__)

COMPUTE_BINARIES = ('nimbus-compute', 'compute')
# Full reloads the service reload makes for a compute service whose node
# record no cell has yet (see HostManager.refresh_services).
UNKNOWN_HOST_RELOADS = 3


def _compute_hosts(services) -> set:
    """The hosts of the compute services among ``services``."""
    return {
        s['host']
        for s in services
        if s.get('binary', 'nimbus-compute') in COMPUTE_BINARIES
    }


class HostManager(instance_events.InstanceEvents):
    """Owns the HostStates. Thread-safe for events vs. requests through one lock."""

    def __init__(self, conf, source: HostInfoSource):
        self.conf = conf
        self.source = source
        self.lock = threading.RLock()
        # One read of the source at a time: the periodic reloads (services
        # every few seconds, everything every minute) and the on-demand
        # ones would otherwise overlap, each holding a connection to every
        # database and reading the same rows twice.
        self._reading = threading.Lock()
        self._depth = 0  # nesting of the lock's holder
        self._pending: collections.deque = (
            collections.deque()
        )  # deferred events
        self._by_uuid: dict[str, HostState] = {}
        self._by_host: dict[str, list[HostState]] = {}
        # The hosts' numeric facts as arrays (host_table.py), for vectorised
        # filters and weighers: every HostState here is attached to it.
        self.table = host_table.HostTable()
        self._aggregates: dict = {}  # aggregate id -> dict
        self._host_aggs: dict[str, list] = {}  # host -> [aggregate ids]
        self._groups: dict[str, dict] = {}
        # Deleted instances and groups: a late event cannot bring them back.
        self._gone_instances = tombstones.Tombstones()
        self._gone_groups = tombstones.Tombstones()
        self.loaded = False
        # HostStates added or removed so far, and the candidates of the
        # last compact answer (answer_memo.py)
        self._members = 0
        self._answer = answer_memo.HostsMemo()
        # time.monotonic() of the last read of the service records
        self.services_read_at = None
        # compute service host -> the full loads in a row that found no
        # compute node record for it (see refresh_services)
        self._unknown_hosts: dict = {}

    # ------------------------------------------------------------------ locking
    @contextlib.contextmanager
    def locked(self):
        """Hold the host states still (re-entrant). Events that arrive meanwhile are
        queued and applied when the outermost holder lets go."""
        with self.lock:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
        self._drain()

    def decision(self):
        """The lock for the whole of one scheduling decision."""
        return self.locked()

    def _submit(self, fn, *args) -> None:
        """Apply an event now if nobody holds the host states, else queue it."""
        self._pending.append((fn, args))
        self._drain()

    def _drain(self) -> None:
        while self._pending:
            if not self.lock.acquire(blocking=False):
                return  # the holder drains when it lets go
            try:
                if self._depth:
                    return  # this thread is inside a decision: not now
                while self._pending:
                    fn, args = self._pending.popleft()
                    try:
                        fn(*args)
                    except Exception:  # one bad event must not stop the others
                        LOG.exception('scheduler event %s failed', fn.__name__)
            finally:
                self.lock.release()

    @property
    def pending_events(self) -> int:
        return len(self._pending)

    # ------------------------------------------------------------------ full load
    @property
    def default_az(self):
        return self.conf.scheduler.default_availability_zone

    def refresh(self) -> None:
        """Reload everything from the source (startup, or a periodic safety net)."""
        with self._reading:
            nodes = self.source.compute_nodes()
            services = {
                s['host']: s
                for s in self.source.services()
                if s.get('binary', 'nimbus-compute') in COMPUTE_BINARIES
            }
            self.services_read_at = time.monotonic()
            aggs = self.source.aggregates()
            instances = self.source.instances_by_host()
            groups = self.source.server_groups()
        with self.locked():
            by_uuid, by_host = {}, {}
            for cn in nodes:
                old = self._by_uuid.get(cn['uuid'])
                hs = old or HostState(
                    cn['host'],
                    cn.get('hypervisor_hostname'),
                    cn['uuid'],
                    cn.get('cell_uuid'),
                )
                hs.update_from_compute_node(cn)
                svc = services.get(cn['host'])
                if svc is not None:
                    hs.update_from_service(svc)
                hs.set_instances(
                    [
                        i
                        for i in instances.get(cn['host'], [])
                        if i['uuid'] not in self._gone_instances
                    ]
                )
                by_uuid[cn['uuid']] = hs
                by_host.setdefault(cn['host'], []).append(hs)
            for uuid, hs in self._by_uuid.items():
                if by_uuid.get(uuid) is not hs:
                    self.table.detach(hs)
            for hs in by_uuid.values():
                self.table.attach(hs)
            self._by_uuid, self._by_host = by_uuid, by_host
            self._unknown_hosts = {
                h: self._unknown_hosts.get(h, 0) + 1
                for h in services
                if h not in by_host
            }
            self._members += 1
            self._set_aggregates(aggs)
            self._groups = {
                g['uuid']: g
                for g in groups
                if g['uuid'] not in self._gone_groups
            }
            self.loaded = True

    def _set_aggregates(self, aggs) -> None:
        self._aggregates = {self._agg_id(a): a for a in aggs}
        self._host_aggs = {}
        for agg_id, a in self._aggregates.items():
            for h in a.get('hosts', []):
                self._host_aggs.setdefault(h, []).append(agg_id)
        for host, states in self._by_host.items():
            self._apply_host_aggs(host, states)

    @staticmethod
    def _agg_id(agg):
        return agg.get('uuid') or agg.get('id')

    def _apply_host_aggs(self, host, states=None) -> None:
        aggs = [self._aggregates[i] for i in self._host_aggs.get(host, [])]
        for hs in (
            states if states is not None else self._by_host.get(host, [])
        ):
            hs.set_aggregates(aggs, self.default_az)

    def ensure_loaded(self) -> None:
        if not self.loaded:
            self.refresh()

    # ------------------------------------------------------------------ lookups
    def all_host_states(self) -> list[HostState]:
        self.ensure_loaded()
        return list(self._by_uuid.values())

    def host_state(self, uuid) -> HostState | None:
        return self._by_uuid.get(uuid)

    def states_for_host(self, host) -> list[HostState]:
        return list(self._by_host.get(host, []))

    def aggregates(self) -> list[dict]:
        self.ensure_loaded()
        return list(self._aggregates.values())

    def server_group(self, uuid) -> dict | None:
        self.ensure_loaded()
        return self._groups.get(uuid)

    def host_states_for_candidates(
        self, provider_summaries: dict, root_uuids
    ) -> list[HostState]:
        """HostStates for placement's candidates, in candidate order, refreshed from the
        provider summaries (capacity, usage, traits). A provider unknown to the cache
        (a compute that registered since the last load) triggers one reload; providers
        still unknown after it have no compute node in any cell and are skipped.

        ``root_uuids``: the root provider uuids in placement's order, or the
        allocation requests by root (``driver.candidates_by_root``'s dict,
        whose keys are that order). Given the dict, the answer remembers it
        (``Candidates.requests``): every host in it has an allocation request
        there, so the selection need not look each one up again."""
        self.ensure_loaded()
        # a compact answer's summaries compare without being built
        compact = hasattr(provider_summaries, 'key')
        if compact:
            found = self._answer.reuse(
                self._members, self.table, provider_summaries, root_uuids
            )
            if found is not None:
                return self._candidates(root_uuids, *found)
        if not all(map(self._by_uuid.__contains__, root_uuids)):
            # A compute registered since the last load: reload once rather
            # than guess its cell and service state.
            self.refresh()
        out, uuids, slots = [], [], []
        by_uuid = self._by_uuid
        skipped = False
        for rp in root_uuids:
            hs = by_uuid.get(rp)
            if hs is None:
                # Placement knows a provider no cell database has a compute
                # node for (yet): there is no cell to build it in.
                skipped = True
                continue
            if compact:
                if rp in provider_summaries:
                    hs.update_from_compact(provider_summaries, rp)
            else:
                summary = provider_summaries.get(rp)
                if summary is not None:
                    hs.update_from_provider_summary(summary)
            out.append(hs)
            uuids.append(rp)
            slots.append(hs._slot)
        # Every HostState of the cache has a row in the table.
        slots = np.array(slots, dtype=np.intp)
        if compact:
            if skipped:
                self._answer.forget()
                self.table.touched.clear()
            else:
                self._answer.remember(
                    self._members,
                    self.table,
                    provider_summaries,
                    root_uuids,
                    out,
                    uuids,
                    slots,
                )
        return self._candidates(root_uuids, out, uuids, slots)

    def _candidates(self, root_uuids, hosts, uuids, slots):
        return host_table.Candidates(
            hosts,
            self.table,
            slots,
            uuids,
            requests=root_uuids if isinstance(root_uuids, dict) else None,
        )

    # ------------------------------------------------------------------ events
    # Each public event returns at once: it is applied now, or queued behind the
    # decision that holds the host states (see ``locked``).

    def update_compute_node(self, cn: dict) -> None:
        """A compute node record changed (or a new one appeared)."""
        self._submit(self._update_compute_node, cn)

    def _update_compute_node(self, cn: dict) -> None:
        hs = self._by_uuid.get(cn['uuid'])
        if hs is None:
            hs = HostState(
                cn['host'],
                cn.get('hypervisor_hostname'),
                cn['uuid'],
                cn.get('cell_uuid'),
            )
            self._by_uuid[cn['uuid']] = hs
            self._by_host.setdefault(cn['host'], []).append(hs)
            self._members += 1
            self._apply_host_aggs(cn['host'], [hs])
            self.table.attach(hs)
        hs.update_from_compute_node(cn)

    def remove_compute_node(self, uuid: str) -> None:
        self._submit(self._remove_compute_node, uuid)

    def _remove_compute_node(self, uuid: str) -> None:
        hs = self._by_uuid.pop(uuid, None)
        if hs is not None:
            self._members += 1
            self.table.detach(hs)
            states = self._by_host.get(hs.host, [])
            if hs in states:
                states.remove(hs)

    def refresh_services(self) -> None:
        """Reload only the service records (up/down, disabled): one small
        query per cell, cheap enough to run every few seconds. A compute
        service of a host the cache has no HostState for (a compute that
        registered since the last full load) is loaded now, with
        everything else, by this periodic reader, instead of by the next
        decision whose candidates name it (a full reload inside a
        request). A compute's service row may come before its node record:
        a host still unknown after :data:`UNKNOWN_HOST_RELOADS` such reloads
        causes no more of them (the periodic full reload, or the first
        decision it is a candidate of, finds it)."""
        if not self.loaded:
            self.refresh()
            return
        with self._reading:
            services = self.source.services()
            self.services_read_at = time.monotonic()
        tries = self._unknown_hosts
        for host in _compute_hosts(services).difference(self._by_host):
            if tries.get(host, 0) < UNKNOWN_HOST_RELOADS:
                self.refresh()
                return
        for svc in services:
            self.update_service(svc)

    def services_older_than(self, seconds: float) -> bool:
        """True unless the service records were read less than
        ``seconds`` ago."""
        read_at = self.services_read_at
        return read_at is None or time.monotonic() - read_at >= seconds

    def update_service(self, svc: dict) -> None:
        self._submit(self._update_service, svc)

    def _update_service(self, svc: dict) -> None:
        for hs in self._by_host.get(svc['host'], []):
            hs.update_from_service(svc)

    def update_aggregates(self, aggregates: list[dict]) -> None:
        """An aggregate was created or changed (hosts or metadata)."""
        self._submit(self._update_aggregates, aggregates)

    def _update_aggregates(self, aggregates: list[dict]) -> None:
        touched = set()
        for agg in aggregates:
            agg_id = self._agg_id(agg)
            old = self._aggregates.get(agg_id)
            if old is not None:
                touched.update(old.get('hosts', []))
                for h in old.get('hosts', []):
                    ids = self._host_aggs.get(h, [])
                    if agg_id in ids:
                        ids.remove(agg_id)
            self._aggregates[agg_id] = agg
            for h in agg.get('hosts', []):
                self._host_aggs.setdefault(h, []).append(agg_id)
            touched.update(agg.get('hosts', []))
        for h in touched:
            self._apply_host_aggs(h)

    def delete_aggregate(self, aggregate: dict) -> None:
        self._submit(self._delete_aggregate, aggregate)

    def _delete_aggregate(self, aggregate: dict) -> None:
        agg_id = self._agg_id(aggregate)
        old = self._aggregates.pop(agg_id, None)
        if old is None:
            return
        for h in old.get('hosts', []):
            ids = self._host_aggs.get(h, [])
            if agg_id in ids:
                ids.remove(agg_id)
            self._apply_host_aggs(h)

    def update_server_group(self, group: dict) -> None:
        self._submit(self._update_server_group, group)

    def _update_server_group(self, group: dict) -> None:
        if group['uuid'] in self._gone_groups:
            LOG.debug('stale update of deleted group %s', group['uuid'])
            return
        self._groups[group['uuid']] = group

    def delete_server_group(self, group_uuid: str) -> None:
        """A server group was deleted: a ``group`` hint naming it finds nothing."""
        self._submit(self._delete_server_group, group_uuid)

    def _delete_server_group(self, group_uuid: str) -> None:
        self._gone_groups.bury(group_uuid)
        self._groups.pop(group_uuid, None)

    def record_build_result(self, host: str, failed: bool) -> None:
        """Failed builds push a host down (BuildFailureWeigher); a success resets it."""
        self._submit(self._record_build_result, host, failed)

    def _record_build_result(self, host: str, failed: bool) -> None:
        for hs in self._by_host.get(host, []):
            hs.failed_builds = hs.failed_builds + 1 if failed else 0
