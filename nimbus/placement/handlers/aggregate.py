"""/resource_providers/{uuid}/aggregates (1.1; generation from 1.19)."""

from nimbus.common.wsgi import errors
from nimbus.placement.handlers import util
from nimbus.placement.objects import aggregate as agg_obj
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.schemas import aggregate as schema


def _send(req, resp, gen, aggs):
    body = {'aggregates': aggs}
    if util.version(req) >= (1, 19):
        body['resource_provider_generation'] = gen
    util.send(req, resp, body)


@util.since((1, 1))
@util.json_only
def list_for_provider(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:aggregates:list')
    _send(
        req, resp, *util.of_provider(state, uuid, agg_obj.provider_aggregates)
    )


@util.since((1, 1))
def set_for_provider(state, req, resp, uuid):
    util.authorize(
        state, req, 'placement:resource_providers:aggregates:update'
    )
    new = util.version(req) >= (1, 19)
    # As Placement: the media type (415), then the provider (404), then
    # the body (400). The provider is looked up here only for a body that
    # is refused; otherwise the write below finds it missing.
    util.require_json(req)
    try:
        data = util.body(req, schema.PUT_1_19 if new else schema.PUT_1_1)
    except errors.HTTPError:
        state.pdb.read(rp_obj.get_ref, uuid)
        raise
    sent = data['aggregates'] if new else data
    aggs = [util.normalize_uuid(a) for a in sent]

    def run(conn):
        rp, rows = rp_obj.get_ref_with(
            conn, uuid, *agg_obj.PROVIDER_AGGREGATE_COLUMNS, with_uuid=False
        )
        gen = data['resource_provider_generation'] if new else rp['generation']
        return agg_obj.set_provider_aggregates(
            conn, rp['id'], gen, aggs, increment=new, have={r[0] for r in rows}
        )

    # Placement answers the aggregates as the request listed them.
    _send(req, resp, state.pdb.write(run, late_lock=True), list(sent))
