"""Test helpers shipped as library code (as nameko does).

- :mod:`nimbus.testing.infra`: reach the real RabbitMQ, MariaDB and
  PostgreSQL, make a fresh vhost or database per run, and apply the rule
  that with ``CI=true`` a missing service fails instead of skipping.
- :class:`nimbus.allinone.Cloud`: the whole cloud in-process;
  :mod:`nimbus.testing.quiet`: its periodic work pushed out, to count what
  one request costs.
- :mod:`nimbus.testing.daemons`: run the real daemons as processes;
  :mod:`nimbus.testing.daemon_group`: wait on them, stop them together.
- :mod:`nimbus.testing.private_rabbit` and
  :mod:`nimbus.testing.private_mariadb`: a RabbitMQ node and a MariaDB
  server of a test's own, for tests that restart or stop them (the
  machine's are shared and never restarted).
- :mod:`nimbus.testing.tcp_proxy`: cut a process off from a server.
- :mod:`nimbus.testing.rbac` and :mod:`nimbus.testing.identity_stub`: RBAC
  matrices of a REST API, and a Keystone stand-in for keystonemiddleware.

Harnesses for Nimbus's own developers (soak, Tempest, a real Keystone, the
fault suite) are not shipped: they live in ``harness/`` in the checkout.
"""
