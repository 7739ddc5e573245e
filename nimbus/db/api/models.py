"""Tables of the API database: one per deployment, above the cells.

It holds what exists before (or regardless of) a cell: flavors, images,
aggregates, server groups, the build request and request spec of every
server, and the mappings that say which cell an instance or host lives in.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from nimbus.common.db.types import JSONText
from nimbus.common.db.types import TimestampMixin


class Base(orm.DeclarativeBase):
    pass


class CellMapping(TimestampMixin, Base):
    __tablename__ = 'cell_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    transport_url = sa.Column(sa.Text, nullable=False)
    database_connection = sa.Column(sa.Text, nullable=False)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)


class HostMapping(TimestampMixin, Base):
    __tablename__ = 'host_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    host = sa.Column(sa.String(255), nullable=False, unique=True)
    cell_id = sa.Column(
        sa.Integer, sa.ForeignKey('cell_mappings.id'), nullable=False
    )


class InstanceMapping(TimestampMixin, Base):
    __tablename__ = 'instance_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    cell_id = sa.Column(
        sa.Integer, sa.ForeignKey('cell_mappings.id'), nullable=True
    )
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
    user_id = sa.Column(sa.String(255), nullable=True)
    queued_for_delete = sa.Column(sa.Boolean, nullable=False, default=False)


class BuildRequest(TimestampMixin, Base):
    """A server the API accepted that has no cell yet."""

    __tablename__ = 'build_requests'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
    user_id = sa.Column(sa.String(255), nullable=True)
    # The server as the API will show it while it is being scheduled.
    instance = sa.Column(JSONText, nullable=False)
    # The schedule lease (nimbus.conductor.leases): which worker of a
    # super conductor is scheduling it, and since when.
    schedule_token = sa.Column(sa.String(36), nullable=True)
    schedule_started_at = sa.Column(sa.DateTime, nullable=True)


class RequestSpec(TimestampMixin, Base):
    __tablename__ = 'request_specs'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    spec = sa.Column(JSONText, nullable=False)


class Flavor(TimestampMixin, Base):
    __tablename__ = 'flavors'
    id = sa.Column(sa.Integer, primary_key=True)
    flavorid = sa.Column(sa.String(255), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    vcpus = sa.Column(sa.Integer, nullable=False)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    root_gb = sa.Column(sa.Integer, nullable=False, default=0)
    ephemeral_gb = sa.Column(sa.Integer, nullable=False, default=0)
    swap = sa.Column(sa.Integer, nullable=False, default=0)
    rxtx_factor = sa.Column(sa.Float, nullable=False, default=1.0)
    is_public = sa.Column(sa.Boolean, nullable=False, default=True)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    description = sa.Column(sa.Text, nullable=True)
    extra_specs = orm.relationship(
        'FlavorExtraSpec', lazy='selectin', cascade='all, delete-orphan'
    )
    # The projects granted a private flavor (os-flavor-access).
    projects = orm.relationship(
        'FlavorProject', lazy='selectin', cascade='all, delete-orphan'
    )


class FlavorExtraSpec(Base):
    __tablename__ = 'flavor_extra_specs'
    __table_args__ = (sa.UniqueConstraint('flavor_id', 'key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    flavor_id = sa.Column(
        sa.Integer,
        sa.ForeignKey('flavors.id', ondelete='CASCADE'),
        nullable=False,
    )
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class Aggregate(TimestampMixin, Base):
    __tablename__ = 'aggregates'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    hosts = orm.relationship(
        'AggregateHost', lazy='selectin', cascade='all, delete-orphan'
    )
    metadata_items = orm.relationship(
        'AggregateMetadata', lazy='selectin', cascade='all, delete-orphan'
    )


class AggregateHost(Base):
    __tablename__ = 'aggregate_hosts'
    __table_args__ = (sa.UniqueConstraint('aggregate_id', 'host'),)
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(
        sa.Integer,
        sa.ForeignKey('aggregates.id', ondelete='CASCADE'),
        nullable=False,
    )
    host = sa.Column(sa.String(255), nullable=False, index=True)


class AggregateMetadata(Base):
    __tablename__ = 'aggregate_metadata'
    __table_args__ = (sa.UniqueConstraint('aggregate_id', 'key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(
        sa.Integer,
        sa.ForeignKey('aggregates.id', ondelete='CASCADE'),
        nullable=False,
    )
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class InstanceGroup(TimestampMixin, Base):
    """A server group: a placement policy over its member instances."""

    __tablename__ = 'instance_groups'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
    user_id = sa.Column(sa.String(255), nullable=True)
    policy = sa.Column(sa.String(64), nullable=False)
    rules = sa.Column(JSONText, nullable=True)
    members = orm.relationship(
        'InstanceGroupMember', lazy='selectin', cascade='all, delete-orphan'
    )


class InstanceGroupMember(Base):
    __tablename__ = 'instance_group_members'
    __table_args__ = (sa.UniqueConstraint('group_id', 'instance_uuid'),)
    id = sa.Column(sa.Integer, primary_key=True)
    group_id = sa.Column(
        sa.Integer,
        sa.ForeignKey('instance_groups.id', ondelete='CASCADE'),
        nullable=False,
    )
    instance_uuid = sa.Column(sa.String(36), nullable=False, index=True)


class Image(TimestampMixin, Base):
    """A Glance-shaped image record (metadata only; no bits are stored)."""

    __tablename__ = 'images'
    id = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255), nullable=True)
    status = sa.Column(sa.String(32), nullable=False, default='active')
    visibility = sa.Column(sa.String(32), nullable=False, default='public')
    owner = sa.Column(sa.String(255), nullable=True)
    container_format = sa.Column(sa.String(32), nullable=True)
    disk_format = sa.Column(sa.String(32), nullable=True)
    min_disk = sa.Column(sa.Integer, nullable=False, default=0)
    min_ram = sa.Column(sa.Integer, nullable=False, default=0)
    size = sa.Column(sa.BigInteger, nullable=True)
    properties = sa.Column(JSONText, nullable=False, default=dict)


class SchedulingRecord(TimestampMixin, Base):
    """What the scheduler decided for a request and why (for admins)."""

    __tablename__ = 'scheduling_records'
    id = sa.Column(sa.Integer, primary_key=True)
    request_id = sa.Column(sa.String(255), nullable=False, index=True)
    instance_uuid = sa.Column(sa.String(36), nullable=True, index=True)
    outcome = sa.Column(sa.String(32), nullable=False)
    detail = sa.Column(JSONText, nullable=False)


class Quota(TimestampMixin, Base):
    """A project's own limit of one resource (os-quota-sets update)."""

    __tablename__ = 'quotas'
    __table_args__ = (sa.UniqueConstraint('project_id', 'resource'),)
    id = sa.Column(sa.Integer, primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class QuotaClass(TimestampMixin, Base):
    """A quota class's limit of one resource; class ``default`` overrides
    the ``[quota]`` options for every project without its own limit."""

    __tablename__ = 'quota_classes'
    __table_args__ = (sa.UniqueConstraint('class_name', 'resource'),)
    id = sa.Column(sa.Integer, primary_key=True)
    class_name = sa.Column(sa.String(255), nullable=False, index=True)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class KeyPair(TimestampMixin, Base):
    """A user's key pair (os-keypairs): an SSH public key or an X.509
    certificate, by name per user."""

    __tablename__ = 'key_pairs'
    __table_args__ = (sa.UniqueConstraint('user_id', 'name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=False, index=True)
    fingerprint = sa.Column(sa.String(255), nullable=False)
    public_key = sa.Column(sa.Text, nullable=False)
    type = sa.Column(sa.String(8), nullable=False, default='ssh')


class FlavorProject(TimestampMixin, Base):
    """A project granted a private flavor (os-flavor-access)."""

    __tablename__ = 'flavor_projects'
    __table_args__ = (sa.UniqueConstraint('flavor_id', 'project_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    flavor_id = sa.Column(
        sa.Integer,
        sa.ForeignKey('flavors.id', ondelete='CASCADE'),
        nullable=False,
    )
    project_id = sa.Column(sa.String(255), nullable=False, index=True)
