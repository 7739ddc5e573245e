"""Key pairs in the API database: per user, by name (the only module
that writes the ``key_pairs`` table)."""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from nimbus.db.api import models


class KeyPairNotFound(Exception):
    def __init__(self, name, user_id):
        super().__init__('Keypair %s not found for user %s' % (name, user_id))


class KeyPairExists(Exception):
    def __init__(self, name):
        super().__init__("Key pair '%s' already exists." % name)


def to_dict(row):
    return {
        'id': row.id,
        'name': row.name,
        'user_id': row.user_id,
        'fingerprint': row.fingerprint,
        'public_key': row.public_key,
        'type': row.type,
        'created_at': row.created_at,
        'updated_at': row.updated_at,
    }


def _row(session, user_id, name):
    return session.execute(
        sa.select(models.KeyPair).where(
            models.KeyPair.user_id == user_id, models.KeyPair.name == name
        )
    ).scalar()


def get(db, user_id, name):
    with db.session() as session:
        row = _row(session, user_id, name)
        if row is None:
            raise KeyPairNotFound(name, user_id)
        return to_dict(row)


def list_for_user(db, user_id):
    """The user's key pairs, oldest first."""
    with db.session() as session:
        return [
            to_dict(row)
            for row in session.execute(
                sa.select(models.KeyPair)
                .where(models.KeyPair.user_id == user_id)
                .order_by(models.KeyPair.id.asc())
            ).scalars()
        ]


def count_for_user(db, user_id):
    with db.session() as session:
        return session.execute(
            sa.select(sa.func.count()).where(models.KeyPair.user_id == user_id)
        ).scalar()


def create(db, values):
    """Store a key pair; KeyPairExists when the user has one of that
    name (the unique constraint decides between concurrent creates)."""
    try:
        with db.session() as session:
            if _row(session, values['user_id'], values['name']) is not None:
                raise KeyPairExists(values['name'])
            row = models.KeyPair(**values)
            session.add(row)
            session.flush()
            return to_dict(row)
    except db_exc.DBDuplicateEntry as exc:
        raise KeyPairExists(values['name']) from exc


def delete(db, user_id, name):
    with db.session() as session:
        row = _row(session, user_id, name)
        if row is None:
            raise KeyPairNotFound(name, user_id)
        session.delete(row)
