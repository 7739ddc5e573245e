"""Nimbus Placement: a drop-in for the OpenStack Placement API 1.0-1.39.

Layout (as OpenStack Placement): :mod:`.handler` is the route table,
``handlers/<noun>.py`` are thin REST handlers (policy, microversion, schema,
one domain call, response), ``schemas/<noun>.py`` the JSON schemas per
microversion, ``objects/<noun>.py`` the persistence (SQLAlchemy Core),
``candidates/`` the allocation candidate engine, :mod:`.wsgi` the app
factory, :mod:`.direct` the in-process client and :mod:`.conf` the options.

Speed: every write bumps a one-row change counter in the same transaction;
``GET /allocation_candidates`` and ``GET /resource_providers`` work on an
in-process snapshot that one tiny SELECT per request keeps fresh (usage-only
changes refresh usages and generations without reloading the structure),
which stays correct with several API processes on one database. Provider
summaries are serialised once per snapshot and responses are written as
JSON bytes; writers queue on an in-process lock before the database's
(``docs/placement.md`` describes the design, the differences from
OpenStack Placement and the benchmark).
"""
