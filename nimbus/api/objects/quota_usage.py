"""What a project uses of its counted quotas, and the check at create.

Instances are the project's instance mappings not queued for delete (the
build requests and the instances of every cell, cell0 included). Cores and
RAM are the flavors of its build requests and of its undeleted instances in
the cells, or, with ``[quota] count_usage_from_placement``, placement's
``VCPU`` and ``MEMORY_MB`` usages of the project (``GET /usages``), as
Nova's option of that name does. Server groups are rows of the API database.
"""

import base64
import binascii

from oslo_log import log as logging

from nimbus.api.objects import quotas
from nimbus.db import build_requests
from nimbus.db import instance_mappings
from nimbus.db import request_specs
from nimbus.db import server_groups
from nimbus.db.cell_instances import queries as instance_queries

LOG = logging.getLogger(__name__)


class QuotaExceeded(Exception):
    """Over quota; ``str()`` is the message for the 403."""


class UsageUnavailable(Exception):
    """Usages could not be counted (placement or a cell unreachable)."""


def _instances(api_db, project_id):
    with api_db.session() as session:
        return instance_mappings.count_of_project(session, project_id)


def _server_groups(api_db, project_id):
    with api_db.session() as session:
        return server_groups.count_of_project(session, project_id)


def _flavor_sums(flavors):
    cores = ram = 0
    for flavor in flavors:
        cores += int((flavor or {}).get('vcpus') or 0)
        ram += int((flavor or {}).get('memory_mb') or 0)
    return cores, ram


def _cell_flavors(cells, project_id):
    """The flavors of the project's undeleted instances in every cell
    (cell0 included): one read-only transaction per cell."""
    flavors = []
    for cell in cells.cells(include_cell0=True):
        try:
            with cells.db(cell).session() as session:
                flavors.extend(
                    instance_queries.flavors_of_project(session, project_id)
                )
        except Exception as exc:  # noqa: BLE001 - a cell that does not answer counts nothing
            # As Nova's legacy counting: a cell that does not answer adds
            # nothing (its servers are not counted until it is back).
            LOG.warning(
                'Cell %s is unreachable (%s); its servers are left '
                'out of the quota usage',
                cell.name,
                exc,
            )
    return flavors


def _build_request_flavors(session, project_id):
    return [
        instance.get('flavor')
        for instance in build_requests.instances_of_project(
            session, project_id
        )
    ]


def _cores_ram_from_databases(api_db, cells, project_id):
    with api_db.session() as session:
        flavors = _build_request_flavors(session, project_id)
    return _flavor_sums(flavors + _cell_flavors(cells, project_id))


def _cores_ram_from_placement(placement, ctx, project_id):
    if placement is None:
        raise UsageUnavailable(
            '[quota] count_usage_from_placement is set '
            'but nimbus-api has no placement endpoint'
        )
    try:
        response = placement.request(
            ctx,
            'GET',
            '/usages',
            params={'project_id': project_id},
            version='1.9',
        )
    except Exception as exc:
        raise UsageUnavailable('placement is unreachable: %s' % exc) from exc
    if response.status_code != 200:
        raise UsageUnavailable(
            'placement answered %s to GET /usages' % response.status_code
        )
    usages = response.json().get('usages', {})
    return int(usages.get('VCPU', 0)), int(usages.get('MEMORY_MB', 0))


def project_usage(deps, ctx, project_id):
    """``{resource: in_use}`` for every counted resource of the project."""
    if deps.conf.quota.count_usage_from_placement:
        cores, ram = _cores_ram_from_placement(deps.placement, ctx, project_id)
    else:
        cores, ram = _cores_ram_from_databases(
            deps.api_db, deps.cells, project_id
        )
    return {
        'instances': _instances(deps.api_db, project_id),
        'cores': cores,
        'ram': ram,
        'server_groups': _server_groups(deps.api_db, project_id),
    }


def _headroom(limit, used):
    return None if limit < 0 else max(limit - used, 0)


def exceeded_message(overs, requested, used, limits):
    """Nova's 403 text for the resources ``overs`` over their limits."""
    return (
        'Quota exceeded for %s: Requested %s, but already used %s of %s '
        '%s'
        % (
            ', '.join(overs),
            ', '.join(str(requested[r]) for r in overs),
            ', '.join(str(used[r]) for r in overs),
            ', '.join(str(limits[r]) for r in overs),
            ', '.join(overs),
        )
    )


