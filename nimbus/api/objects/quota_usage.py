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


def _cores_ram_from_databases(api_db, cells, project_id):
    with api_db.session() as session:
        flavors = [
            row.instance.get('flavor')
            for row in build_requests.of_project(session, project_id)
        ]
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
    return _flavor_sums(flavors)


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


def allowed_instances(deps, ctx, project_id, flavor, min_count, max_count):
    """How many of ``max_count`` servers of ``flavor`` the project may
    create now: ``max_count`` when all fit, fewer (never below
    ``min_count``) when only some do, as Nova does. Raises
    :class:`QuotaExceeded` when not even ``min_count`` fit."""
    limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    used = project_usage(deps, ctx, project_id)
    per_instance = {
        'instances': 1,
        'cores': int(flavor['vcpus']),
        'ram': int(flavor['memory_mb']),
    }
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


def recheck_instances(deps, ctx, project_id, flavor, count):
    """After a create wrote the records of its ``count`` servers of
    ``flavor`` (so the usage counts them): raise :class:`QuotaExceeded`
    when the project is now over its instances, cores or RAM limit, as
    Nova's ``[quota] recheck_quota`` does. The message is Nova's: what
    the request asked for, what the project's other servers use."""
    limits = quotas.project_limits(deps.conf, deps.api_db, project_id)
    used = project_usage(deps, ctx, project_id)
    requested = {
        'instances': count,
        'cores': int(flavor['vcpus']) * count,
        'ram': int(flavor['memory_mb']) * count,
    }
    # The records just written are in ``used``, except, with placement
    # counting, cores and RAM: a server holds allocations only once it is
    # scheduled, so the others' are those placement knows (as in Nova,
    # placement counting cannot see the cores and RAM of racing creates).
    others = dict(used)
    others['instances'] = max(used['instances'] - count, 0)
    if not deps.conf.quota.count_usage_from_placement:
        for r in ('cores', 'ram'):
            others[r] = max(used[r] - requested[r], 0)
    overs = [
        r
        for r in requested
        if limits[r] >= 0
        and requested[r] > 0
        and others[r] + requested[r] > limits[r]
    ]
    if overs:
        raise QuotaExceeded(exceeded_message(overs, requested, others, limits))


def check_metadata(deps, project_id, metadata):
    limit = quotas.project_limits(deps.conf, deps.api_db, project_id)[
        'metadata_items'
    ]
    if limit >= 0 and len(metadata or {}) > limit:
        raise QuotaExceeded(
            'Quota exceeded for metadata_items: Requested '
            '%d, but the limit is %d metadata items' % (len(metadata), limit)
        )


def check_personality(deps, project_id, files):
    """Personality files (below 2.57) within ``injected_files``,
    ``injected_file_path_bytes`` and ``injected_file_content_bytes``
    (the contents counted decoded, as the guest would get them)."""
    if not files:
        return
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


def check_group_members(deps, project_id, current, count):
    """Adding ``count`` servers to a group of ``current`` members stays
    within ``server_group_members``."""
    limit = quotas.project_limits(deps.conf, deps.api_db, project_id)[
        'server_group_members'
    ]
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
