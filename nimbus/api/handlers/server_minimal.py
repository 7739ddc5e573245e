"""How a server of a down cell is shown, from microversion 2.69.

Its cell's database did not answer, so the API shows what the API
database knows (the instance mapping and the request spec) with status
``UNKNOWN``, the keys Nova's "Handling Down Cells" guide lists: a list
gives ``id``, ``status`` and ``links``; a detailed list adds ``tenant_id``
and ``created``; a show adds ``user_id``, ``image``, ``flavor``, the
availability zone and the power state (and ``server_groups`` from 2.71,
added by the show handler as for any server).
"""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import server_views

UNKNOWN = 'UNKNOWN'


def index(req, record):
    return {
        'id': record['uuid'],
        'status': UNKNOWN,
        'links': util.links(req, 'servers', record['uuid']),
    }


def detail(req, record):
    body = index(req, record)
    body.update(
        {
            'tenant_id': record['project_id'],
            'created': util.isotime(record.get('created_at')),
        }
    )
    return body


def show(req, record):
    body = detail(req, record)
    body.update(
        {
            # Servers created before user ids were mapped have none.
            'user_id': record.get('user_id') or UNKNOWN,
            # '' when the server booted from a volume.
            'image': server_views._image(req, record.get('image_ref')),
            'flavor': server_views._flavor(
                req,
                record.get('flavor') or {},
                util.can(req, policies.EXTRA_SPECS % 'index'),
            ),
            # The zone asked for at boot; the cell knows where it landed.
            'OS-EXT-AZ:availability_zone': record.get('availability_zone')
            or UNKNOWN,
            'OS-EXT-STS:power_state': 0,
        }
    )
    return body
