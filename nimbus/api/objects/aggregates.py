"""Host aggregates (with hosts and metadata) in the API database."""

import math

from oslo_log import log as logging
from stevedore import extension

from nimbus.common.db import types as db_types
from nimbus.db import aggregates as aggregate_rows

LOG = logging.getLogger(__name__)

AZ_KEY = 'availability_zone'


# Per-aggregate limits read by AggregateNumInstancesFilter and
# AggregateIoOpsFilter (``host_state.aggregate_min(<key>, ...)``), with the
# scheduler option whose bounds they share.
LIMIT_KEYS = ('max_instances_per_host', 'max_io_ops_per_host')


class AggregateNotFound(Exception):
    pass


class InvalidMetadata(ValueError):
    pass


def _option_min(group, name):
    from nimbus.scheduler import conf as sched_conf

    for grp, opts in sched_conf.GROUPS:
        if grp == group:
            for opt in opts:
                if opt.name == name:
                    return getattr(opt.type, 'min', None)
    return None


def _plugin_classes(namespace):
    """The scheduler's filter or weigher classes, read through their entry
    points (the plugin contract, built-ins included), so the API needs no
    import of the scheduler's modules."""
    manager = extension.ExtensionManager(
        namespace,
        invoke_on_load=False,
        on_load_failure_callback=lambda mgr, ep, exc: LOG.warning(
            'Scheduler plugin %s failed to load: %s', ep, exc
        ),
    )
    return [ext.plugin for ext in manager]


def numeric_metadata_rules():
    """``{key: (kind, minimum, strict)}`` for every aggregate metadata key the
    scheduler reads as a number: each weigher's multiplier override (plugins
    included), each aggregate filter's allocation ratio and the two
    per-host limits. The scheduler ignores a value it cannot parse, so the
    API refuses it instead."""
    rules = {}
    for cls in _plugin_classes('nimbus.scheduler.weighers'):
        key = getattr(cls, 'aggregate_key', None) or getattr(
            cls, 'multiplier_option', None
        )
        if key:
            rules[key] = (
                'number',
                _option_min(
                    getattr(cls, 'multiplier_group', 'filter_scheduler'),
                    getattr(cls, 'multiplier_option', None),
                ),
                False,
            )
    for cls in _plugin_classes('nimbus.scheduler.filters'):
        key = getattr(cls, 'ratio_key', None)
        if key:
            rules[key] = ('number', 0.0, True)
    for key in LIMIT_KEYS:
        rules[key] = ('integer', _option_min('filter_scheduler', key), False)
    return rules


def check_metadata(metadata):
    """Raise :class:`InvalidMetadata` naming the first numeric key whose
    value the scheduler could not use."""
    rules = numeric_metadata_rules()
    for key in sorted(metadata):
        value = metadata[key]
        if value is None or key not in rules:
            continue
        kind, minimum, strict = rules[key]
        text = str(value).strip()
        try:
            number = int(text) if kind == 'integer' else float(text)
        except ValueError as exc:
            raise InvalidMetadata(
                'Aggregate metadata %s must be %s, got %r.'
                % (
                    key,
                    'an integer' if kind == 'integer' else 'a number',
                    value,
                )
            ) from exc
        if not math.isfinite(number):
            raise InvalidMetadata(
                'Aggregate metadata %s must be a finite '
                'number, got %r.' % (key, value)
            )
        if minimum is not None and (
            number <= minimum if strict else number < minimum
        ):
            raise InvalidMetadata(
                'Aggregate metadata %s must be %s %g, got '
                '%r.'
                % (key, 'above' if strict else 'at least', minimum, value)
            )


class AggregateExists(Exception):
    pass


def to_dict(row):
    metadata = {m.key: m.value for m in row.metadata_items}
    return {
        'id': row.id,
        'uuid': row.uuid,
        'name': row.name,
        'availability_zone': metadata.get(AZ_KEY),
        'hosts': sorted(h.host for h in row.hosts),
        'metadata': metadata,
        'created_at': row.created_at,
        'updated_at': row.updated_at,
    }


def _row(session, aggregate_id):
    row = aggregate_rows.get(session, aggregate_id)
    if row is None:
        raise AggregateNotFound(aggregate_id)
    return row


def get(db, aggregate_id):
    with db.session() as session:
        return to_dict(_row(session, aggregate_id))


def list_all(db):
    with db.session() as session:
        return [to_dict(r) for r in aggregate_rows.listing(session)]


def zones_by_host(db):
    """``{host: set(zone names)}`` from aggregate metadata."""
    zones = {}
    for agg in list_all(db):
        if agg['availability_zone']:
            for host in agg['hosts']:
                zones.setdefault(host, set()).add(agg['availability_zone'])
    return zones


def default_zone(conf):
    """The availability zone of hosts that are in no aggregate with an
    ``availability_zone``: ``[scheduler] default_availability_zone``, the
    one the scheduler applies (a config that still sets the deprecated
    ``[api] default_availability_zone`` sets this one), so the API never
    shows or accepts a zone the scheduler would not honour."""
    return conf.scheduler.default_availability_zone


def service_zone(conf, service, zones_by_host):
    """The zone a service is shown in: a compute's come from its
    aggregates (``zones_by_host``), else :func:`default_zone`, the same rule
    the scheduler applies; other services are in the internal zone."""
    if not service['binary'].endswith('compute'):
        return conf.api.internal_service_availability_zone
    names = zones_by_host.get(service['host'])
    if names:
        return ','.join(sorted(names))
    return service['availability_zone'] or default_zone(conf)


def zone_names(db):
    return {
        a['availability_zone'] for a in list_all(db) if a['availability_zone']
    }


def create(db, name, availability_zone=None):
    with db.session() as session:
        if aggregate_rows.name_taken(session, name):
            raise AggregateExists(name)
        row = aggregate_rows.add(
            session,
            name,
            {AZ_KEY: availability_zone} if availability_zone else None,
        )
        return to_dict(row)


def update(
    db, aggregate_id, name=None, availability_zone=None, set_zone=False
):
    with db.session() as session:
        row = _row(session, aggregate_id)
        if name is not None and name != row.name:
            if aggregate_rows.name_taken(session, name):
                raise AggregateExists(name)
            row.name = name
        if set_zone:
            aggregate_rows.set_metadata(row, {AZ_KEY: availability_zone})
        row.updated_at = db_types.utcnow()
        session.flush()
        return to_dict(row)


def delete(db, aggregate_id):
    with db.session() as session:
        session.delete(_row(session, aggregate_id))


def add_host(db, aggregate_id, host):
    with db.session() as session:
        row = _row(session, aggregate_id)
        aggregate_rows.add_host(row, host)
        session.flush()
        return to_dict(row)


def remove_host(db, aggregate_id, host):
    with db.session() as session:
        row = _row(session, aggregate_id)
        for item in list(row.hosts):
            if item.host == host:
                row.hosts.remove(item)
        session.flush()
        return to_dict(row)


def set_metadata(db, aggregate_id, metadata):
    with db.session() as session:
        row = _row(session, aggregate_id)
        aggregate_rows.set_metadata(row, metadata)
        row.updated_at = db_types.utcnow()
        session.flush()
        return to_dict(row)
