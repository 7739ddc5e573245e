"""/traits, /traits/{name} and /resource_providers/{uuid}/traits (1.6)."""

import re

from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.objects import trait as trait_obj
from nimbus.placement.schemas import trait as schema

_CUSTOM = re.compile(schema.CUSTOM_NAME)


@util.since((1, 6))
@util.json_only
def list_traits(state, req, resp):
    util.authorize(state, req, 'placement:traits:list')
    util.check_query(req, ('name', 'associated'))
    kwargs = {}
    name = util.single(req, 'name')
    if name is not None:
        op, colon, value = name.partition(':')
        # As Placement: an operator other than in/startswith filters
        # nothing; a value without any operator is refused.
        if op == 'in':
            kwargs['names'] = [n.strip() for n in value.split(',')]
        elif op == 'startswith':
            kwargs['prefix'] = value
        elif not colon:
            raise exception.BadRequest(
                'Badly formatted name parameter. Expected name query string '
                'parameter in form: ?name=[in|startswith]:[name1,name2|prefix]'
                '. Got: "%s"' % name
            )
    associated = util.single(req, 'associated')
    if associated is not None:
        if associated.lower() not in ('true', 'false'):
            raise exception.BadRequest(
                'Invalid query string parameters: associated must be true or '
                'false. Got: %s' % associated
            )
        kwargs['associated'] = associated.lower() == 'true'
    names = state.pdb.read(trait_obj.list_names, **kwargs)
    util.send(req, resp, {'traits': names})


@util.since((1, 6))
def show(state, req, resp, name):
    util.authorize(state, req, 'placement:traits:show')
    if not state.pdb.read(trait_obj.exists, name):
        raise exception.NotFound('No such trait(s): %s' % name)
    util.no_content(resp)
    _cache_headers(req, resp)


def _cache_headers(req, resp):
    if util.version(req) >= (1, 15):
        resp.set_header('cache-control', 'no-cache')
        resp.set_header('last-modified', util.http_date())


@util.since((1, 6))
def update(state, req, resp, name):
    util.authorize(state, req, 'placement:traits:update')
    if not _CUSTOM.match(name) or len(name) > 255:
        raise exception.BadRequest(
            "The trait %s does not match the pattern '%s'."
            % (name, schema.CUSTOM_NAME)
        )
    created = state.pdb.write(trait_obj.ensure, name)
    util.location(req, resp, '/traits/%s' % name)
    resp.status = '201 Created' if created else '204 No Content'
    _cache_headers(req, resp)


@util.since((1, 6))
def delete(state, req, resp, name):
    util.authorize(state, req, 'placement:traits:delete')
    state.pdb.write(trait_obj.delete, name)
    util.no_content(resp)


@util.since((1, 6))
@util.json_only
def list_for_provider(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:traits:list')
    util.send_of_provider(
        state, req, resp, uuid, 'traits', trait_obj.provider_traits
    )


@util.since((1, 6))
def set_for_provider(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:traits:update')
    data = util.body(req, schema.SET_PROVIDER_TRAITS)

    def run(conn):
        rp, rows = rp_obj.get_ref_with(
            conn, uuid, *trait_obj.PROVIDER_TRAIT_COLUMNS, with_uuid=False
        )
        return trait_obj.set_provider_traits(
            conn,
            rp['id'],
            data['resource_provider_generation'],
            data['traits'],
            have={r[0] for r in rows},
        )

    gen = state.pdb.write(run, late_lock=True)
    names = sorted(set(data['traits']))
    util.send(
        req, resp, {'traits': names, 'resource_provider_generation': gen}
    )


@util.since((1, 6))
def delete_for_provider(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:traits:delete')

    def run(conn):
        rp = rp_obj.get_ref(conn, uuid)
        trait_obj.set_provider_traits(conn, rp['id'], rp['generation'], [])

    state.pdb.write(run)
    util.no_content(resp)
