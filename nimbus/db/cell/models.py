"""Tables of a cell database: one per cell.

A cell holds its instances, their faults and build attempts, its services
and its compute nodes. Computes never open this database: their writes go
through the cell conductor.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from nimbus.common.db.types import JSONText
from nimbus.common.db.types import TimestampMixin
from nimbus.common.db.types import utcnow


class Base(orm.DeclarativeBase):
    pass


class Service(TimestampMixin, Base):
    __tablename__ = 'services'
    __table_args__ = (sa.UniqueConstraint('host', 'binary'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    host = sa.Column(sa.String(255), nullable=False)
    binary = sa.Column(sa.String(255), nullable=False)
    topic = sa.Column(sa.String(255), nullable=True)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    disabled_reason = sa.Column(sa.String(255), nullable=True)
    forced_down = sa.Column(sa.Boolean, nullable=False, default=False)
    last_seen_up = sa.Column(sa.DateTime, nullable=True)
    report_count = sa.Column(sa.Integer, nullable=False, default=0)
    version = sa.Column(sa.Integer, nullable=False, default=1)
    availability_zone = sa.Column(sa.String(255), nullable=True)


class ComputeNode(TimestampMixin, Base):
    """A hypervisor. ``uuid`` is also its root resource provider's uuid."""

    __tablename__ = 'compute_nodes'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    host = sa.Column(sa.String(255), nullable=False, index=True)
    hypervisor_hostname = sa.Column(sa.String(255), nullable=False)
    hypervisor_type = sa.Column(sa.String(255), nullable=False, default='fake')
    hypervisor_version = sa.Column(sa.Integer, nullable=False, default=1)
    cpu_info = sa.Column(JSONText, nullable=True)
    host_ip = sa.Column(sa.String(64), nullable=True)
    vcpus = sa.Column(sa.Integer, nullable=False, default=0)
    memory_mb = sa.Column(sa.Integer, nullable=False, default=0)
    local_gb = sa.Column(sa.Integer, nullable=False, default=0)
    vcpus_used = sa.Column(sa.Integer, nullable=False, default=0)
    memory_mb_used = sa.Column(sa.Integer, nullable=False, default=0)
    local_gb_used = sa.Column(sa.Integer, nullable=False, default=0)
    running_vms = sa.Column(sa.Integer, nullable=False, default=0)
    current_workload = sa.Column(sa.Integer, nullable=False, default=0)
    cpu_allocation_ratio = sa.Column(sa.Float, nullable=False, default=16.0)
    ram_allocation_ratio = sa.Column(sa.Float, nullable=False, default=1.5)
    disk_allocation_ratio = sa.Column(sa.Float, nullable=False, default=1.0)
    supported_instances = sa.Column(JSONText, nullable=True)
    numa_topology = sa.Column(JSONText, nullable=True)
    pci_stats = sa.Column(JSONText, nullable=True)
    metrics = sa.Column(JSONText, nullable=True)
    # The hypervisor's free-form stats, {name: string value} (migration
    # 0002); ComputeCapabilitiesFilter matches unscoped extra specs to them.
    stats = sa.Column(JSONText, nullable=True)
    failed_builds = sa.Column(sa.Integer, nullable=False, default=0)


class Instance(TimestampMixin, Base):
    __tablename__ = 'instances'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    display_name = sa.Column(sa.String(255), nullable=True)
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
    user_id = sa.Column(sa.String(255), nullable=True)
    host = sa.Column(sa.String(255), nullable=True, index=True)
    node = sa.Column(sa.String(255), nullable=True)
    compute_node_uuid = sa.Column(sa.String(36), nullable=True)
    vm_state = sa.Column(sa.String(32), nullable=False)
    task_state = sa.Column(sa.String(32), nullable=True)
    power_state = sa.Column(sa.Integer, nullable=False, default=0)
    flavor = sa.Column(JSONText, nullable=False)
    image_ref = sa.Column(sa.String(255), nullable=True)
    availability_zone = sa.Column(sa.String(255), nullable=True)
    metadata_items = sa.Column(JSONText, nullable=True)
    accel_uuids = sa.Column(JSONText, nullable=True)
    # 0003: the server group (late group check on the compute) and the
    # request spec with the untried alternates of a build under way.
    instance_group_uuid = sa.Column(sa.String(36), nullable=True, index=True)
    build_alternates = sa.Column(JSONText, nullable=True)
    # 0004: what only the compute API reads back (nimbus.common.server_attributes).
    server_attributes = sa.Column(JSONText, nullable=True)
    # 0005: who locked the server ('owner' or 'admin'; NULL: unlocked)
    # and why (2.73).
    locked_by = sa.Column(sa.String(32), nullable=True)
    locked_reason = sa.Column(sa.String(255), nullable=True)
    launched_at = sa.Column(sa.DateTime, nullable=True)
    terminated_at = sa.Column(sa.DateTime, nullable=True)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(sa.DateTime, nullable=True)
    # A copy of an instance another cell owns (a cross-cell resize or cold
    # migrate under way, migration 0007): never listed or counted.
    hidden = sa.Column(
        sa.Boolean, nullable=False, default=False, server_default=sa.false()
    )


