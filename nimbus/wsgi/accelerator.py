"""``nimbus.wsgi.accelerator:application``: the accelerator API (the
HTTP part of ``nimbus-accelerator-api``) for a WSGI server; see
:mod:`nimbus.wsgi`. Its config file: ``$OS_NIMBUS_CONFIG_DIR/
accelerator.conf`` (else ``nimbus.conf``) unless ``NIMBUS_CONFIG_FILE``.

The workers serve HTTP only: the RPC server of the agents' reports and the
binder that programs devices stay in the ``nimbus-accelerator-api`` daemon
(one per deployment), which must run beside them on the same database and
bus; a bind recorded by a worker is found by that binder at its next poll
(``[accelerator_api] bind_poll_interval``). Releases the API frees are
cast to the agents from the worker, so it needs a broker too."""

from nimbus import services
from nimbus import wsgi

application = wsgi.Application(
    'nimbus-accelerator-api',
    'accelerator.conf',
    services.accelerator_app,
    needs_bus=True,
)
