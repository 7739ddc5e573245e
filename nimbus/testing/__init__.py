"""Test helpers shipped as library code (as nameko does).

- :mod:`nimbus.testing.infra`: reach the real RabbitMQ, MariaDB and
  PostgreSQL, make a fresh vhost or database per run, and apply the rule
  that with ``CI=true`` a missing service fails instead of skipping.
- :class:`nimbus.allinone.Cloud`: the whole cloud in-process.
- :mod:`nimbus.testing.daemons`: run the real daemons as processes.
- :mod:`nimbus.testing.private_rabbit` and
  :mod:`nimbus.testing.private_mariadb`: a RabbitMQ node and a MariaDB
  server of a test's own, for tests that restart or stop them (the
  machine's are shared and never restarted).
"""