class InstanceFault(Base):
    __tablename__ = 'instance_faults'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)
    code = sa.Column(sa.Integer, nullable=False, default=500)
    message = sa.Column(sa.String(255), nullable=False)
    details = sa.Column(sa.Text, nullable=True)
    host = sa.Column(sa.String(255), nullable=True)
    created_at = sa.Column(sa.DateTime, default=utcnow, nullable=False)


class BuildAttempt(Base):
    """One try at building an instance on one host, and how it ended."""

    __tablename__ = 'build_attempts'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)
    host = sa.Column(sa.String(255), nullable=False)
    node = sa.Column(sa.String(255), nullable=True)
    result = sa.Column(sa.String(32), nullable=False)
    reason = sa.Column(sa.Text, nullable=True)
    created_at = sa.Column(sa.DateTime, default=utcnow, nullable=False)


class InstanceAction(Base):
    """One user request on an instance (os-instance-actions, migration
    0005): who asked for what, and when it ended."""

    __tablename__ = 'instance_actions'
    __table_args__ = (
        sa.Index(
            'instance_actions_instance_uuid_request_id',
            'instance_uuid',
            'request_id',
        ),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    action = sa.Column(sa.String(255), nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    request_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=True)
    project_id = sa.Column(sa.String(255), nullable=True)
    start_time = sa.Column(sa.DateTime, nullable=False, default=utcnow)
    finish_time = sa.Column(sa.DateTime, nullable=True)
    message = sa.Column(sa.String(255), nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class InstanceActionEvent(Base):
    """One step of an instance action on a service (migration 0005)."""

    __tablename__ = 'instance_actions_events'
    id = sa.Column(sa.Integer, primary_key=True)
    action_id = sa.Column(
        sa.Integer,
        sa.ForeignKey('instance_actions.id'),
        nullable=False,
        index=True,
    )
    event = sa.Column(sa.String(255), nullable=False)
    start_time = sa.Column(sa.DateTime, nullable=False, default=utcnow)
    finish_time = sa.Column(sa.DateTime, nullable=True)
    result = sa.Column(sa.String(255), nullable=True)
    traceback = sa.Column(sa.Text, nullable=True)
    host = sa.Column(sa.String(255), nullable=True)
    details = sa.Column(sa.Text, nullable=True)


class Migration(TimestampMixin, Base):
    """One move of an instance (migration 0006), in Nova's shape: a
    resize, a cold migration, a live migration or an evacuation, from a
    source host to a destination, with the status the move is in. Its
    ``uuid`` is the placement consumer that holds the source's
    allocation while the move is under way (consumer_type MIGRATION)."""

    __tablename__ = 'migrations'
    __table_args__ = (
        sa.Index('migrations_instance_uuid_status', 'instance_uuid', 'status'),
        sa.Index(
            'migrations_source_compute_status', 'source_compute', 'status'
        ),
        sa.Index('migrations_dest_compute_status', 'dest_compute', 'status'),
        sa.Index('migrations_updated_at', 'updated_at'),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    migration_type = sa.Column(sa.String(32), nullable=False)
    status = sa.Column(sa.String(32), nullable=False)
    source_compute = sa.Column(sa.String(255), nullable=True)
    source_node = sa.Column(sa.String(255), nullable=True)
    dest_compute = sa.Column(sa.String(255), nullable=True)
    dest_node = sa.Column(sa.String(255), nullable=True)
    dest_host = sa.Column(sa.String(255), nullable=True)
    old_flavor = sa.Column(JSONText, nullable=True)
    new_flavor = sa.Column(JSONText, nullable=True)
    cross_cell_move = sa.Column(sa.Boolean, nullable=False, default=False)
    hidden = sa.Column(sa.Boolean, nullable=False, default=False)
    user_id = sa.Column(sa.String(255), nullable=True)
    project_id = sa.Column(sa.String(255), nullable=True)
    # Live migration progress (GET /servers/{id}/migrations/{id}).
    memory_total = sa.Column(sa.BigInteger, nullable=True)
    memory_processed = sa.Column(sa.BigInteger, nullable=True)
    memory_remaining = sa.Column(sa.BigInteger, nullable=True)
    disk_total = sa.Column(sa.BigInteger, nullable=True)
    disk_processed = sa.Column(sa.BigInteger, nullable=True)
    disk_remaining = sa.Column(sa.BigInteger, nullable=True)
    # What the move needs to finish or undo itself (the source's
    # allocation as placement held it, a chosen host, the request id),
    # never shown on the API.
    details = sa.Column(JSONText, nullable=True)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
