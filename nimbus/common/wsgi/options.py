"""Options of the REST APIs: authentication and listening addresses."""

from oslo_config import cfg

# cheroot's own default is 5: a burst of clients beyond it waits for SYN
# retransmissions (1 s, 3 s, 7 s...) or times out connecting.
DEFAULT_LISTEN_BACKLOG = 1024

API_OPTS = [
    cfg.StrOpt(
        'auth_strategy',
        default='keystone',
        choices=[
            (
                'keystone',
                'Validate tokens with keystonemiddleware '
                '([keystone_authtoken] options).',
            ),
            (
                'noauth2',
                'Development only: the token is '
                '"user[:project]", roles come from '
                'X-Roles, user "admin" is an admin.',
            ),
        ],
        help='How API requests are authenticated.',
    )
]

WSGI_OPTS = [
    cfg.HostAddressOpt(
        'api_listen', default='0.0.0.0', help='Address nimbus-api listens on.'
    ),
    cfg.PortOpt(
        'api_listen_port', default=8774, help='Port nimbus-api listens on.'
    ),
    cfg.HostAddressOpt(
        'placement_listen',
        default='0.0.0.0',
        help='Address nimbus-placement-api listens on.',
    ),
    cfg.PortOpt(
        'placement_listen_port',
        default=8778,
        help='Port nimbus-placement-api listens on.',
    ),
    cfg.IntOpt(
        'max_request_body_size',
        default=1048576,
        min=1024,
        help='Largest JSON request body, in bytes, either REST API '
        'reads; a larger one is refused with 413 before it is '
        'read or parsed. Image data uploads are not JSON and '
        'are not limited by this.',
    ),
    cfg.IntOpt(
        'max_query_string_length',
        default=8192,
        min=256,
        help='Longest query string, in bytes, either REST API '
        'reads; a longer one is refused with 400 naming this '
        'option before any parameter is parsed. It bounds what '
        'one query can ask: traits, aggregates and request '
        'groups of allocation candidates, server filters.',
    ),
    cfg.IntOpt(
        'max_request_list_length',
        default=1000,
        min=10,
        help='Most items of any one list and most keys of any one '
        'object in a JSON request body (allocations per '
        'request, resource classes per allocation, aggregates '
        'and traits of a provider, servers per external event '
        'request...); a longer one is refused with 400 naming '
        'this option and where it is.',
    ),
    cfg.IntOpt(
        'server_threads',
        default=16,
        min=1,
        help='Worker threads of the embedded HTTP server (cheroot). '
        'For production behind gunicorn this is unused.',
    ),
    cfg.IntOpt(
        'listen_backlog',
        default=DEFAULT_LISTEN_BACKLOG,
        min=1,
        help='Listen backlog of the embedded HTTP servers (nimbus-api, '
        "nimbus-placement-api, nimbus-accelerator-api; cheroot's "
        'request_queue_size): how many connections the kernel '
        'holds, handshake done, until the server accepts them. '
        'A client connecting beyond it is not answered and '
        'retries after a second or times out. Linux caps it at '
        'net.core.somaxconn (/proc/sys/net/core/somaxconn); the '
        'server uses the smaller of the two and logs a warning '
        "when it is capped. Behind gunicorn, gunicorn's own "
        '--backlog applies.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(API_OPTS, group='api')
    conf.register_opts(WSGI_OPTS, group='wsgi')


def list_opts():
    return [('api', API_OPTS), ('wsgi', WSGI_OPTS)]
