"""/allocations/{consumer}, POST /allocations and provider allocations."""

import uuid as uuidlib

from oslo_utils import uuidutils

from nimbus.placement import exception
from nimbus.placement.handlers import util
from nimbus.placement.objects import allocation as alloc_obj
from nimbus.placement.objects import claim
from nimbus.placement.objects import write_retry
from nimbus.placement.schemas import allocation as schema


def to_request(uuid, data, version):
    """An :class:`alloc_obj.Request` from one consumer's body."""
    allocs = data['allocations']
    if isinstance(allocs, list):
        merged = {}
        for item in allocs:
            rp = util.normalize_uuid(item['resource_provider']['uuid'])
            merged.setdefault(rp, {}).update(item['resources'])
        allocs = merged
    else:
        allocs = {
            util.normalize_uuid(rp): dict(v['resources'])
            for rp, v in allocs.items()
        }
    generation = alloc_obj.NO_GENERATION
    if version >= (1, 28):
        generation = data.get('consumer_generation')
    return alloc_obj.Request(
        util.normalize_uuid(uuid),
        allocs,
        data.get('project_id'),
        data.get('user_id'),
        generation,
        data.get('consumer_type'),
    )


def _write(state, fn, *args, late_lock=False):
    """An allocation write, retried on provider generation races."""
    return write_retry.write_retrying(
        state.pdb,
        state.allocation_conflict_retry_count,
        fn,
        *args,
        structure=False,
        usage=True,
        late_lock=late_lock,
    )


def _replace(state, requests):
    """Write ``requests`` and hand the snapshot cache what they changed
    (the next GET /allocation_candidates then needs no usage reload when
    nothing else was written meanwhile). A new consumer's claim is
    checked against the snapshot instead of the database when the
    snapshot is current (objects/claim.py)."""
    try:
        counters, changes = _write(
            state,
            claim.claim_noting,
            requests,
            state.cache.claim_view(),
            late_lock=True,
        )
    except claim.Declined:
        counters, changes = _write(state, alloc_obj.replace_noting, requests)
    state.cache.note_usage(counters, changes)


@util.json_only
def show(state, req, resp, consumer_uuid):
    util.authorize(state, req, 'placement:allocations:list')
    version = util.version(req)
    allocs, consumer = state.pdb.read(
        alloc_obj.for_consumer, util.normalize_uuid(consumer_uuid)
    )
    body = {'allocations': allocs}
    if version >= (1, 12) and consumer is not None:
        body['project_id'] = consumer['project_id']
        body['user_id'] = consumer['user_id']
        if version >= (1, 28):
            body['consumer_generation'] = consumer['generation']
        if version >= (1, 38):
            body['consumer_type'] = consumer['consumer_type'] or 'unknown'
    util.send(req, resp, body)


def _consumer_uuid(value):
    """PUT's consumer uuid in its canonical form; 400 when malformed.

    As OpenStack Placement, only PUT checks it: GET answers an empty set
    and DELETE a 404 for a consumer that cannot exist, and the keys of POST
    /allocations and of the reshaper are checked by their schemas.
    """
    if not uuidutils.is_uuid_like(value):
        raise exception.BadRequest('Malformed consumer_uuid: %s' % value)
    return str(uuidlib.UUID(value))


def update(state, req, resp, consumer_uuid):
    util.authorize(state, req, 'placement:allocations:update')
    consumer_uuid = _consumer_uuid(consumer_uuid)
    version = util.version(req)
    data = util.body(req, schema.put_schema(version))
    request = to_request(consumer_uuid, data, version)
    _replace(state, [request])
    util.no_content(resp)


@util.since((1, 13))
def post(state, req, resp):
    util.authorize(state, req, 'placement:allocations:manage')
    version = util.version(req)
    data = util.body(req, schema.post_schema(version))
    requests = [
        to_request(uuid, one, version) for uuid, one in sorted(data.items())
    ]
    _replace(state, requests)
    util.no_content(resp)


def delete(state, req, resp, consumer_uuid):
    util.authorize(state, req, 'placement:allocations:delete')
    counters, changes = _write(
        state,
        alloc_obj.delete_consumer_noting,
        util.normalize_uuid(consumer_uuid),
    )
    state.cache.note_usage(counters, changes)
    util.no_content(resp)


@util.json_only
def for_provider(state, req, resp, uuid):
    util.authorize(state, req, 'placement:resource_providers:allocations:list')
    util.send_of_provider(
        state,
        req,
        resp,
        uuid,
        'allocations',
        alloc_obj.for_provider,
        with_generation=util.version(req) >= (1, 28),
    )
