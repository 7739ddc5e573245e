"""A row copied by its table's columns (a cross-cell move writes an
instance, its faults, actions and events into another cell's database):
every column of the row's model, so a column added to the model is
carried without touching the copy.

This writes nothing: it builds the new row, and the module that owns the
table (docs/contracts.md, "Owned tables") adds it to its session.
"""

import copy

import sqlalchemy as sa


def column_values(row, exclude=('id',)):
    """``{attribute: value}`` of every column of ``row`` (an ORM object)
    but those named in ``exclude`` (the row id by default); mutable
    values (JSON dicts and lists) are copied."""
    mapper = sa.inspect(row).mapper
    return {
        attr.key: copy.deepcopy(getattr(row, attr.key))
        for attr in mapper.column_attrs
        if not any(column.name in exclude for column in attr.columns)
    }


def copy_row(row, exclude=('id',), **overrides):
    """A new row of ``row``'s model (not in any session) with its column
    values but ``exclude``, then ``overrides`` (attribute: value; each
    must be a column)."""
    values = column_values(row, exclude)
    unknown = set(overrides) - {
        attr.key for attr in sa.inspect(row).mapper.column_attrs
    }
    if unknown:
        raise ValueError('not a column: %s' % ', '.join(sorted(unknown)))
    values.update(overrides)
    return type(row)(**values)
