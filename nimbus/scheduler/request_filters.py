"""Request filters (prefilters): turn a RequestSpec into GET /allocation_candidates query
parameters (``list[tuple[str, str]]``), so placement drops unsuitable providers before
the scheduler ever sees them.

Each prefilter is a function ``(query, spec, conf, aggregates) -> None`` that edits a
:class:`Query`; :func:`build_query` runs them in order. ``aggregates`` is the list of
aggregate dicts (``uuid``, ``metadata``...) known to the host manager.

Example: flavor 2 vCPU / 4096 MB / 20 GB with ``trait:HW_CPU_X86_AVX2=required`` in zone
az1 gives::

    [("resources", "DISK_GB:20,MEMORY_MB:4096,VCPU:2"),
     ("required", "HW_CPU_X86_AVX2"), ("member_of", "in:<az1 aggregate uuid>"),
     ("root_required", "!COMPUTE_STATUS_DISABLED"), ("limit", "1000")]
"""

from __future__ import annotations

import re

from nimbus.scheduler import exception

_RES_RE = re.compile(
    r'^resources([1-9][0-9]*|_[A-Za-z0-9_-]{1,63})?:([A-Z0-9_]+)$'
)
_TRAIT_RE = re.compile(
    r'^trait([1-9][0-9]*|_[A-Za-z0-9_-]{1,63})?:([A-Z0-9_]+)$'
)


class Group:
    def __init__(self):
        self.resources: dict[str, int] = {}
        self.required: set[str] = set()
        self.forbidden: set[str] = set()
        self.member_of: list[str] = []


class Query:
    """The unnumbered group (suffix ``""``) plus suffixed groups, and global params."""

    def __init__(self):
        self.groups: dict[str, Group] = {'': Group()}
        self.root_required: set[str] = set()
        self.root_forbidden: set[str] = set()
        self.member_of: list[
            str
        ] = []  # applies to the root (unnumbered) group
        self.group_policy: str | None = None
        self.limit: int | None = None

    def group(self, suffix: str) -> Group:
        return self.groups.setdefault(suffix, Group())

    def params(self) -> list[tuple[str, str]]:
        out = []
        for suffix in sorted(self.groups, key=lambda s: (s != '', s)):
            g = self.groups[suffix]
            res = {k: v for k, v in g.resources.items() if v}
            if not res and suffix:
                continue
            if res:
                out.append(
                    (
                        f'resources{suffix}',
                        ','.join(f'{k}:{v}' for k, v in sorted(res.items())),
                    )
                )
            traits = sorted(g.required) + [
                f'!{t}' for t in sorted(g.forbidden)
            ]
            if traits:
                out.append((f'required{suffix}', ','.join(traits)))
            for m in g.member_of + (self.member_of if not suffix else []):
                out.append((f'member_of{suffix}', m))
        root = sorted(self.root_required) + [
            f'!{t}' for t in sorted(self.root_forbidden)
        ]
        if root:
            out.append(('root_required', ','.join(root)))
        suffixed = [s for s in self.groups if s and self.groups[s].resources]
        policy = self.group_policy or ('none' if len(suffixed) > 1 else None)
        if policy and suffixed:
            out.append(('group_policy', policy))
        if self.limit:
            out.append(('limit', str(self.limit)))
        return out


def _suffix(raw: str | None) -> str:
    return raw or ''


def flavor_resources(q: Query, spec, conf, aggregates) -> None:
    """VCPU (or PCPU with ``hw:cpu_policy=dedicated``), MEMORY_MB, DISK_GB (root unless
    boot-from-volume, plus ephemeral and swap) and ``resources[N]:RC=amount`` overrides."""
    f = spec.flavor
    g = q.group('')
    policy = (
        f.extra_specs.get('hw:cpu_policy')
        or spec.image_props.get('hw_cpu_policy')
        or 'shared'
    )
    g.resources['PCPU' if str(policy).lower() == 'dedicated' else 'VCPU'] = (
        f.vcpus
    )
    g.resources['MEMORY_MB'] = f.memory_mb
    disk = (
        (0 if spec.is_bfv else f.root_gb)
        + f.ephemeral_gb
        + (f.swap + 1023) // 1024
    )
    if disk:
        g.resources['DISK_GB'] = disk
    for key, value in f.extra_specs.items():
        m = _RES_RE.match(key)
        if not m:
            continue
        try:
            amount = int(value)
        except ValueError as exc:
            raise exception.InvalidRequest(
                f'{key}={value!r} is not an integer'
            ) from exc
        grp = q.group(_suffix(m.group(1)))
        if m.group(1) is None and m.group(2) in ('VCPU', 'PCPU'):
            g.resources.pop('VCPU', None)
            g.resources.pop('PCPU', None)
        grp.resources[m.group(2)] = amount


def flavor_traits(q: Query, spec, conf, aggregates) -> None:
    """``trait[N]:NAME=required|forbidden`` from the flavor."""
    _traits(q, spec.flavor.extra_specs)


def _traits(q, mapping):
    for key, value in mapping.items():
        m = _TRAIT_RE.match(key)
        if not m:
            continue
        grp = q.group(_suffix(m.group(1)))
        if value == 'required':
            grp.required.add(m.group(2))
        elif value == 'forbidden':
            grp.forbidden.add(m.group(2))
        else:
            raise exception.InvalidRequest(
                f"{key} must be 'required' or 'forbidden'"
            )


def image_traits(q: Query, spec, conf, aggregates) -> None:
    """``trait:NAME=required`` image properties go to the unnumbered group."""
    for key, value in spec.image_props.items():
        if key.startswith('trait:') and value == 'required':
            q.group('').required.add(key[len('trait:') :])


