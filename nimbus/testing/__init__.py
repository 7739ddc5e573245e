"""Test helpers shipped as library code (as nameko does).

- :mod:`nimbus.testing.infra`: reach the real RabbitMQ, MariaDB and
  PostgreSQL, make a fresh vhost or database per run, and apply the rule
  that with ``CI=true`` a missing service fails instead of skipping.
- :class:`nimbus.allinone.Cloud`: the whole cloud in-process.
- :mod:`nimbus.testing.daemons`: run the real daemons as processes.
"""
