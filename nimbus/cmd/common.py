"""What every daemon does first: parse options, set up oslo.log."""

import sys
import warnings

from oslo_config import cfg
from oslo_log import log as logging

from nimbus.common import config


def quiet_warnings():
    # eventlet's deprecation banner comes from a transitive import of
    # oslo.service; Nimbus does not use eventlet.
    warnings.filterwarnings('ignore', message='.*[Ee]ventlet.*')
    warnings.filterwarnings('ignore', category=DeprecationWarning)


def setup(name, argv=None, cli_opts=()):
    """Build and parse the config of daemon ``name``; returns the conf."""
    quiet_warnings()
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    config.register_all(conf)
    if cli_opts:
        conf.register_cli_opts(cli_opts)
    conf(sys.argv[1:] if argv is None else argv, project='nimbus',
         prog=name, default_config_files=[])
    logging.setup(conf, 'nimbus')
    return conf
