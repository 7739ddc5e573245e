"""The scheduling service logic behind the RPC manager: prefilters -> placement ->
host states -> filter/weigh/select with placement claims.

Dependencies are injected: a placement client (``get_allocation_candidates``,
``claim_resources``, ``remove_allocations`` as in contracts.md), a
:class:`~nimbus.scheduler.host_manager.HostManager` and, optionally, ``record(ctxt,
outcome, spec, detail)`` that stores explanations for admins.
"""

from __future__ import annotations

import copy
import threading
import time

from oslo_log import log as logging

from nimbus.common.clients import compact_candidates
from nimbus.common.clients import placement as placement_client
from nimbus.common.objects.request_spec import InstanceGroup, RequestSpec
from nimbus.scheduler import answer_memo, compact_answer, exception
from nimbus.scheduler import request_filters
from nimbus.scheduler import selection
from nimbus.scheduler.explain import Explanation

LOG = logging.getLogger(__name__)


def root_of(provider_summaries: dict, rp: str) -> str:
    summary = provider_summaries.get(rp) or {}
    return summary.get('root_provider_uuid') or rp


def candidates_by_root(body: dict, is_host=None) -> tuple[list[str], dict]:
    """Root provider uuids in placement's order, and root -> its allocation requests
    (the dict's keys are in that order too; all of a root's requests, in
    placement's order: a host with two GPUs on child providers has one
    per GPU, and the second instance of a request needs the other one).
    ``is_host(root_uuid)`` tells a compute node's tree from a sharing provider when an
    allocation request spans both."""
    summaries = body.get('provider_summaries', {})
    # a compact answer's summaries know roots without building a summary
    root_fn = getattr(summaries, 'root', None)
    flat = body.get('flat_request')
    order = []
    if flat is not None:
        # a compact answer: flat requests stay provider uuids until looked up
        raw = {}
        for areq in body.get('allocation_requests', []):
            if areq.__class__ is str:
                root = root_fn(areq)
            else:
                root = _root_of_request(areq, summaries, root_fn, is_host)
                if root is None:
                    continue
            entry = raw.get(root)
            if entry is None:
                raw[root] = [areq]
                order.append(root)
            else:
                entry.append(areq)
        areqs = compact_candidates.Requests(flat, raw)
        return order, areqs
    areqs = {}
    for areq in body.get('allocation_requests', []):
        allocs = areq.get('allocations', {})
        if len(allocs) == 1:
            # one provider (a flat host): its root, without the lists
            (rp,) = allocs
            if root_fn is not None:
                root = root_fn(rp)
            else:
                summary = summaries.get(rp)
                root = (summary and summary.get('root_provider_uuid')) or rp
        else:
            rps = list(allocs)
            if not rps:
                continue
            roots = [root_of(summaries, rp) for rp in rps]
            root = roots[0]
            if is_host is not None and len(set(roots)) > 1:
                root = next((r for r in roots if is_host(r)), root)
        entry = areqs.get(root)
        if entry is None:
            areqs[root] = [areq]
            order.append(root)
        else:
            entry.append(areq)
    return order, areqs


def _root_of_request(areq, summaries, root_fn, is_host):
    """The root an allocation request belongs to, as :func:`candidates_by_root`
    decides it (None: a request without allocations)."""
    allocs = areq.get('allocations', {})
    if len(allocs) == 1:
        (rp,) = allocs
        return root_fn(rp)
    rps = list(allocs)
    if not rps:
        return None
    roots = [root_of(summaries, rp) for rp in rps]
    root = roots[0]
    if is_host is not None and len(set(roots)) > 1:
        root = next((r for r in roots if is_host(r)), root)
    return root


# A view of the service records younger than this is not read again before
# a request fails on hosts that look down (seconds).
SERVICES_MIN_AGE = 1.0


def _rejected_as_down(exp) -> bool:
    """True when the explanation's ComputeFilter refused a host because its
    compute service looked down."""
    for step in exp.steps:
        if step.name == 'ComputeFilter' and any(
            not host.service_up for host in step.rejected()
        ):
            return True
    return False


