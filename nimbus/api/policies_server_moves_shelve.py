"""Default policy rules of shelve, unshelve and evacuate (POST
/servers/{id}/action), under Nova's names."""

from nimbus.api.policies_base import ADMIN
from nimbus.api.policies_base import OWNER_OR_ADMIN
from nimbus.api.policies_base import rule

_ACTION = [('POST', '/servers/{server_id}/action')]

SHELVE = 'os_compute_api:os-shelve:shelve'
SHELVE_OFFLOAD = 'os_compute_api:os-shelve:shelve_offload'
UNSHELVE = 'os_compute_api:os-shelve:unshelve'
UNSHELVE_TO_HOST = 'os_compute_api:os-shelve:unshelve_to_host'
EVACUATE = 'os_compute_api:os-evacuate'

# One declared rule per policy name (a contract: each names its own
# check, text and operations); alike by design.
RULES = [
    rule(SHELVE, OWNER_OR_ADMIN, 'Shelve a server (shelve).', _ACTION),
    rule(
        SHELVE_OFFLOAD,
        ADMIN,
        'Offload a shelved server (shelveOffload).',
        _ACTION,
    ),
    rule(UNSHELVE, OWNER_OR_ADMIN, 'Unshelve a server (unshelve).', _ACTION),
    rule(
        UNSHELVE_TO_HOST,
        ADMIN,
        'Unshelve an offloaded server to a chosen host (unshelve with '
        'host, 2.91).',
        _ACTION,
    ),
    rule(
        EVACUATE,
        ADMIN,
        'Evacuate a server from a down compute host to another one '
        '(evacuate).',
        _ACTION,
    ),
]
