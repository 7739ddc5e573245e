"""``application`` for gunicorn: ``gunicorn nimbus.api.wsgi:application``.

The config file comes from ``NIMBUS_CONFIG_FILE`` (default
``/etc/nimbus/nimbus.conf``). The app builds its own dependencies (API
database, cell directory, conductor and scheduler clients on
``[DEFAULT] transport_url``, a broker: the in-process bus is refused) through :func:`nimbus.services.api_app`.
"""

import os

DEFAULT_CONFIG = '/etc/nimbus/nimbus.conf'


def init_application(config_file=None):

    from nimbus.common import config
    from nimbus.common import secrets
    from nimbus import services

    config_file = config_file or os.environ.get(
        'NIMBUS_CONFIG_FILE', DEFAULT_CONFIG
    )
    files = [config_file] if os.path.exists(config_file) else []
    conf = config.build_conf([], default_config_files=files)
    secrets.setup_logging(conf)
    from nimbus.common import rpc

    try:
        rpc.require_broker(conf, 'nimbus.api.wsgi')
    except rpc.NoBroker as exc:
        raise RuntimeError(str(exc)) from None
    return services.api_app(conf)


def __getattr__(name):
    # Built on first use, so importing this module has no side effects.
    if name == 'application':
        global application
        application = init_application()
        return application
    raise AttributeError(name)
