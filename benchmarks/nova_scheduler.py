#!/usr/bin/env python
"""Time Nova 34.0.0's scheduler decision on the hosts scheduler_bench.py describes.

Used by ``scheduler_bench.py --compare-nova``. This file has two halves:

- the driver (run with the project's interpreter): makes or reuses a venv with
  ``nova==34.0.0`` and runs this same file in it with ``--peer``, the host
  description as JSON on stdin, the figures as JSON on stdout;
- the peer (run with the venv's interpreter, ``--peer``): builds Nova's own
  HostState objects from nova.objects (ComputeNode, Service, Aggregate) and
  times, per request, Nova's HostFilterHandler with the default
  ``enabled_filters``, HostWeightHandler with every weigher of the default
  ``weight_classes`` (all 13) and the pick of the best host among the first
  ``host_subset_size``, as nova.scheduler.manager does after weighing.

Both halves use only the standard library at import time, so the peer runs in
a venv that has nothing of Nimbus.

The venv is ``--nova-venv DIR`` when given: created if missing, reused as it
is when it already has nova 34.0.0, kept afterwards. Without it a temporary
venv is made and removed at the end.

    .venv/bin/python benchmarks/nova_scheduler.py --nova-venv /tmp/nova-34-venv --install-only

Any failure (install, import, the peer itself) ends in one line naming it, never a
traceback; ``NOVA_PEER_TRACEBACK=1`` in the environment lets the peer's traceback through.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

NOVA_VERSION = '34.0.0'
NOVA_REQUIREMENT = 'nova==' + NOVA_VERSION
# The peer's own time limit: building 50000 HostStates and timing two requests
# a few times each fits well inside it on 2 cores.
PEER_TIMEOUT_S = 3600


class NovaUnavailable(Exception):
    """Nova could not be installed, imported or run; the message is one line."""


def _one_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in (text or '').splitlines() if ln.strip()]
    line = lines[-1] if lines else 'no output'
    return line if len(line) <= limit else line[: limit - 3] + '...'


def _venv_python(venv: str) -> str:
    return os.path.join(venv, 'bin', 'python')


def _installed_version(python: str) -> str | None:
    """nova's version in the venv of ``python`` when it imports, else None."""
    probe = subprocess.run(
        [
            python,
            '-c',
            'import importlib.metadata as m, nova.scheduler.host_manager; '
            'print(m.version("nova"))',
        ],
        capture_output=True,
        text=True,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def ensure_venv(venv: str) -> tuple[str, float | None]:
    """The interpreter of ``venv`` with nova 34.0.0, and how many seconds the
    install took (None when an existing venv was reused). Raises
    NovaUnavailable with a one-line reason."""
    python = _venv_python(venv)
    if os.path.exists(python) and _installed_version(python) == NOVA_VERSION:
        print(f'reusing Nova venv {venv} (nova {NOVA_VERSION})', flush=True)
        return python, None
    print(f'installing {NOVA_REQUIREMENT} into {venv}', flush=True)
    t = time.perf_counter()
    if not os.path.exists(python):
        made = subprocess.run(
            [sys.executable, '-m', 'venv', venv],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise NovaUnavailable(
                f'could not create the venv {venv}: '
                f'{_one_line(made.stderr or made.stdout)}'
            )
    # pip's output goes to a log outside the venv (a temporary venv is removed), kept
    # only when the install fails.
    with tempfile.NamedTemporaryFile(
        'w+', prefix='nova-install-', suffix='.log', delete=False
    ) as out:
        pip = subprocess.run(
            [python, '-m', 'pip', 'install', NOVA_REQUIREMENT],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.seek(0)
        reason = _one_line(out.read()) if pip.returncode else None
    if pip.returncode != 0:
        raise NovaUnavailable(
            f'{NOVA_REQUIREMENT} could not be installed into {venv}: '
            f'{reason} (full log: {out.name})'
        )
    os.unlink(out.name)
    seconds = time.perf_counter() - t
    version = _installed_version(python)
    if version != NOVA_VERSION:
        probe = subprocess.run(
            [python, '-c', 'import nova.scheduler.host_manager'],
            capture_output=True,
            text=True,
        )
        raise NovaUnavailable(
            f'nova in {venv} does not import as {NOVA_VERSION}: '
            f'{_one_line(probe.stderr) if probe.returncode else version}'
        )
    print(f'installed {NOVA_REQUIREMENT} in {seconds:.0f} s', flush=True)
    return python, seconds


@contextlib.contextmanager
def nova_venv(path: str | None = None):
    """Yields ``(python, install_seconds)``; ``path`` is kept, a temporary venv is
    removed at the end."""
    if path:
        yield ensure_venv(os.path.abspath(path))
        return
    tmp = tempfile.mkdtemp(prefix='nova-34-venv-')
    try:
        yield ensure_venv(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_peer(python: str, description: dict) -> dict:
    """Run the peer in the venv of ``python`` on ``description`` (see
    scheduler_bench.nova_description) and return its figures."""
    try:
        res = subprocess.run(
            [python, os.path.abspath(__file__), '--peer'],
            input=json.dumps(description),
            capture_output=True,
            text=True,
            timeout=PEER_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise NovaUnavailable(
            f'the Nova peer did not finish within {PEER_TIMEOUT_S} s'
        ) from exc
    if res.returncode != 0:
        raise NovaUnavailable(
            f'the Nova peer failed: {_one_line(res.stderr or res.stdout)}'
        )
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise NovaUnavailable(
            f'the Nova peer printed no JSON: {_one_line(res.stdout)}'
        ) from exc


# ---------------------------------------------------------------------------------------
# The peer: runs inside the Nova venv; everything of Nova is imported in here only.


def _percentile(values, fraction):
    """Nearest-rank percentile of ``values`` (0 < fraction <= 1)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[int(rank) - 1]


def _peer_setup():
    """Nova as nova-scheduler starts it, minus the database, RPC and logging setup:
    the threading backend, CONF parsed with no config file (defaults), objects
    registered."""
    from nova import monkey_patch

    monkey_patch.patch(backend='threading')
    from nova import config, objects

    config.parse_args(
        ['nova-scheduler-bench'],
        default_config_files=[],
        configure_db=False,
        init_rpc=False,
    )
    objects.register_all()


def _stable_uuid(name):
    """Nova's UUID fields want UUIDs; Nimbus's synthetic ids are plain names."""
    import uuid

    try:
        return str(uuid.UUID(name))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, 'nimbus-bench:' + name))


def _nova_compute_node(index, cn, instance_count, now):
    """A nova.objects.ComputeNode carrying the same facts as Nimbus's record, in the
    shapes a Nova compute reports them (JSON strings for cpu_info, metrics and the
    NUMA topology; stats as strings; PCI pools as objects)."""
    from nova import objects

    cells = [
        objects.NUMACell(
            id=c['id'],
            cpuset=set(c['cpuset']),
            pcpuset=set(c.get('pcpuset', ())),
            memory=c['memory'],
            cpu_usage=c.get('cpu_usage', 0),
            memory_usage=c.get('memory_usage', 0),
            pinned_cpus=set(c.get('pinned_cpus', ())),
            siblings=[],
            mempages=[],
            socket=None,
            network_metadata=objects.NetworkMetadata(
                physnets=set(), tunneled=False
            ),
        )
        for c in (cn.get('numa_topology') or {}).get('cells', [])
    ]
    numa = objects.NUMATopology(cells=cells)._to_json() if cells else None
    pools = objects.PciDevicePoolList(
        objects=[
            objects.PciDevicePool(
                vendor_id=p['vendor_id'],
                product_id=p['product_id'],
                numa_node=p.get('numa_node'),
                count=p['count'],
                tags={'dev_type': p.get('dev_type', 'type-PCI')},
            )
            for p in cn.get('pci_stats') or []
        ]
    )
    # A compute's monitors store percentages as fractions; Nova scales them back.
    metrics = [
        {
            'name': name,
            'value': value / 100.0 if name.endswith('percent') else value,
            'timestamp': now.isoformat(),
            'source': 'nimbus-bench',
        }
        for name, value in sorted((cn.get('metrics') or {}).items())
    ]
    stats = {
        'num_instances': str(instance_count),
        'io_workload': str(cn.get('num_io_ops', 0)),
        'failed_builds': str(cn.get('failed_builds', 0)),
    }
    stats.update({k: str(v) for k, v in (cn.get('stats') or {}).items()})
    return objects.ComputeNode(
        id=index + 1,
        uuid=cn['uuid'],
        service_id=index + 1,
        host=cn['host'],
        hypervisor_hostname=cn.get('hypervisor_hostname') or cn['host'],
        vcpus=cn['vcpus'],
        vcpus_used=cn['vcpus_used'],
        memory_mb=cn['memory_mb'],
        memory_mb_used=cn['memory_mb_used'],
        local_gb=cn['local_gb'],
        local_gb_used=cn['local_gb_used'],
        free_ram_mb=cn['memory_mb'] - cn['memory_mb_used'],
        free_disk_gb=cn['local_gb'] - cn['local_gb_used'],
        disk_available_least=None,
        current_workload=cn.get('num_io_ops', 0),
        running_vms=instance_count,
        hypervisor_type=cn['hypervisor_type'],
        hypervisor_version=cn['hypervisor_version'],
        cpu_info=json.dumps(cn.get('cpu_info') or {}),
        host_ip=cn.get('host_ip'),
        supported_hv_specs=[
            objects.HVSpec(arch=a, hv_type=h, vm_mode=m)
            for a, h, m in cn.get('supported_instances') or []
        ],
        metrics=json.dumps(metrics),
        stats=stats,
        numa_topology=numa,
        pci_device_pools=pools,
        cpu_allocation_ratio=cn['cpu_allocation_ratio'],
        ram_allocation_ratio=cn['ram_allocation_ratio'],
        disk_allocation_ratio=cn['disk_allocation_ratio'],
        mapped=1,
        created_at=now,
        updated_at=now,
    )


def _nova_service(index, svc, now, down_time):
    """A nova.objects.Service whose heartbeat says what Nimbus's ``up`` says: Nova's
    servicegroup 'db' driver (the default) compares ``last_seen_up`` with
    ``[DEFAULT] service_down_time`` and needs no database for that."""
    import datetime
    from nova import objects

    beat = (
        now
        if svc.get('up', True)
        else now - datetime.timedelta(seconds=2 * down_time)
    )
    return objects.Service(
        id=index + 1,
        uuid=_stable_uuid('service:' + svc['host']),
        host=svc['host'],
        binary='nova-compute',
        topic='compute',
        report_count=1,
        disabled=bool(svc.get('disabled')),
        disabled_reason=svc.get('disabled_reason')
        or ('bench' if svc.get('disabled') else None),
        forced_down=bool(svc.get('forced_down')),
        created_at=beat,
        updated_at=beat,
        last_seen_up=beat,
    )


def _nova_host_states(description):
    """Nova HostStates for every host of the description, built the way Nova's host
    manager builds them: HostState(host, node, cell).update(compute, dict(service),
    aggregates, instances)."""
    import datetime
    import nova.conf
    from nova import objects
    from nova.scheduler import host_manager

    now = datetime.datetime.now(datetime.timezone.utc)
    down_time = nova.conf.CONF.service_down_time
    aggregates = {
        a['id']: objects.Aggregate(
            id=a['id'],
            uuid=_stable_uuid(a.get('uuid') or a['name']),
            name=a['name'],
            hosts=list(a.get('hosts', [])),
            metadata=dict(a.get('metadata', {})),
        )
        for a in description.get('aggregates', [])
    }
    by_host = {}
    for agg in aggregates.values():
        for host in agg.hosts:
            by_host.setdefault(host, []).append(agg)
    services = {
        s['host']: (i, s) for i, s in enumerate(description['services'])
    }
    instances = description.get('instances_by_host') or {}
    states = {}
    for index, cn in enumerate(description['compute_nodes']):
        host = cn['host']
        mine = {}
        for inst in instances.get(host, []):
            inst_uuid = _stable_uuid(inst['uuid'])
            mine[inst_uuid] = objects.Instance(
                uuid=inst_uuid, host=host, project_id=inst.get('project_id')
            )
        compute = _nova_compute_node(index, cn, len(mine), now)
        svc_index, svc = services[host]
        service = _nova_service(svc_index, svc, now, down_time)
        state = host_manager.HostState(
            host, compute.hypervisor_hostname, cn.get('cell_uuid')
        )
        state.update(compute, dict(service), by_host.get(host, []), mine)
        states[cn['uuid']] = state
    return states


def _nova_request_spec(request):
    """nova.objects.RequestSpec as the conductor builds it (from_components), with
    Nova's Flavor and the image as a dict turned into ImageMeta."""
    import uuid
    from nova import context, objects

    flavor = request['flavor']
    image = request.get('image') or {}
    nova_flavor = objects.Flavor(
        id=1,
        flavorid=str(flavor.get('flavorid') or 'bench'),
        name=flavor.get('name') or 'bench',
        vcpus=flavor['vcpus'],
        memory_mb=flavor['memory_mb'],
        root_gb=flavor['root_gb'],
        ephemeral_gb=flavor.get('ephemeral_gb', 0),
        swap=flavor.get('swap', 0),
        rxtx_factor=1.0,
        vcpu_weight=0,
        disabled=False,
        is_public=True,
        extra_specs=dict(flavor.get('extra_specs') or {}),
        description=None,
    )
    image_dict = {
        'id': _stable_uuid(image.get('id') or 'image'),
        'name': image.get('name') or 'image',
        'status': 'active',
        'disk_format': 'qcow2',
        'container_format': 'bare',
        'min_ram': 0,
        'min_disk': 0,
        'size': 0,
        'properties': dict(image.get('properties') or {}),
    }
    ctxt = context.get_admin_context()
    return objects.RequestSpec.from_components(
        ctxt,
        str(uuid.UUID(int=10**9)),
        image_dict,
        nova_flavor,
        None,
        None,
        {},
        None,
        request.get('availability_zone'),
        project_id=request.get('project_id') or 'p1',
        user_id=request.get('user_id') or 'u1',
    )


def _select(weighed, subset_size, shuffle_ties, rng):
    """What nova.scheduler.manager does with the weighed hosts: optionally shuffle
    the hosts tied for the best weight, then pick at random among the first
    ``host_subset_size`` and put the pick in front of the rest."""
    if shuffle_ties and weighed:
        best = weighed[0].weight
        tied = 0
        while tied < len(weighed) and weighed[tied].weight == best:
            tied += 1
        head = weighed[:tied]
        rng.shuffle(head)
        weighed = head + weighed[tied:]
    hosts = [w.obj for w in weighed]
    if not hosts:
        return []
    pick = rng.randrange(min(max(subset_size, 1), len(hosts)))
    return [hosts[pick]] + hosts[:pick] + hosts[pick + 1 :]


def _peer_measure(description):
    import platform
    import random
    import statistics
    import time

    _peer_setup()
    import nova.conf
    from nova.scheduler import filters, weights

    conf = nova.conf.CONF.filter_scheduler
    t = time.perf_counter()
    states = _nova_host_states(description)
    build_s = time.perf_counter() - t
    filter_handler = filters.HostFilterHandler()
    available = {
        cls.__name__: cls
        for cls in filter_handler.get_matching_classes(conf.available_filters)
    }
    enabled = [available[name]() for name in conf.enabled_filters]
    weight_handler = weights.HostWeightHandler()
    weighers = [
        cls()
        for cls in weight_handler.get_matching_classes(conf.weight_classes)
    ]
    rng = random.Random(description.get('seed', 0))
    out = {
        'nova_version': NOVA_VERSION,
        'python': platform.python_version(),
        'hosts_built': len(states),
        'build_s': round(build_s, 2),
        'filters': [f.__class__.__name__ for f in enabled],
        'weighers': [w.__class__.__name__ for w in weighers],
        'requests': {},
    }
    for name, request in description['requests'].items():
        candidates = [states[u] for u in request['candidates']]
        spec = _nova_request_spec(request)
        samples, ranked, passing = [], [], 0
        for _ in range(max(1, int(description.get('repeat', 7)))):
            t0 = time.perf_counter()
            passed = (
                filter_handler.get_filtered_objects(
                    enabled, candidates, spec, 0
                )
                or []
            )
            weighed = (
                weight_handler.get_weighed_objects(weighers, passed, spec)
                if passed
                else []
            )
            ranked = _select(
                weighed,
                conf.host_subset_size,
                conf.shuffle_best_same_weighed_hosts,
                rng,
            )
            samples.append((time.perf_counter() - t0) * 1e3)
            passing = len(passed)
        out['requests'][name] = {
            'decision_ms_median': round(statistics.median(samples), 2),
            'decision_ms_p95': round(_percentile(samples, 0.95), 2),
            'hosts_passing': passing,
            'candidates': len(candidates),
            'first': ranked[0].host if ranked else None,
        }
    return out


def peer_main() -> int:
    description = json.load(sys.stdin)
    try:
        result = _peer_measure(description)
    except Exception as exc:  # one line for the driver, not a traceback
        if os.environ.get('NOVA_PEER_TRACEBACK'):
            raise
        print(
            f'{type(exc).__name__}: {exc}'.replace('\n', ' '), file=sys.stderr
        )
        return 1
    print(json.dumps(result), flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--nova-venv', metavar='DIR')
    p.add_argument('--install-only', action='store_true')
    p.add_argument('--peer', action='store_true', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.peer:
        return peer_main()
    try:
        with nova_venv(args.nova_venv) as (python, _seconds):
            if args.install_only:
                return 0
            print(json.dumps(run_peer(python, json.load(sys.stdin))))
    except NovaUnavailable as exc:
        print(f'Nova comparison unavailable: {exc}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
