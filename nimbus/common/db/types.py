"""Column types and helpers shared by the models of every database."""

import datetime

import orjson
import sqlalchemy as sa
from sqlalchemy import types


class JSONText(types.TypeDecorator):
    """A JSON document stored as text (portable across the three engines)."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        return orjson.dumps(value).decode()

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return orjson.loads(value)


def uuid_column(**kwargs):
    return sa.Column(sa.String(36), **kwargs)


def utcnow():
    """Naive UTC now: every Nimbus table stores UTC without a zone."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class TimestampMixin:
    """``created_at``/``updated_at`` columns, set by SQLAlchemy."""

    created_at = sa.Column(sa.DateTime, default=utcnow, nullable=False)
    updated_at = sa.Column(sa.DateTime, onupdate=utcnow)
