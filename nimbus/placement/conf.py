"""Options of the placement service.

Names match OpenStack Placement's where they overlap, so its operators
find the same knobs: ``[placement_database] connection`` and the
``[placement]`` candidate and retry options.
"""

from oslo_config import cfg
from oslo_middleware import cors

from nimbus.common.db import options as db_options

DATABASE_OPTS = [
    cfg.StrOpt(
        'connection',
        secret=True,
        default=None,
        help='SQLAlchemy URL of the placement database, e.g. '
        'sqlite:////var/lib/nimbus/placement.sqlite or '
        'mysql+pymysql://nimbus:secret@db/placement. No default: '
        'the deployer (or the embedded runner) must set it.',
    ),
    cfg.BoolOpt(
        'sync_on_startup',
        default=True,
        help='Run the placement database migrations when the API starts.',
    ),
]

PLACEMENT_OPTS = [
    cfg.IntOpt(
        'max_allocation_candidates',
        default=-1,
        help='Largest number of allocation candidates one GET '
        '/allocation_candidates returns when the request has no '
        'smaller limit; -1 means no cap.',
    ),
    cfg.BoolOpt(
        'randomize_allocation_candidates',
        default=False,
        help='Shuffle the candidates instead of the deterministic '
        'order, so that schedulers sharing a cap spread out.',
    ),
    cfg.StrOpt(
        'allocation_candidates_generation_strategy',
        default='breadth-first',
        choices=[
            ('depth-first', 'Finish one root before the next.'),
            (
                'breadth-first',
                'Round-robin across roots so a '
                'cap does not favour the first '
                'trees.',
            ),
        ],
        help='Order in which candidates are generated when a cap applies.',
    ),
    cfg.IntOpt(
        'allocation_conflict_retry_count',
        default=10,
        min=1,
        help='Attempts in all of a write of allocations (PUT and '
        'POST /allocations, DELETE /allocations/{consumer}, '
        'POST /reshaper) when a provider generation changed '
        'between its read and its write; after the last one the '
        'client gets 409 placement.concurrent_update.',
    ),
]


# register_opts and list_opts: the pair each option module has (the
# services and oslo-config-generator call them); alike by design.
def register_opts(conf):
    conf.register_opts(
        DATABASE_OPTS + db_options.POOL_OPTS, group='placement_database'
    )
    conf.register_opts(PLACEMENT_OPTS, group='placement')
    # oslo.middleware's CORS options, read by its middleware (wsgi.py)
    conf.register_opts(cors.CORS_OPTS, group='cors')


def list_opts():
    return [
        ('placement_database', DATABASE_OPTS + db_options.POOL_OPTS),
        ('placement', PLACEMENT_OPTS),
        ('cors', cors.CORS_OPTS),
    ]
