"""Tables of the placement database (SQLAlchemy 2 declarative).

The object layer uses the Core tables (``Model.__table__``) directly: each
write is a handful of statements. ``placement_state`` is a single row of
change counters; every write that changes provider structure (providers,
inventories, traits, aggregates, resource classes) bumps ``structure`` and
every write of allocations bumps ``usage``, in the same transaction. The
allocation candidate cache compares the row with one tiny SELECT per request,
and the row lock also serialises writers across API processes so capacity
checks never race.
"""

import sqlalchemy as sa
from sqlalchemy import orm


class Base(orm.DeclarativeBase):
    pass


class PlacementState(Base):
    __tablename__ = 'placement_state'
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
    structure = sa.Column(sa.BigInteger, nullable=False, default=0)
    usage = sa.Column(sa.BigInteger, nullable=False, default=0)


class ResourceClass(Base):
    __tablename__ = 'resource_classes'
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    created_at = sa.Column(sa.DateTime, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class Trait(Base):
    __tablename__ = 'traits'
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    created_at = sa.Column(sa.DateTime, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class ResourceProvider(Base):
    __tablename__ = 'resource_providers'
    # A provider id is never given again once its provider is deleted (on
    # SQLite too: AUTOINCREMENT; MariaDB's and PostgreSQL's counters never
    # go back). The snapshot cache takes an id whose row holds the same
    # uuid, name, generation, parent and root for the provider it holds;
    # an id given again would make a provider deleted and created again
    # look unchanged (see nimbus.placement.objects.snapshot).
    __table_args__ = (
        sa.Index('ix_rp_root', 'root_provider_id'),
        sa.Index('ix_rp_parent', 'parent_provider_id'),
        {'sqlite_autoincrement': True},
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(200), nullable=False, unique=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    root_provider_id = sa.Column(sa.Integer, nullable=True)
    parent_provider_id = sa.Column(sa.Integer, nullable=True)
    created_at = sa.Column(sa.DateTime, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class Inventory(Base):
    __tablename__ = 'inventories'
    __table_args__ = (
        sa.UniqueConstraint('resource_provider_id', 'resource_class_id'),
        sa.Index('ix_inv_rc', 'resource_class_id'),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    resource_provider_id = sa.Column(sa.Integer, nullable=False)
    resource_class_id = sa.Column(sa.Integer, nullable=False)
    total = sa.Column(sa.Integer, nullable=False)
    reserved = sa.Column(sa.Integer, nullable=False)
    min_unit = sa.Column(sa.Integer, nullable=False)
    max_unit = sa.Column(sa.Integer, nullable=False)
    step_size = sa.Column(sa.Integer, nullable=False)
    allocation_ratio = sa.Column(sa.Float, nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class ConsumerType(Base):
    __tablename__ = 'consumer_types'
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)


class Consumer(Base):
    __tablename__ = 'consumers'
    __table_args__ = (
        sa.Index('ix_consumer_project_user', 'project_id', 'user_id'),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=False)
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    consumer_type_id = sa.Column(sa.Integer, nullable=True)
    created_at = sa.Column(sa.DateTime, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class Allocation(Base):
    __tablename__ = 'allocations'
    __table_args__ = (
        sa.Index(
            'ix_alloc_rp_rc', 'resource_provider_id', 'resource_class_id'
        ),
        sa.Index('ix_alloc_consumer', 'consumer_id'),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    resource_provider_id = sa.Column(sa.Integer, nullable=False)
    consumer_id = sa.Column(sa.String(36), nullable=False)
    resource_class_id = sa.Column(sa.Integer, nullable=False)
    used = sa.Column(sa.Integer, nullable=False)
    created_at = sa.Column(sa.DateTime, nullable=True)
    updated_at = sa.Column(sa.DateTime, nullable=True)


class ProviderTrait(Base):
    __tablename__ = 'resource_provider_traits'
    __table_args__ = (sa.Index('ix_rpt_trait', 'trait_id'),)
    resource_provider_id = sa.Column(sa.Integer, primary_key=True)
    trait_id = sa.Column(sa.Integer, primary_key=True)


class ProviderAggregate(Base):
    __tablename__ = 'resource_provider_aggregates'
    __table_args__ = (sa.Index('ix_rpa_agg', 'aggregate_uuid'),)
    resource_provider_id = sa.Column(sa.Integer, primary_key=True)
    aggregate_uuid = sa.Column(sa.String(36), primary_key=True)


STATE = PlacementState.__table__
RC = ResourceClass.__table__
TRAIT = Trait.__table__
RP = ResourceProvider.__table__
INV = Inventory.__table__
CTYPE = ConsumerType.__table__
CONSUMER = Consumer.__table__
ALLOC = Allocation.__table__
RPT = ProviderTrait.__table__
RPA = ProviderAggregate.__table__