def image_type(q: Query, spec, conf, aggregates) -> None:
    """``[scheduler] query_placement_for_image_type_support``: require
    ``COMPUTE_IMAGE_TYPE_<disk_format>``."""
    if (
        not conf.scheduler.query_placement_for_image_type_support
        or spec.is_bfv
    ):
        return
    fmt = spec.image_props.get('disk_format') or (spec.extra or {}).get(
        'disk_format'
    )
    if fmt:
        q.root_required.add(f'COMPUTE_IMAGE_TYPE_{str(fmt).upper()}')


def availability_zone(q: Query, spec, conf, aggregates) -> None:
    """Zone -> ``member_of=in:<aggregates whose availability_zone metadata names it>``.
    The default zone has no aggregate and adds nothing."""
    if (
        not spec.availability_zone
        or not conf.scheduler.query_placement_for_availability_zone
    ):
        return
    zones = {z.strip() for z in spec.availability_zone.split(',')}
    uuids = sorted(
        a['uuid']
        for a in aggregates
        if (a.get('metadata') or {}).get('availability_zone') in zones
        and a.get('uuid')
    )
    if uuids:
        q.member_of.append('in:' + ','.join(uuids))
    elif conf.scheduler.default_availability_zone not in zones:
        raise exception.NoValidHost(
            f'no aggregate defines availability zone '
            f'{spec.availability_zone!r}'
        )


def tenant_aggregates(q: Query, spec, conf, aggregates) -> None:
    """``[scheduler] limit_tenants_to_placement_aggregate``: a project named in an
    aggregate's ``filter_tenant_id*`` metadata lands only in those aggregates; with
    ``placement_aggregate_required_for_tenants`` a project in none fails."""
    if not conf.scheduler.limit_tenants_to_placement_aggregate:
        return
    uuids = []
    for a in aggregates:
        for k, v in (a.get('metadata') or {}).items():
            if k.startswith('filter_tenant_id') and spec.project_id in {
                x.strip() for x in str(v).split(',')
            }:
                uuids.append(a['uuid'])
                break
    if uuids:
        q.member_of.append('in:' + ','.join(sorted(set(uuids))))
    elif conf.scheduler.placement_aggregate_required_for_tenants:
        raise exception.NoValidHost(
            f'project {spec.project_id} has no tenant aggregate'
        )


def isolated_aggregates(q: Query, spec, conf, aggregates) -> None:
    """``[scheduler] enable_isolated_aggregate_filtering``: aggregates with
    ``trait:X=required`` metadata are forbidden unless the request requires every such
    trait."""
    if not conf.scheduler.enable_isolated_aggregate_filtering:
        return
    wanted = set(q.group('').required)
    bad = []
    for a in aggregates:
        needed = {
            k[len('trait:') :]
            for k, v in (a.get('metadata') or {}).items()
            if k.startswith('trait:') and v == 'required'
        }
        if needed and not needed <= wanted:
            bad.append(a['uuid'])
    if bad:
        q.member_of.append('!in:' + ','.join(sorted(bad)))


def disabled_computes(q: Query, spec, conf, aggregates) -> None:
    """Disabled computes carry the COMPUTE_STATUS_DISABLED trait: forbid it on the root."""
    q.root_forbidden.add('COMPUTE_STATUS_DISABLED')


def device_profile_suffix(requester_id: str) -> str:
    """The placement group suffix of a device-profile group: ``device_profile_0`` ->
    ``_device_profile_0`` (query ``resources_device_profile_0``, mapping key
    ``_device_profile_0``)."""
    return requester_id if requester_id.startswith('_') else f'_{requester_id}'


def accelerators(q: Query, spec, conf, aggregates) -> None:
    """Device-profile groups (``spec.requested_resources``) become suffixed groups named
    after their requester id. The Nth device-profile group (from 0, counting only
    device-profile groups) without one is ``device_profile_<N>`` ->
    ``resources_device_profile_<N>``. The root must then carry
    ``COMPUTE_ACCELERATORS`` (a compute that can attach them)."""
    if spec.requested_resources:
        q.root_required.add('COMPUTE_ACCELERATORS')
    for index, rg in enumerate(spec.requested_resources or []):
        rid = rg.get('requester_id') or f'device_profile_{index}'
        grp = q.group(device_profile_suffix(rid))
        for rc, amount in (rg.get('resources') or {}).items():
            grp.resources[rc] = grp.resources.get(rc, 0) + int(amount)
        grp.required.update(rg.get('required_traits') or [])
        grp.forbidden.update(rg.get('forbidden_traits') or [])
        for m in rg.get('member_of') or []:
            grp.member_of.append(m)


def group_policy_and_limit(q: Query, spec, conf, aggregates) -> None:
    policy = spec.flavor.extra_specs.get('group_policy')
    if policy is not None:
        if policy not in ('none', 'isolate'):
            raise exception.InvalidRequest(
                "group_policy must be 'none' or 'isolate'"
            )
        q.group_policy = policy
    q.limit = conf.scheduler.max_placement_results


PREFILTERS = [
    flavor_resources,
    flavor_traits,
    image_traits,
    image_type,
    availability_zone,
    tenant_aggregates,
    isolated_aggregates,
    disabled_computes,
    accelerators,
    group_policy_and_limit,
]


def build_query(spec, conf, aggregates=()) -> list[tuple[str, str]]:
    q = Query()
    for fn in PREFILTERS:
        fn(q, spec, conf, list(aggregates))
    return q.params()
