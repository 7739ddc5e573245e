"""The cell conductor's compare-and-swap of one instance (its
``instance_update``, twice in every build), in SQLAlchemy Core.

The same UPDATE as :func:`nimbus.db.cell_instances.transition` (one
statement builder, :func:`~nimbus.db.cell_instances.swap_statement`),
executed on a connection in a transaction of its own (no ORM session):
the ORM's bulk-update machinery (evaluating the WHERE against the objects
a session holds, which the session of one swap never has), the load of
the whole row as an ORM object (its request spec with the alternates
included, decoded for nothing) and the session itself were most of the
cell conductor's CPU in a boot. What is read back is the columns of the
Instance contract only (:func:`~nimbus.db.cell_instances.to_dict`).
"""

import sqlalchemy as sa

from nimbus.db import cell_instances as instances
from nimbus.db.cell_instances import contract
from nimbus.db.cell import models

_INSTANCES = models.Instance.__table__
_ATTEMPTS = models.BuildAttempt.__table__
_FAULTS = models.InstanceFault.__table__
_CONTRACT = contract.COLUMNS


def swap(
    connection,
    instance_uuid,
    expected_vm_states,
    updates,
    expected_host=None,
    expected_task_states=None,
    attempt=None,
    read=True,
):
    """:func:`~nimbus.db.cell_instances.transition` on ``connection``
    (in a transaction: ``engine.begin()``), answering the
    instance as :func:`~nimbus.db.cell_instances.to_dict` makes it (or
    None when the swap did not hold). ``attempt`` (a BuildAttempt) is
    recorded when the swap holds, once: when the swap may be a repeat of
    one that held already (its reply lost, the caller retrying with the
    new state among the expected ones), it is added only when the
    instance has no attempt on that host with that result yet.
    ``read=False``: the instance is not read back; the answer is ``{}``
    when the swap held (None when not)."""
    built = instances.swap_statement(
        instance_uuid,
        expected_vm_states,
        updates,
        expected_host,
        expected_task_states,
    )
    if built is None:
        return None
    query, values, fault = built
    if connection.execute(query).rowcount != 1:
        return None
    if fault:
        # As instances.add_fault writes it.
        connection.execute(
            sa.insert(_FAULTS).values(
                instance_uuid=instance_uuid,
                code=fault.get('code', 500),
                message=fault.get('message', 'Error')[:255],
                details=fault.get('details'),
                host=values.get('host'),
            )
        )
    row = (
        connection.execute(
            _CONTRACT.where(_INSTANCES.c.uuid == instance_uuid)
        ).first()
        if read
        else None
    )
    if attempt is not None:
        new_state = values.get('vm_state')
        repeat = new_state is None or new_state in expected_vm_states
        if not (repeat and _has_attempt(connection, instance_uuid, attempt)):
            connection.execute(
                sa.insert(_ATTEMPTS).values(
                    instance_uuid=instance_uuid,
                    host=attempt.host,
                    node=attempt.node,
                    result=attempt.result,
                    reason=attempt.reason,
                )
            )
    return instances.to_dict(row) if read else {}


def _has_attempt(connection, instance_uuid, attempt):
    return (
        connection.execute(
            sa.select(_ATTEMPTS.c.id)
            .where(
                _ATTEMPTS.c.instance_uuid == instance_uuid,
                _ATTEMPTS.c.host == attempt.host,
                _ATTEMPTS.c.result == attempt.result,
            )
            .limit(1)
        ).first()
        is not None
    )
