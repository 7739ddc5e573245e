"""Scheduler explain: ``POST /os-scheduler/dry-run`` and
``GET /os-scheduler/records`` (admin only; Nimbus extensions)."""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.handlers import server_create
from nimbus.api.handlers import server_create_body
from nimbus.api.schemas import common
from nimbus.api.schemas import servers as server_schema
from nimbus.common.wsgi import errors
from nimbus.common.wsgi import json_body
from nimbus.db import scheduling_records

DRY_RUN = {
    'type': 'object',
    'properties': {
        'flavorRef': {'type': ['string', 'integer'], 'minLength': 1},
        'imageRef': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'scheduler_hints': server_schema.HINTS,
        'availability_zone': {
            'type': 'string',
            'minLength': 1,
            'maxLength': 255,
        },
        'num_instances': {'type': 'integer', 'minimum': 1, 'maximum': 10000},
    },
    'required': ['flavorRef'],
    'additionalProperties': False,
}

RECORDS_QUERY = {
    'type': 'object',
    'properties': dict(
        common.PAGING,
        **{
            'instance_uuid': common.UUID,
            'request_id': {'type': 'string', 'minLength': 1, 'maxLength': 255},
            'outcome': {'type': 'string', 'minLength': 1, 'maxLength': 32},
        },
    ),
}


def dry_run(req, resp):
    util.authorize(req, policies.DRY_RUN)
    body = json_body(req, DRY_RUN)
    scheduler_api = util.deps(req).scheduler_api
    if scheduler_api is None:
        raise errors.HTTPError(503, 'No scheduler client is configured.')
    flavor = server_create_body.lookup_flavor(req, body['flavorRef'])
    image = None
    if body.get('imageRef'):
        image = server_create_body.lookup_image(req, body['imageRef'])
    hints = server_create_body.normalise_hints(body.get('scheduler_hints'))
    zone, host, node = server_create_body.zone_of(
        req, body.get('availability_zone')
    )
    count = body.get('num_instances', 1)
    spec = server_create.request_spec_for(
        req, flavor, image, zone, hints, [], force_host=host, force_node=node
    )
    spec.num_instances = spec.min_count = count
    result = scheduler_api.dry_run(util.ctx(req), spec)
    resp.media = {'dry_run': result}


def _record(row):
    return {
        'id': row.id,
        'request_id': row.request_id,
        'instance_uuid': row.instance_uuid,
        'outcome': row.outcome,
        'detail': row.detail,
        'created_at': util.isotime(row.created_at),
    }


def records(req, resp):
    util.authorize(req, policies.RECORDS)
    params = util.query(req, RECORDS_QUERY)
    if not any(k in params for k in ('instance_uuid', 'request_id')):
        raise util.bad_request("Give 'instance_uuid' or 'request_id'.")
    with util.deps(req).api_db.session() as session:
        rows = [
            _record(r)
            for r in scheduling_records.where(
                session,
                **{
                    key: params[key]
                    for key in ('instance_uuid', 'request_id', 'outcome')
                    if key in params
                },
            )
        ]
    rows, _more = util.page(
        rows, lambda r: r['id'], params, util.limit_of(req, params)
    )
    resp.media = {'records': rows}
