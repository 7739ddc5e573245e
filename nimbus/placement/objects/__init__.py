"""Persistence of placement data (SQLAlchemy Core over nimbus.placement.db).

Every write runs in one transaction through :func:`base.PlacementDB.write`,
which first bumps the change counter row: that both invalidates the
allocation candidate caches of every API process and serialises writers.
"""
