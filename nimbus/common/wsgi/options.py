"""Options of the REST APIs: authentication and listening addresses."""

from oslo_config import cfg

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
]


def register_opts(conf):
    conf.register_opts(API_OPTS, group='api')
    conf.register_opts(WSGI_OPTS, group='wsgi')


def list_opts():
    return [('api', API_OPTS), ('wsgi', WSGI_OPTS)]
