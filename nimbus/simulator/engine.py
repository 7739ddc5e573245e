"""Replays an arrival trace through the real scheduler in process.

Each arrival becomes a RequestSpec handed to
:class:`nimbus.scheduler.driver.Scheduler` - request filters, placement's
allocation candidates, host states from the provider summaries, filters,
weighers, selection and a claim - exactly as ``select_destinations`` runs;
no RPC. Placement is one of :mod:`nimbus.simulator.placement`'s backends
(by default Nimbus placement's own candidate engine). Departures remove the
allocation and the instance from the host state. Deterministic for a given
trace and seed.
"""

import gc
import heapq
import random
import time

from nimbus.common import context
from nimbus.common.objects.request_spec import InstanceGroup, RequestSpec
from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import driver as driver_mod
from nimbus.scheduler import exception
from nimbus.scheduler import host_manager
from nimbus.scheduler import host_source
from nimbus.simulator import hosts as hosts_mod
from nimbus.simulator import memory
from nimbus.simulator import metrics
from nimbus.simulator import placement as placement_mod
from nimbus.simulator import trace as trace_mod

GC_EVERY = 2000
BACKENDS = {
    'engine': placement_mod.EnginePlacement,
    'api': placement_mod.ApiPlacement,
    'memory': memory.MemoryPlacement,
}
PRESETS = {
    'spread': {},
    'stack': {
        'filter_scheduler.ram_weight_multiplier': -1.0,
        'filter_scheduler.cpu_weight_multiplier': -1.0,
        'filter_scheduler.disk_weight_multiplier': -1.0,
    },
}


def _value(text):
    text = text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text.lower() in ('true', 'false'):
        return text.lower() == 'true'
    return text


def weigher_settings(text):
    """A preset name (spread, stack) or ``group.option=value;...``
    (``placement.<option>`` sets placement's candidate options), or a
    preset followed by such items: ``stack;placement.max_...=50``."""
    out = {}
    for item in text.split(';'):
        if item.strip() in PRESETS:
            out.update(PRESETS[item.strip()])
            continue
        key, sep, value = item.partition('=')
        if not sep or '.' not in key:
            raise ValueError(
                'weigher setting %r: use spread, stack or '
                'group.option=value;...' % item
            )
        out[key.strip()] = _value(value)
    return out