class Snapshot:
    """What a create's first check saw of its project: the effective
    ``limits``, the ``used`` instances, cores and RAM, and the uuids of
    the project's servers then (``seen``), which the recheck compares
    with the servers once its own are written."""

    def __init__(self, limits, used, seen):
        self.limits = limits
        self.used = used
        self.seen = seen
        self.build_request_flavors = []


def _counts_cores_ram(limits):
    return limits['cores'] >= 0 or limits['ram'] >= 0


def _counts_anything(limits):
    return limits['instances'] >= 0 or _counts_cores_ram(limits)


def read_snapshot(deps, project_id):
    """The API database's part of :func:`snapshot` (one transaction: the
    limits, the project's servers, the flavors of its build requests);
    :func:`count_cells` completes it. With no limit on instances, cores
    or RAM nothing is counted (no check or recheck looks at the usage):
    only the limits are read."""
    from_placement = deps.conf.quota.count_usage_from_placement
    with deps.api_db.session() as session:
        limits = quotas.project_limits_in(session, deps.conf, project_id)
        if not _counts_anything(limits):
            return Snapshot(limits, {'instances': 0}, set())
        # The servers before their build requests' flavors: a create
        # committed in between (MariaDB reads at READ COMMITTED) is then
        # counted twice at worst (here and as a racer in the recheck),
        # never missed.
        seen = instance_mappings.uuids_of_project(session, project_id)
        flavors = (
            _build_request_flavors(session, project_id)
            if _counts_cores_ram(limits) and not from_placement
            else []
        )
    snap = Snapshot(limits, {'instances': len(seen)}, seen)
    snap.build_request_flavors = flavors
    return snap


def count_cells(deps, ctx, project_id, snap):
    """Complete ``snap`` (:func:`read_snapshot`) with the cores and RAM
    in use: the build requests' and the cells' (one read-only transaction
    per cell), or placement's with ``[quota] count_usage_from_placement``
    (one ``GET /usages``); nothing is read when neither is limited."""
    cores = ram = 0
    if _counts_cores_ram(snap.limits):
        if deps.conf.quota.count_usage_from_placement:
            cores, ram = _cores_ram_from_placement(
                deps.placement, ctx, project_id
            )
        else:
            cores, ram = _flavor_sums(
                snap.build_request_flavors
                + _cell_flavors(deps.cells, project_id)
            )
    snap.used.update(cores=cores, ram=ram)
    return snap


def snapshot(deps, ctx, project_id):
    """The project's limits and usage for a create: its :class:`Snapshot`
    (:func:`read_snapshot`, then :func:`count_cells`)."""
    return count_cells(deps, ctx, project_id, read_snapshot(deps, project_id))


def _per_instance(flavor):
    return {
        'instances': 1,
        'cores': int(flavor['vcpus']),
        'ram': int(flavor['memory_mb']),
    }


