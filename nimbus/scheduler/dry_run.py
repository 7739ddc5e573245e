"""The dry run: where a request would go, without claiming anything.

:func:`answer` filters and weighs the candidates with a ``FilterScheduler``'s
filters and weighers (``selection.py``) and ranks every passing host with each
weigher's share of its weight. For a request of N > 1 instances it runs that
scheduler's selection loop without claims (consumption included, so the limits that
bite within a multi-create show) and restores every host state afterwards.
"""

from __future__ import annotations

import copy

from nimbus.scheduler import exception, host_prefilter, sampling
from nimbus.scheduler.explain import Explanation
from nimbus.scheduler.weighers import base as weigher_base


def answer(
    scheduler, spec, hosts, alloc_reqs=None, provider_summaries=None
) -> dict:
    """Rank hosts without claiming anything. JSON-able.

    ``ranked`` and ``rejected`` are for the first instance, and ``placements`` says
    where it would go. With ``num_instances`` N > 1, ``placements`` says where each
    of the N would go: the request is simulated instance by instance (consumption
    included, so the limits that bite within a multi-create show), then every host
    state is restored."""
    exp = Explanation(spec, scheduler.conf.scheduler.explain_sample_size)
    exp.placement_candidates = len(hosts)
    filters = scheduler.enabled_filters(spec)
    cands = host_prefilter.pre_filter_hosts(list(hosts), spec, alloc_reqs, exp)
    n_cands = len(cands)
    cands = scheduler.run_filters(cands, spec, filters, exp)
    detail = weigher_base.weigh_detail(cands, scheduler.weighers, spec)
    order = sorted(range(len(cands)), key=lambda i: -detail[i]['weight'])
    n = max(spec.num_instances, len(spec.instance_uuids), 1)
    out = {
        'placement_candidates': len(hosts),
        'filters': exp.filter_counts(),
        'pre_filters': exp.to_dict()['pre_filters'],
        'ranked': [
            dict(
                detail[i],
                host=cands[i].host,
                nodename=cands[i].nodename,
                compute_node_uuid=cands[i].uuid,
                cell_uuid=cands[i].cell_uuid,
            )
            for i in order
        ],
        'rejected': exp.rejected(None),
        'message': None if cands else exp.message(),
        'instances': n,
    }
    sampled = sampling.describe(scheduler.conf, n_cands, n)
    if sampled is not None:
        out['sampling'] = sampled
    if cands and n > 1:
        out.update(
            _simulate(
                scheduler, spec, hosts, alloc_reqs, provider_summaries, n
            )
        )
    elif cands:
        # One instance: the best host and its alternates, straight from the ranking.
        best = out['ranked'][0]
        alts = [
            r['host']
            for r in out['ranked'][1:]
            if r['cell_uuid'] == best['cell_uuid']
        ]
        alts = alts[: max(scheduler.conf.scheduler.max_attempts - 1, 0)]
        out.update(
            {
                'placements': [
                    {
                        'host': best['host'],
                        'nodename': best['nodename'],
                        'compute_node_uuid': best['compute_node_uuid'],
                        'cell_uuid': best['cell_uuid'],
                        'alternates': alts,
                    }
                ],
                'placed': 1,
            }
        )
    return out


def _simulate(
    scheduler, spec, hosts, alloc_reqs, provider_summaries, n
) -> dict:
    """Where each of the request's N instances would go, and how many fit."""
    sim = copy.copy(spec)
    sim.min_count = 1  # report what fits rather than fail
    exp = Explanation(sim, scheduler.conf.scheduler.explain_sample_size)
    claims, snapshots = [], {}
    results = []
    start = scheduler.next_start  # a dry run leaves the rotation alone
    try:
        results = scheduler.schedule(
            sim,
            hosts,
            alloc_reqs,
            explanation=exp,
            provider_summaries=provider_summaries,
            _record=(claims, snapshots),
        )
    except exception.NoValidHost:
        results = []
    finally:
        scheduler.undo(sim, (claims, snapshots))
        scheduler.next_start = start
    placements = [
        {
            'host': r[0].service_host,
            'nodename': r[0].nodename,
            'compute_node_uuid': r[0].compute_node_uuid,
            'cell_uuid': r[0].cell_uuid,
            'alternates': [a.service_host for a in r[1:]],
        }
        for r in results
        if r
    ]
    sim_out = {'placements': placements, 'placed': len(placements)}
    if len(placements) < n:
        sim_out['placements_message'] = (
            f'{len(placements)} of {n} instances would be placed: '
            + exp.message().split(': ', 1)[-1]
        )
    return sim_out
