"""``nimbus.wsgi.api:application``: the compute API (what ``nimbus-api``
serves) for a WSGI server; see :mod:`nimbus.wsgi`. Needs a broker
(``transport_url``), as ``nimbus-api`` does. Its config file:
``$OS_NIMBUS_CONFIG_DIR/nimbus.conf`` unless ``NIMBUS_CONFIG_FILE``."""

from nimbus import services
from nimbus import wsgi

application = wsgi.Application(
    'nimbus-api', 'nimbus.conf', services.api_app, needs_bus=True
)
