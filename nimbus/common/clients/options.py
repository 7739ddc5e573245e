"""How services reach placement and the accelerator API."""

from oslo_config import cfg

from nimbus.common.clients import accelerator
from nimbus.common.clients import auth

GROUP = 'placement_client'

PLACEMENT_CLIENT_OPTS = [
    cfg.URIOpt(
        'endpoint',
        default='http://127.0.0.1:8778',
        help='Base URL of the placement API.',
    ),
    cfg.StrOpt(
        'auth_strategy',
        default='noauth2',
        choices=['noauth2', 'keystone'],
        help='noauth2: send the token "nimbus:service" with roles '
        'admin,service (development and the all-in-one runner). '
        'keystone: authenticate through a keystoneauth session '
        "loaded from this group (auth_type and the plugin's "
        'options, or auth_section naming the group that holds '
        'them, e.g. keystone_authtoken).',
    ),
    cfg.IntOpt(
        'timeout',
        default=60,
        min=1,
        help='Seconds before a placement request times out.',
    ),
    cfg.IntOpt(
        'retries',
        default=5,
        min=0,
        help='Retries of a request that failed to connect or got a '
        '5xx, with exponential backoff.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(PLACEMENT_CLIENT_OPTS, group=GROUP)
    auth.register_opts(conf, GROUP)
    accelerator.register_opts(conf)


def list_opts():
    return [
        (GROUP, PLACEMENT_CLIENT_OPTS + auth.list_opts())
    ] + accelerator.list_opts()