def allowed_instances(snap, flavor, min_count, max_count):
    """How many of ``max_count`` servers of ``flavor`` the project of
    ``snap`` (a :class:`Snapshot`) may create now: ``max_count`` when all
    fit, fewer (never below ``min_count``) when only some do, as Nova
    does. Raises :class:`QuotaExceeded` when not even ``min_count``
    fit."""
    limits, used = snap.limits, snap.used
    per_instance = _per_instance(flavor)
    allowed = max_count
    for resource, each in per_instance.items():
        room = _headroom(limits[resource], used[resource])
        if room is not None and each > 0:
            allowed = min(allowed, room // each)
    if allowed >= min_count:
        return allowed
    requested = {r: each * max_count for r, each in per_instance.items()}
    requested['instances'] = (
        str(max_count)
        if min_count == max_count
        else '%d-%d' % (min_count, max_count)
    )
    overs = [
        r
        for r, each in per_instance.items()
        if limits[r] >= 0 and used[r] + each * max_count > limits[r]
    ]
    raise QuotaExceeded(exceeded_message(overs, requested, used, limits))


def _flavor_of(build_request, spec):
    if build_request is not None:
        return build_request.instance.get('flavor')
    return (spec or {}).get('flavor')


def _flavors_of(session, uuids):
    """The flavors of the servers ``uuids`` (their build requests', or,
    those already in a cell, their request specs'): two queries."""
    found = build_requests.get_many(session, uuids)
    rest = [u for u in uuids if u not in found]
    specs = request_specs.get_many(session, rest)
    return [_flavor_of(found.get(u), specs.get(u)) for u in uuids]


def recheck_instances(deps, snap, project_id, flavor, uuids):
    """After a create wrote the records of its servers ``uuids`` of
    ``flavor`` (committed, so that a racing create's recheck sees them):
    raise :class:`QuotaExceeded` when the project is now over its
    instances, cores or RAM limit, as Nova's ``[quota] recheck_quota``
    does. Not the whole check again: one statement lists the project's
    servers; those that are neither in ``snap`` (the first check's
    :class:`Snapshot`) nor this create's are the racing creates', and
    only their flavors are read (none, without a race). The instances are
    counted exactly; cores and RAM are the first check's plus the racing
    creates' (a server deleted meanwhile is still counted: a refusal
    errs on the safe side). The message is Nova's: what the request
    asked for, what the project's other servers use."""
    limits = snap.limits
    count = len(uuids)
    requested = {
        'instances': count,
        'cores': int(flavor['vcpus']) * count,
        'ram': int(flavor['memory_mb']) * count,
    }
    if all(limits[r] < 0 for r in requested):
        return
    ours = set(uuids)
    with deps.api_db.session() as session:
        now = instance_mappings.uuids_of_project(session, project_id)
        racing = sorted(now - snap.seen - ours)
        flavors = (
            _flavors_of(session, racing)
            if racing and _counts_cores_ram(limits)
            else []
        )
    cores, ram = _flavor_sums(flavors)
    others = {
        'instances': len(now - ours),
        'cores': snap.used['cores'] + cores,
        'ram': snap.used['ram'] + ram,
    }
    overs = [
        r
        for r in requested
        if limits[r] >= 0
        and requested[r] > 0
        and others[r] + requested[r] > limits[r]
    ]
    if overs:
        raise QuotaExceeded(exceeded_message(overs, requested, others, limits))


def check_metadata(deps, project_id, metadata, limits=None):
    if limits is None:
        limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    limit = limits['metadata_items']
    if limit >= 0 and len(metadata or {}) > limit:
        raise QuotaExceeded(
            'Quota exceeded for metadata_items: Requested '
            '%d, but the limit is %d metadata items' % (len(metadata), limit)
        )


def check_personality(deps, project_id, files, limits=None):
    """Personality files (below 2.57) within ``injected_files``,
    ``injected_file_path_bytes`` and ``injected_file_content_bytes``
    (the contents counted decoded, as the guest would get them)."""
    if not files:
        return
    if limits is None:
        limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    count = limits['injected_files']
    if count >= 0 and len(files) > count:
        raise QuotaExceeded(
            'Personality file limit exceeded: %d files, the limit is %d'
            % (len(files), count)
        )
    path_limit = limits['injected_file_path_bytes']
    content_limit = limits['injected_file_content_bytes']
    for item in files:
        path = str(item.get('path', ''))
        if path_limit >= 0 and len(path.encode('utf-8')) > path_limit:
            raise QuotaExceeded(
                'Personality file path exceeds maximum %d' % path_limit
            )
        contents = str(item.get('contents', ''))
        try:
            size = len(base64.b64decode(contents, validate=True))
        except (binascii.Error, ValueError):
            size = len(contents.encode('utf-8'))
        if content_limit >= 0 and size > content_limit:
            raise QuotaExceeded(
                'Personality file content exceeds maximum %d' % content_limit
            )


def check_group_members(deps, project_id, current, count, limits=None):
    """Adding ``count`` servers to a group of ``current`` members stays
    within ``server_group_members``."""
    if limits is None:
        limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    limit = limits['server_group_members']
    if limit >= 0 and current + count > limit:
        raise QuotaExceeded(
            'Quota exceeded, too many servers in group: '
            'Requested %d, but already used %d of %d '
            'server_group_members' % (count, current, limit)
        )


def check_server_group(deps, ctx, project_id):
    limit = quotas.project_limits(deps.conf, deps.api_db, project_id)[
        'server_groups'
    ]
    used = _server_groups(deps.api_db, project_id)
    if limit >= 0 and used + 1 > limit:
        raise QuotaExceeded(
            'Quota exceeded, too many server groups: '
            'Requested 1, but already used %d of %d '
            'server_groups' % (used, limit)
        )
