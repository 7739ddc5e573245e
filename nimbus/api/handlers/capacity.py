"""``GET /os-scheduler/capacity`` (admin; a Nimbus extension): how many
more of a flavor fit, and where, without claiming.

    GET /v2.1/os-scheduler/capacity?flavor=m1.small[&flavor=m1.large]
        [&availability_zone=Z][&group=SERVER_GROUP_UUID][&image=IMAGE]
        [&hosts=false]

One answer per flavor (``docs/insight.md``): ``total``, per host (unless
``hosts=false``), per aggregate, availability zone and cell, and which
resource class runs out first.
"""

from nimbus.api import policies
from nimbus.api.objects import flavors as flavor_obj
from nimbus.api import util
from nimbus.api.handlers import server_create
from nimbus.api.handlers import server_create_body
from nimbus.common.wsgi import errors

MAX_FLAVORS = 20

QUERY = {
    'type': 'object',
    'properties': {
        'flavor': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'availability_zone': {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
        },
        'group': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'image': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'hosts': {'type': 'string', 'enum': ['true', 'false']},
    },
    'required': ['flavor'],
}


def _flavor(req, ref):
    """A flavor by id, else by name (an operator's question names it)."""
    try:
        return flavor_obj.get(util.deps(req).api_db, ref)
    except flavor_obj.FlavorNotFound:
        pass
    named = [
        f
        for f in flavor_obj.list_all(util.deps(req).api_db, is_public=None)
        if f['name'] == ref
    ]
    if len(named) != 1:
        raise errors.HTTPError(
            404 if not named else 409,
            'Flavor %s could not be found.' % ref
            if not named
            else 'Flavor name %s is ambiguous: use its id.' % ref,
        )
    return named[0]


def capacity(req, resp):
    util.authorize(req, policies.CAPACITY)
    resp.media = {'capacity': answer(req, util.query(req, QUERY))}


def answer(req, params):
    """One capacity answer per ``flavor`` of the query (``params``: the
    validated query; the dashboard's capacity panel asks here too)."""
    refs = req.params.get('flavor')
    refs = [refs] if isinstance(refs, str) else list(refs)
    if len(refs) > MAX_FLAVORS:
        raise util.bad_request('At most %d flavors at once.' % MAX_FLAVORS)
    scheduler_api = util.deps(req).scheduler_api
    if scheduler_api is None:
        raise errors.HTTPError(503, 'No scheduler client is configured.')
    image = None
    if params.get('image'):
        image = server_create_body.lookup_image(req, params['image'])
    hints = {'group': params['group']} if params.get('group') else {}
    hints = server_create_body.normalise_hints(hints)
    zone, host, node = server_create_body.zone_of(
        req, params.get('availability_zone')
    )
    per_host = params.get('hosts', 'true') == 'true'
    answers = []
    for ref in refs:
        flavor = _flavor(req, ref)
        spec = server_create.request_spec_for(
            req,
            flavor,
            image,
            zone,
            hints,
            [],
            force_host=host,
            force_node=node,
        )
        result = scheduler_api.capacity(util.ctx(req), spec, per_host=per_host)
        answers.append(
            dict(
                result,
                flavor={'id': flavor['flavorid'], 'name': flavor['name']},
            )
        )
    return answers