class Simulation:
    def __init__(
        self,
        hosts,
        seed=0,
        settings=None,
        samples=20,
        host_spec=None,
        backend='engine',
        profiles=None,
    ):
        settings = dict(settings or {})
        placement_settings = {
            key.split('.', 1)[1]: settings.pop(key)
            for key in list(settings)
            if key.startswith('placement.')
        }
        try:
            self.conf = sched_conf.make_conf(**settings)
        except Exception as exc:  # oslo.config: unknown group/option/value
            raise ValueError('bad scheduler setting: %s' % exc) from exc
        self.conf.set_override('emit_decisions', False, group='scheduler')
        self.spec = host_spec or hosts_mod.parse_host_spec('')
        self.profiles = trace_mod.profiles(profiles)
        rng = random.Random(seed)
        nodes, services, trees = hosts_mod.build(hosts, self.spec, rng)
        self.hm = host_manager.HostManager(
            self.conf,
            host_source.InMemoryHostInfoSource(nodes, services, [], {}, []),
        )
        self.hm.refresh()
        self.placement = BACKENDS[backend](
            trees,
            hosts_mod.resource_classes(self.spec),
            placement_mod.options(placement_settings, seed),
        )
        self.scheduler = driver_mod.Scheduler(
            self.conf, self.placement, self.hm
        )
        self.scheduler.engine.rng = random.Random(seed)
        self.samples = max(samples, 1)
        self.roots = [tree[0][0] for tree in trees]
        self.metrics = metrics.Metrics(self.placement, self.roots)
        self.decisions = []  # per arrival: the chosen host, or None
        # per arrival: seconds of the engine's decision (filters, weighers,
        # selection, claims), and how many sampled decisions were made
        # again over every candidate; kept out of run()'s result, which
        # is deterministic
        self.decide_s, self.decide_cpu_s = [], []
        self.fallbacks = 0
        self._time_engine(self.scheduler.engine)

    def _time_engine(self, fs):
        """Time each of ``fs``'s decisions, wall and this thread's CPU (a
        decision a sample made again over every candidate counts once,
        with both runs)."""
        schedule, depth = fs.schedule, [0]

        def timed(*args, **kwargs):
            if depth[0]:
                self.fallbacks += 1
                return schedule(*args, **kwargs)
            depth[0] += 1
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return schedule(*args, **kwargs)
            finally:
                self.decide_cpu_s.append(time.thread_time() - cpu)
                self.decide_s.append(time.perf_counter() - start)
                depth[0] -= 1

        fs.schedule = timed

    def timing(self) -> dict:
        """The decisions' time (ms): median, mean and p95, wall and CPU,
        and the sampled decisions made again over every candidate."""
        return metrics.timing(self.decide_s, self.decide_cpu_s, self.fallbacks)

    def close(self):
        self.placement.close()

    def _spec(self, n, item, groups):
        vcpus, mem, disk = trace_mod.FLAVORS[item['flavor']]
        spec = RequestSpec.from_primitive(
            {
                'flavor': {
                    'name': item['flavor'],
                    'flavorid': item['flavor'],
                    'vcpus': vcpus,
                    'memory_mb': mem,
                    'root_gb': disk,
                    'ephemeral_gb': 0,
                    'swap': 0,
                    'extra_specs': {},
                },
                'instance_uuids': ['5e000000-0000-4000-8000-%012x' % n],
                'num_instances': 1,
                'project_id': 'sim',
                'user_id': 'sim',
                'requested_resources': trace_mod.request_groups(
                    item, self.profiles
                ),
            }
        )
        if item.get('group'):
            group = groups.get(item['group'])
            if group is None:
                group = groups[item['group']] = InstanceGroup(
                    uuid='sim-%s' % item['group'],
                    policy=item.get('policy') or 'anti-affinity',
                )
            spec.instance_group = group
        return spec

    def _depart(self, ctxt, consumer, host, group):
        self.placement.remove_allocations(ctxt, consumer)
        self.hm.delete_instance_info(host, consumer)
        if group is not None:
            if consumer in group.members:
                group.members.remove(consumer)
            if host in group.hosts:
                group.hosts.remove(host)

    def run(self, arrivals):
        """Replay ``arrivals``. The automatic garbage collector is off
        meanwhile (it collects every ``GC_EVERY`` arrivals instead) and the
        hosts, providers and host states built so far are frozen out of its
        sight: otherwise its full collections walk them all, a third of
        the time at 10,000 hosts."""
        was_enabled = gc.isenabled()
        gc.collect()
        gc.freeze()
        gc.disable()
        try:
            return self._run(arrivals)
        finally:
            gc.unfreeze()
            if was_enabled:
                gc.enable()

    def _run(self, arrivals):
        ctxt = context.get_admin_context()
        end = float(arrivals[-1]['t']) if arrivals else 0.0
        step = end / self.samples if end > 0 else 1.0
        next_sample = step
        departures = []  # (time, n, consumer, host, group)
        groups, timeline = {}, []
        placed = rejected = 0
        window = [0, 0]
        for n, item in enumerate(arrivals):
            if n % GC_EVERY == GC_EVERY - 1:
                gc.collect()
            t = float(item['t'])
            while departures and departures[0][0] <= t:
                _, _, consumer, host, group = heapq.heappop(departures)
                self._depart(ctxt, consumer, host, group)
            while t > next_sample:
                timeline.append(
                    self.metrics.sample(next_sample, placed, rejected, window)
                )
                window = [0, 0]
                next_sample += step
            spec = self._spec(n, item, groups)
            window[0] += 1
            try:
                result = self.scheduler.select_destinations(
                    ctxt, spec, return_alternates=False
                )
            except exception.NoValidHost:
                self.decisions.append(None)
                rejected += 1
                window[1] += 1
                continue
            placed += 1
            self.decisions.append(result[0][0].service_host)
            if item.get('lifetime') is not None:
                heapq.heappush(
                    departures,
                    (
                        t + float(item['lifetime']),
                        n,
                        spec.instance_uuids[0],
                        result[0][0].service_host,
                        spec.instance_group,
                    ),
                )
        timeline.append(self.metrics.sample(end, placed, rejected, window))
        return {
            'arrivals': len(arrivals),
            'placed': placed,
            'rejected': rejected,
            'rejection_rate': round(rejected / len(arrivals), 4)
            if arrivals
            else 0.0,
            'timeline': timeline,
        }
