#!/usr/bin/env python
"""Scheduler benchmark: one decision (filters + weighers + selection) and, separately,
the per-request host-state refresh, for N synthetic hosts.

    .venv/bin/python benchmarks/scheduler_bench.py --hosts 10000 [--json out.json]
    .venv/bin/python benchmarks/scheduler_bench.py --hosts 1000 5000 10000 50000
    .venv/bin/python benchmarks/scheduler_bench.py --hosts 5000 --multi-create 1000

Default filters plus all 13 weighers; two flavors: ``plain`` and ``props`` (capability
extra specs and image properties, so ComputeCapabilitiesFilter and ImagePropertiesFilter
do real work). Placement's answer is synthesised (every host that fits) and not timed;
``refresh`` is turning that answer into HostStates from the in-memory cache.
``--json FILE`` writes ``{"hosts": N, "results": {"plain": {"decision_ms_median",
"refresh_ms_median", "hosts_passing"}, "props": {...}}}`` (a list of those for several N).
``--reference`` also times the slow reference implementation and checks it picks the
same host.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time

from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import reference, selection, testing
from nimbus.scheduler.host_manager import HostManager


def flavors():
    plain = testing.spec(vcpus=2, memory_mb=4096, root_gb=20)
    props = testing.spec(
        vcpus=2, memory_mb=4096, root_gb=20,
        extra_specs={"capabilities:cpu_info:features": "<all-in> aes avx",
                     "capabilities:hypervisor_type": "s== QEMU",
                     "capabilities:hypervisor_version": ">= 7000000"},
        image_props={"hw_architecture": "x86_64", "img_hv_type": "qemu",
                     "hw_vm_mode": "hvm"})
    return {"plain": plain, "props": props}


def placement_answer(hm, spec):
    body = testing.candidates_for(hm.all_host_states(), spec)
    order, areqs = [], {}
    for a in body["allocation_requests"]:
        root = next(iter(a["allocations"]))
        order.append(root)
        areqs[root] = a
    return body, order, areqs


def bench_one(n: int, repeat: int, check_reference: bool) -> dict:
    conf = sched_conf.make_conf()
    src = testing.make_source(n, seed=42, cells=2, az_every=3, disabled_every=50)
    t = time.perf_counter()
    hm = HostManager(conf, src)
    hm.refresh()
    full_load_ms = (time.perf_counter() - t) * 1e3
    sched = selection.FilterScheduler(conf)
    results = {}
    for name, spec in flavors().items():
        body, order, areqs = placement_answer(hm, spec)
        refresh, decide, chosen = [], [], None
        for _ in range(repeat):
            t0 = time.perf_counter()
            states = hm.host_states_for_candidates(body["provider_summaries"], order)
            t1 = time.perf_counter()
            sp = copy.deepcopy(spec)
            res = sched.schedule(sp, states, areqs, return_alternates=True)
            t2 = time.perf_counter()
            refresh.append((t1 - t0) * 1e3)
            decide.append((t2 - t1) * 1e3)
            chosen = res[0][0]["service_host"]
        passing = len(sched.run_filters(states, spec, sched.enabled_filters(spec)))
        results[name] = {"decision_ms_median": round(statistics.median(decide), 2),
                         "refresh_ms_median": round(statistics.median(refresh), 2),
                         "hosts_passing": passing}
        line = (f"hosts={n:6d} {name:5s} decision median {statistics.median(decide):8.2f} ms "
                f"(min {min(decide):.2f})  refresh median {statistics.median(refresh):7.2f} ms"
                f"  passing {passing}  last pick {chosen}")
        if check_reference:
            ref_hm = HostManager(conf, copy.deepcopy(src))
            ref_hm.refresh()
            ref_states = ref_hm.host_states_for_candidates(body["provider_summaries"], order)
            fast_hm = HostManager(conf, copy.deepcopy(src))
            fast_hm.refresh()
            fast_states = fast_hm.host_states_for_candidates(body["provider_summaries"], order)
            t3 = time.perf_counter()
            want = reference.schedule(conf, sched.filters, sched.weighers,
                                      copy.deepcopy(spec), ref_states, areqs)
            ref_ms = (time.perf_counter() - t3) * 1e3
            got = sched.schedule(copy.deepcopy(spec), fast_states, areqs)[0][0]["service_host"]
            line += f"  reference {ref_ms:.1f} ms same={got == want[0]}"
        print(line, flush=True)
    print(f"hosts={n:6d} full host-state load from source {full_load_ms:.1f} ms", flush=True)
    return {"hosts": n, "results": results}


def bench_multi_create(n_hosts: int, n_instances: int) -> float:
    conf = sched_conf.make_conf()
    src = testing.make_source(n_hosts, seed=7, cells=2)
    hm = HostManager(conf, src)
    hm.refresh()
    spec = testing.spec(vcpus=1, memory_mb=1024, root_gb=10, num=n_instances)
    body, order, areqs = placement_answer(hm, spec)
    capacity = {rp: {rc: s["capacity"] for rc, s in summ["resources"].items()}
                for rp, summ in body["provider_summaries"].items()}
    claims = testing.InMemoryClaims(capacity)
    for rp, summ in body["provider_summaries"].items():
        claims.used[rp] = {rc: s["used"] for rc, s in summ["resources"].items()}
    sched = selection.FilterScheduler(conf)
    t = time.perf_counter()
    states = hm.host_states_for_candidates(body["provider_summaries"], order)
    res = sched.schedule(spec, states, areqs, claim=claims.claim, unclaim=claims.unclaim)
    secs = time.perf_counter() - t
    hosts = {r[0]["service_host"] for r in res}
    print(f"multi-create {n_instances} instances on {n_hosts} hosts: {secs:.2f} s "
          f"({len(res)} placed on {len(hosts)} hosts, {len(claims.claims)} claims)", flush=True)
    return secs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hosts", type=int, nargs="+", default=[1000, 5000, 10000, 50000])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--reference", action="store_true")
    p.add_argument("--multi-create", type=int, metavar="INSTANCES", default=0)
    args = p.parse_args(argv)
    out = [bench_one(n, args.repeat, args.reference) for n in args.hosts]
    if args.multi_create:
        bench_multi_create(args.hosts[0], args.multi_create)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out[0] if len(out) == 1 else out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
