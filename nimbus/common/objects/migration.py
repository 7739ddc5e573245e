"""Migration (contract 1.0): the record of one move of an instance, as it
crosses a process (conductor to compute, cell conductor to the API).

The types and statuses are Nova's, so that ``os-migrations`` and the
stock clients read them as they read Nova's:

- ``resize`` and ``migration`` (a cold migrate, a resize to the same
  flavor): pre-migrating (the conductor made it and the destination is
  claimed) -> migrating (the source powers the guest off) ->
  post-migrating (the destination spawns it) -> finished (the server is
  VERIFY_RESIZE) -> confirming -> confirmed, or reverting -> reverted;
  error when it failed.
- ``live-migration``: accepted -> queued -> preparing -> running ->
  completed; failed or error when it failed, cancelled when aborted
  (2.24).
- ``evacuation``: accepted -> pre-migrating -> done (the server runs on
  the destination) -> completed (the source, when it came back, removed
  what it held); failed or error.

A move is *in progress* while its status is not final (:data:`FINAL`);
an instance has at most one move in progress. While a move is in
progress the source host's allocation in placement belongs to the
migration's uuid (consumer_type MIGRATION) and the instance's own
consumer holds the destination's, as Nova has done since Queens.
"""

from __future__ import annotations

import dataclasses

from nimbus.common.objects import base

RESIZE = 'resize'
MIGRATION = 'migration'
LIVE_MIGRATION = 'live-migration'
EVACUATION = 'evacuation'
TYPES = (RESIZE, MIGRATION, LIVE_MIGRATION, EVACUATION)

STATUSES = (
    'accepted',
    'queued',
    'preparing',
    'pre-migrating',
    'migrating',
    'running',
    'post-migrating',
    'finished',
    'confirming',
    'confirmed',
    'reverting',
    'reverted',
    'completed',
    'done',
    'cancelled',
    'failed',
    'error',
)
# Statuses in which a move is over (Nova's list for "not in progress").
FINAL = frozenset(
    (
        'confirmed',
        'reverted',
        'error',
        'failed',
        'completed',
        'cancelled',
        'done',
    )
)


def check_type(migration_type):
    return _one_of(migration_type, TYPES, 'migration_type')


def check_status(status):
    return _one_of(status, STATUSES, 'status')


def _one_of(value, allowed, field):
    if value not in allowed:
        raise base.MalformedPrimitive(
            'migration: %s must be one of %s, not %r'
            % (field, ', '.join(allowed), value)
        )
    return value


_STRINGS = (
    'source_compute',
    'source_node',
    'dest_compute',
    'dest_node',
    'dest_host',
    'user_id',
    'project_id',
)
_DICTS = ('old_flavor', 'new_flavor', 'details')


@dataclasses.dataclass(slots=True)
class Migration:
    uuid: str
    instance_uuid: str
    migration_type: str
    status: str
    id: int | None = None
    source_compute: str | None = None
    source_node: str | None = None
    dest_compute: str | None = None
    dest_node: str | None = None
    dest_host: str | None = None
    old_flavor: dict | None = None
    new_flavor: dict | None = None
    cross_cell_move: bool = False
    user_id: str | None = None
    project_id: str | None = None
    details: dict = dataclasses.field(default_factory=dict)

    VERSION = '1.0'

    def __post_init__(self):
        check_type(self.migration_type)
        check_status(self.status)

    @property
    def in_progress(self):
        return self.status not in FINAL

    @classmethod
    def from_primitive(cls, d: dict) -> 'Migration':
        name = 'migration'
        base.check(d, name, cls.VERSION)
        values = {}
        for field in ('uuid', 'instance_uuid', 'migration_type', 'status'):
            values[field] = base.expect(d.get(field), str, name, field, False)
        values['id'] = base.expect(d.get('id'), int, name, 'id')
        for field in _STRINGS:
            values[field] = base.expect(d.get(field), str, name, field)
        for field in _DICTS:
            values[field] = base.expect(d.get(field), dict, name, field)
        values['details'] = values['details'] or {}
        values['cross_cell_move'] = bool(
            base.expect(
                d.get('cross_cell_move', False), bool, name, 'cross_cell_move'
            )
        )
        return cls(**values)

    @classmethod
    def from_row(cls, row: dict) -> 'Migration':
        """From :func:`nimbus.db.cell_migrations.to_dict`'s dict."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in names})

    def to_primitive(self) -> dict:
        return base.primitive(self, self.VERSION)
