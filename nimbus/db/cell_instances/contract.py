"""Reading a cell's instances as the Instance contract carries them.

Part of the owner of the ``instances`` table
(:mod:`nimbus.db.cell_instances`). The contract's columns only, in
SQLAlchemy Core: the whole row as an ORM object drags the build's request
spec (the alternates included, a document of kilobytes) through a JSON
decode that nobody reads. The compare-and-swap of a build
(:mod:`~nimbus.db.cell_instances.swap`) reads its answer with
:data:`COLUMNS`; the periodic resource update of many hosts reads their
instances in one statement (:func:`on_hosts`).
"""

import sqlalchemy as sa

from nimbus.common.db import chunks
from nimbus.db import cell_instances as instances
from nimbus.db.cell import models

_INSTANCES = models.Instance.__table__
# The columns instances.to_dict reads.
COLUMNS = sa.select(
    *(
        _INSTANCES.c[name]
        for name in (
            'uuid',
            'display_name',
            'project_id',
            'user_id',
            'host',
            'node',
            'compute_node_uuid',
            'vm_state',
            'task_state',
            'power_state',
            'flavor',
            'image_ref',
            'availability_zone',
            'metadata_items',
            'accel_uuids',
            'launched_at',
            'created_at',
            'deleted',
        )
    )
)


def on_hosts(connection, hosts):
    """``{host: [instance dict]}`` (:func:`~nimbus.db.cell_instances.
    to_dict`) of the live instances the cell places on each of ``hosts``
    (the cell's own rows: not the hidden copy of a cross-cell move), as
    :func:`~nimbus.db.cell_instances.on_host` answers for one; every host
    asked is a key. One statement per chunk of hosts."""
    found = {host: [] for host in hosts}
    for part in chunks.chunked(found):
        rows = connection.execute(
            COLUMNS.where(
                _INSTANCES.c.host.in_(part),
                _INSTANCES.c.deleted.is_(False),
                _INSTANCES.c.hidden.is_(False),
            )
        )
        for row in rows:
            found[row.host].append(instances.to_dict(row))
    return found
