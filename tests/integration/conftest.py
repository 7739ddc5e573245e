"""Integration fixtures: fresh RabbitMQ vhosts and fresh databases per run.

Missing services skip these tests with a one-line reason, or fail them when
CI=true (see nimbus.testing.infra).
"""

import pytest

from nimbus.testing import infra


@pytest.fixture
def fresh():
    """Call ``fresh.vhost()`` or ``fresh.database('mysql'|'postgresql')``;
    everything is removed after the test."""
    cleanups = []

    class Fresh:
        @staticmethod
        def vhost():
            url, cleanup = infra.rabbit_vhost()
            cleanups.append(cleanup)
            return url

        @staticmethod
        def database(kind):
            url, cleanup = infra.database(kind)
            cleanups.append(cleanup)
            return url

    yield Fresh
    for cleanup in reversed(cleanups):
        try:
            cleanup()
        except Exception:  # best effort; the name is unique anyway
            pass