class Scheduler:
    def __init__(
        self,
        conf,
        placement,
        host_manager,
        filter_scheduler=None,
        record=None,
        notifier=None,
    ):
        """``notifier``: a :class:`~nimbus.scheduler.notifications.DecisionNotifier`
        (None: no decision stream)."""
        self.conf = conf
        self.notifier = notifier
        self.placement = placement
        self.host_manager = host_manager
        self.engine = filter_scheduler or selection.FilterScheduler(conf)
        self.record = record
        # One decision at a time per process: consuming in shared host states must not
        # interleave. Several processes race in placement. Each decision also holds
        # the host manager's lock (``decision()``) from placement's answer to its last
        # claim: events arriving meanwhile are queued, not applied under the filters.
        self._lock = threading.Lock()
        # candidates_by_root of the last compact answer (answer_memo.py)
        self._requests = answer_memo.RequestsMemo()
        # placement's answers, each read against the last (compact_answer.py)
        self._answers = compact_answer.Reader()

    # ------------------------------------------------------------------ helpers
    def _resolve_group(self, spec: RequestSpec) -> None:
        group = spec.instance_group
        if group is None:
            uuid = spec.get_hint('group')
            data = self.host_manager.server_group(uuid) if uuid else None
            if data is None:
                return
            group = spec.instance_group = InstanceGroup.from_primitive(data)
        else:
            self._add_new_members(group)
        if group.members and not group.hosts:
            members = set(group.members)
            for hs in self.host_manager.all_host_states():
                for u in hs.instances:
                    if u in members:
                        group.hosts.append(hs.host)

    def _add_new_members(self, group) -> None:
        """The members the group gained since ``group`` was taken (a
        move's spec is the one stored at the server's create: a member
        booted later is in the scheduler's cache of the group, not in
        it), with their hosts, as Nova's conductor reads the group again
        before each move."""
        if not group.uuid:
            return
        data = self.host_manager.server_group(group.uuid)
        known = set(group.members)
        new = [m for m in (data or {}).get('members') or [] if m not in known]
        if not new:
            return
        group.members.extend(new)
        if group.hosts:  # else all the members' hosts are read below
            added = set(new)
            for hs in self.host_manager.all_host_states():
                for u in hs.instances:
                    if u in added:
                        group.hosts.append(hs.host)

    def _candidates(self, ctxt, spec, exp=None):
        params = request_filters.build_query(
            spec, self.conf, self.host_manager.aggregates()
        )
        if exp is not None:
            exp.placement_query = params
        # placement's compact answer where the client has it (the REST
        # client), the standard one from any other
        fetch = compact_answer.fetcher(self.placement, self._answers)
        body = fetch(ctxt, params)
        _order, areqs = self._requests.by_root(
            body,
            lambda b: candidates_by_root(
                b, lambda rp: self.host_manager.host_state(rp) is not None
            ),
        )
        summaries = body.get('provider_summaries', {})
        # areqs' keys are the order: the hosts remember they came from it
        hosts = self.host_manager.host_states_for_candidates(summaries, areqs)
        return hosts, areqs, summaries

    def _claim(self, ctxt, host, areq, uuid, spec) -> bool:
        """True: claimed; False: placement refused (no room left: try another host).
        A consumer generation conflict (the instance's consumer already holds other
        allocations) raises InstanceClaimFailed: no host can fix that."""
        claim = getattr(self.placement, 'claim', None)
        if claim is None:  # a client with the bool-only contract
            return self.placement.claim_resources(
                ctxt, uuid, areq, spec.project_id, spec.user_id
            )
        outcome = claim(ctxt, uuid, areq, spec.project_id, spec.user_id)
        status = getattr(outcome, 'status', None)
        if status == placement_client.CONSUMER_CONFLICT:
            raise exception.InstanceClaimFailed(
                f'placement refused the claim on {host.host}: {outcome.detail}'
            )
        return bool(outcome)

    def _record(self, ctxt, outcome, spec, detail):
        if self.record is None:
            return
        try:
            self.record(ctxt, outcome, spec, detail)
        except Exception:  # recording must never fail a decision
            LOG.exception('could not record the scheduling explanation')

    # ------------------------------------------------------------------ API
    def select_destinations(
        self,
        ctxt,
        spec: RequestSpec,
        instance_uuids=None,
        return_alternates=True,
    ) -> list[list[dict]]:
        if instance_uuids:
            spec.instance_uuids = list(instance_uuids)
            spec.num_instances = max(spec.num_instances, len(instance_uuids))

        for last_try in (False, True):
            exp = Explanation(spec, self.conf.scheduler.explain_sample_size)
            timings = {}
            with self._lock, self.host_manager.decision():
                start = time.perf_counter()
                try:
                    self._resolve_group(spec)
                    hosts, areqs, summaries = self._candidates(ctxt, spec, exp)
                    mark = time.perf_counter()
                    timings['placement'] = mark - start
                    result, exp = self._schedule(
                        ctxt,
                        spec,
                        (hosts, areqs, summaries),
                        return_alternates,
                        exp,
                    )
                except exception.NoValidHost as exc:
                    if (
                        not last_try
                        and _rejected_as_down(exp)
                        and self.host_manager.services_older_than(
                            SERVICES_MIN_AGE
                        )
                    ):
                        retry = True
                    else:
                        self._no_valid_host(
                            ctxt, spec, exp, exc, timings, start
                        )
                        raise
                else:
                    retry = False
                    timings['filter_weigh_claim'] = time.perf_counter() - mark
            if not retry:
                break
            # Hosts were refused as down on a view of the service records
            # up to [scheduler] host_state_refresh_interval old: after a
            # broker restart every compute looks down until its heartbeat
            # lands and the view is read again. Read it now (unless it was
            # read in the last second) and try once more before failing.
            LOG.info(
                'Hosts refused as down for %s on service records read more '
                'than %.0f s ago; reading them again',
                spec.instance_uuids,
                SERVICES_MIN_AGE,
            )
            self.host_manager.refresh_services()
        uuids = spec.instance_uuids or [None] * len(result)
        instances, placed = [], []
        for idx, uuid in enumerate(uuids):
            selections = result[idx] if idx < len(result) else []
            if selections:
                placed.append(uuid)
                LOG.info(
                    'Selected %s for %s (%d candidate hosts from placement, '
                    '%d alternate(s))',
                    selections[0].service_host,
                    uuid,
                    len(hosts),
                    len(selections) - 1,
                )
                instances.append(
                    {
                        'instance_uuid': uuid,
                        'host': selections[0].service_host,
                        'alternates': [s.service_host for s in selections[1:]],
                    }
                )
                continue
            reason = exp.instance_failure(uuid) or 'did not fit'
            instances.append(
                {'instance_uuid': uuid, 'host': None, 'reason': reason}
            )
            if uuid is not None:
                # Its own record, so that GET /os-scheduler/records?instance_uuid=
                # (and the super conductor writing the fault) find the reason.
                one = copy.copy(spec)
                one.instance_uuids = [uuid]
                self._record(
                    ctxt, 'failed', one, dict(exp.to_dict(), message=reason)
                )
        done = copy.copy(spec)
        done.instance_uuids = [u for u in placed if u is not None]
        self._record(ctxt, 'scheduled', done, {'instances': instances})
        self._notify(ctxt, spec, exp, result, timings, start)
        return result

    def _no_valid_host(self, ctxt, spec, exp, exc, timings, start):
        LOG.info('No valid host for %s: %s', spec.instance_uuids, exc)
        # The admin's record has every rejected host (up to a cap), the
        # fault only a sample.
        detail = (
            exp.to_dict(full=True)
            if exp.steps or exp.pre_steps
            else (exc.explanation or {'message': exc.reason})
        )
        self._record(ctxt, 'failed', spec, detail)
        self._notify(ctxt, spec, exp, None, timings, start, exc)

    def _schedule(self, ctxt, spec, found, return_alternates, exp):
        """The engine's run over ``found`` (hosts, allocation requests,
        provider summaries), with its claims: ``(result, explanation)``.

        The instances of a multi-create are claimed together, in one
        placement transaction (``claim_many``, POST /allocations) after
        the engine placed them all, instead of one PUT each (1000 PUTs took
        a minute on the loaded 2-core machine). If placement refuses the
        batch (a race took room the engine counted on, or a consumer
        already holds allocations), nothing was claimed: the host states
        are restored and the engine runs again claiming one instance at a
        time, which tries the next host after a refusal and fails the
        one instance after a consumer conflict. A batch whose outcome is
        unknown (placement errors) goes the same way: a claim of ours that
        landed is found again by the one-by-one claim (already held), or
        met as a consumer conflict and left alone, as the contract says.
        """
        hosts, areqs, summaries = found
        batch = []
        batching = spec.num_instances > 1 and hasattr(
            self.placement, 'claim_many'
        )

        def claim(host, areq, uuid):
            if areq is None or uuid is None:
                return True
            if batching:
                batch.append((uuid, areq))
                return True
            return self._claim(ctxt, host, areq, uuid, spec)

        def unclaim(host, areq, uuid):
            if uuid is None:
                return
            if batching:
                # a sampled run the engine undoes to decide again over
                # every candidate: its claims never left the batch
                batch[:] = [b for b in batch if b[0] != uuid]
                return
            self.placement.remove_allocations(ctxt, uuid)

        def run(exp, record=None):
            return self.engine.schedule(
                spec,
                hosts,
                areqs,
                claim=claim,
                unclaim=unclaim,
                return_alternates=return_alternates,
                explanation=exp,
                provider_summaries=summaries,
                _record=record,
            )

        if not batching:
            return run(exp), exp
        record = ([], {})
        try:
            result = run(exp, record)
        except BaseException:
            self.engine.undo(spec, record)  # nothing was claimed yet
            raise
        if not batch or self._claim_batch(ctxt, spec, batch):
            return result, exp
        self.engine.undo(spec, record)
        batching = False
        again = Explanation(spec, self.conf.scheduler.explain_sample_size)
        again.placement_query = exp.placement_query
        return run(again), again

    def _claim_batch(self, ctxt, spec, batch) -> bool:
        try:
            return bool(
                self.placement.claim_many(
                    ctxt, batch, spec.project_id, spec.user_id
                )
            )
        except Exception:
            LOG.warning(
                'Claiming %d instances in one request failed; claiming '
                'them one by one',
                len(batch),
                exc_info=True,
            )
            return False

    def _notify(self, ctxt, spec, exp, result, timings, start, error=None):
        if self.notifier is None:
            return
        timings['total'] = time.perf_counter() - start
        self.notifier.emit(ctxt, spec, exp, result, timings, error)

    def capacity(self, ctxt, spec: RequestSpec, per_host: bool = True) -> dict:
        """How many more of ``spec``'s flavor fit, and where (see capacity.py);
        claims nothing."""
        from nimbus.scheduler import capacity as capacity_mod

        counter = capacity_mod.Capacity(self.conf, self.engine)
        with self._lock, self.host_manager.decision():
            self._resolve_group(spec)
            try:
                params = [
                    (k, v)
                    for k, v in request_filters.build_query(
                        spec, self.conf, self.host_manager.aggregates()
                    )
                    if k != 'limit'
                ]
            except exception.NoValidHost as exc:
                return dict(
                    capacity_mod.summarise([], per_host=per_host),
                    message=exc.reason,
                )
            body = self.placement.get_allocation_candidates(ctxt, params)
            order, areqs = candidates_by_root(
                body, lambda rp: self.host_manager.host_state(rp) is not None
            )
            summaries = body.get('provider_summaries', {})
            hosts = self.host_manager.host_states_for_candidates(
                summaries, order
            )
            return counter.count(
                spec, hosts, areqs, summaries, per_host=per_host
            )

    def dry_run(self, ctxt, spec: RequestSpec) -> dict:
        exp = Explanation(spec, self.conf.scheduler.explain_sample_size)
        with self._lock, self.host_manager.decision():
            self._resolve_group(spec)
            try:
                hosts, areqs, summaries = self._candidates(ctxt, spec, exp)
            except exception.NoValidHost as exc:
                return {
                    'placement_candidates': 0,
                    'filters': [],
                    'ranked': [],
                    'rejected': [],
                    'message': exc.reason,
                    'placement_query': exp.query_string(),
                }
            result = self.engine.dry_run(
                spec, hosts, areqs, provider_summaries=summaries
            )
        result['placement_query'] = exp.query_string()
        if not hosts:
            exp.placement_candidates = 0
            result['message'] = exp.message()
        return result
