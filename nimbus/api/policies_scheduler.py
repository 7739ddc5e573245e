"""Default policy rules of Nimbus's own scheduler routes, cells and the
dashboard (``nimbus:...`` names; administrators only)."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import rule

DRY_RUN = 'nimbus:scheduler:dry_run'
MOVE_DRY_RUN = 'nimbus:scheduler:move_dry_run'
RECORDS = 'nimbus:scheduler:records'
CELLS = 'nimbus:cells:index'
CAPACITY = 'nimbus:scheduler:capacity'
DASHBOARD = 'nimbus:dashboard'

# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = [
    rule(
        DRY_RUN,
        ADMIN,
        'Ask the scheduler where a server would go, without claiming.',
        [('POST', '/os-scheduler/dry-run')],
    ),
    rule(
        MOVE_DRY_RUN,
        ADMIN,
        'Ask the scheduler where a server would be moved (migrate, live '
        'migrate, evacuate), without claiming.',
        [('POST', '/os-scheduler/move-dry-run')],
    ),
    rule(
        RECORDS,
        ADMIN,
        "Read the scheduler's decision records.",
        [('GET', '/os-scheduler/records')],
    ),
    rule(
        CELLS,
        ADMIN,
        'List the cells with their numbers of hosts and servers.',
        [('GET', '/os-cells')],
    ),
    rule(
        CAPACITY,
        ADMIN,
        'Ask how many more of a flavor fit and where, without claiming.',
        [('GET', '/os-scheduler/capacity')],
    ),
    rule(
        DASHBOARD,
        ADMIN,
        "Read the dashboard's data: hosts, "
        'failed builds, capacity and the decision stream (the page and '
        'its scripts are public; they hold no data).',
        [
            ('GET', '/dashboard/api/hosts'),
            ('GET', '/dashboard/api/failures'),
            ('GET', '/dashboard/api/capacity'),
            ('GET', '/dashboard/api/decisions'),
            ('GET', '/dashboard/api/events'),
        ],
    ),
]
