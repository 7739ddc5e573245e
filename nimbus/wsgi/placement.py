"""``nimbus.wsgi.placement:application``: the placement API (what
``nimbus-placement-api`` serves) for a WSGI server; see
:mod:`nimbus.wsgi`. Its config file: ``$OS_NIMBUS_CONFIG_DIR/
placement.conf`` (else ``nimbus.conf``) unless ``NIMBUS_CONFIG_FILE``.

With several workers, sync the database once before starting them
(``nimbus-manage db sync --database placement``) and set
``[placement_database] sync_on_startup = false``: every worker builds the
app, and concurrent schema upgrades of one database race."""

from nimbus import services
from nimbus import wsgi

application = wsgi.Application(
    'nimbus-placement-api', 'placement.conf', services.placement_app
)
