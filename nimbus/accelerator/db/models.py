"""Tables of the accelerator database (SQLAlchemy 2 declarative).

The object modules use the Core tables (``Model.__table__``). An ARQ row
carries its pending ``accelerator-request-bound`` event (``event_status``,
``event_pending``, ``event_attempts``, ``event_next_at``): the event is
written in the same transaction as the state it reports, so it survives a
restart and is never sent before that state is committed.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from nimbus.common.db import types


class Base(orm.DeclarativeBase):
    pass


class DeviceProfile(Base):
    __tablename__ = 'device_profiles'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    description = sa.Column(sa.Text, nullable=True)
    groups = sa.Column(types.JSONText, nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class AcceleratorRequest(Base):
    __tablename__ = 'accelerator_requests'
    __table_args__ = (
        sa.Index('ix_arq_instance', 'instance_uuid'),
        sa.Index('ix_arq_state', 'state'),
        sa.Index('ix_arq_profile', 'device_profile_name'),
        sa.Index('ix_arq_event', 'event_pending', 'event_next_at'),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    state = sa.Column(sa.String(32), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=True)
    device_profile_name = sa.Column(sa.String(255), nullable=False)
    device_profile_group_id = sa.Column(sa.Integer, nullable=False)
    device_profile_group = sa.Column(types.JSONText, nullable=False)
    hostname = sa.Column(sa.String(255), nullable=True)
    device_rp_uuid = sa.Column(sa.String(36), nullable=True)
    instance_uuid = sa.Column(sa.String(36), nullable=True)
    attach_handle_uuid = sa.Column(sa.String(36), nullable=True)
    attach_handle_type = sa.Column(sa.String(32), nullable=True)
    attach_handle_info = sa.Column(sa.Text, nullable=True)
    failure_reason = sa.Column(sa.Text, nullable=True)
    event_status = sa.Column(sa.String(16), nullable=True)
    event_pending = sa.Column(sa.Boolean, nullable=False, default=False)
    event_attempts = sa.Column(sa.Integer, nullable=False, default=0)
    event_next_at = sa.Column(sa.DateTime, nullable=True)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class Device(Base):
    __tablename__ = 'devices'
    __table_args__ = (sa.Index('ix_device_hostname', 'hostname'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    type = sa.Column(sa.String(32), nullable=False)
    vendor = sa.Column(sa.String(255), nullable=False)
    model = sa.Column(sa.String(255), nullable=False)
    std_board_info = sa.Column(sa.Text, nullable=True)
    vendor_board_info = sa.Column(sa.Text, nullable=True)
    hostname = sa.Column(sa.String(255), nullable=False)
    driver_name = sa.Column(sa.String(255), nullable=True)
    status = sa.Column(sa.String(32), nullable=False, default='enabled')
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class Deployable(Base):
    __tablename__ = 'deployables'
    __table_args__ = (sa.Index('ix_deployable_rp', 'rp_uuid'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    device_id = sa.Column(
        sa.Integer, sa.ForeignKey('devices.id'), nullable=False
    )
    name = sa.Column(sa.String(255), nullable=False)
    num_accelerators = sa.Column(sa.Integer, nullable=False)
    rp_uuid = sa.Column(sa.String(36), nullable=True)
    driver_name = sa.Column(sa.String(255), nullable=True)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class AttachHandle(Base):
    __tablename__ = 'attach_handles'
    __table_args__ = (sa.Index('ix_handle_arq', 'arq_uuid'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    deployable_id = sa.Column(
        sa.Integer, sa.ForeignKey('deployables.id'), nullable=False
    )
    attach_type = sa.Column(sa.String(32), nullable=False)
    attach_info = sa.Column(sa.Text, nullable=False)
    in_use = sa.Column(sa.Boolean, nullable=False, default=False)
    arq_uuid = sa.Column(sa.String(36), nullable=True)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class Attribute(Base):
    """Cyborg's attributes: a key and a value of a deployable (an
    operator's, or a trait or resource class a driver would report)."""

    __tablename__ = 'attributes'
    __table_args__ = (sa.Index('ix_attribute_deployable', 'deployable_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    deployable_id = sa.Column(
        sa.Integer, sa.ForeignKey('deployables.id'), nullable=False
    )
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=False)
    updated_at = sa.Column(sa.DateTime, nullable=True)
