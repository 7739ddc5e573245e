"""/v2/device_profiles: create, list, show (by uuid; by name from 2.2),
delete (by uuid, or ``?value=name1,name2``)."""

import contextlib

from oslo_utils import uuidutils

from nimbus.accelerator.api import policies
from nimbus.accelerator.api.handlers import util
from nimbus.accelerator.api.schemas import device_profile as schema
from nimbus.accelerator.objects import device_profile as dp_obj
from nimbus.common.wsgi import errors

NOUN = 'device_profiles'


def render(req, profile):
    return util.body_of(
        req, NOUN, profile, ('uuid', 'name', 'description', 'groups')
    )


@contextlib.contextmanager
def _deleting(name=None):
    """A missing profile (``name``, or the one the error names) is a 404,
    one that ARQs name a 409."""
    with util.lookup(dp_obj.NotFound, 'Device profile', name):
        try:
            yield
        except dp_obj.InUse as exc:
            raise util.conflict(str(exc)) from exc


def create(state, req, resp):
    util.authorize(state, req, policies.DP % 'create')
    body = util.json_body(req, schema.CREATE)
    profile = body[0]
    for index, group in enumerate(profile['groups']):
        problem = schema.group_problem(index, group)
        if problem:
            raise util.bad_request(
                'Invalid device profile groups: %s' % problem
            )
    try:
        created = dp_obj.create(
            state.adb,
            profile['name'],
            profile['groups'],
            description=profile.get('description'),
            uuid=profile.get('uuid'),
        )
    except dp_obj.DuplicateName as exc:
        raise util.conflict(
            "A device profile named '%s' (or with uuid %s) "
            'already exists' % (profile['name'], profile.get('uuid'))
        ) from exc
    util.send(resp, render(req, created), 201)


def list_profiles(state, req, resp):
    util.authorize(state, req, policies.DP % 'get_all')
    params = util.query(req, {'name'})
    profiles = dp_obj.list_profiles(state.adb, name=params.get('name'))
    util.send(resp, {NOUN: [render(req, p) for p in profiles]})


def show(state, req, resp, uuid):
    util.authorize(state, req, policies.DP % 'get_one')
    with util.lookup(dp_obj.NotFound, 'Device profile', uuid):
        if uuidutils.is_uuid_like(uuid):
            profile = dp_obj.get_by_uuid(state.adb, uuid)
        elif util.version(req) >= (2, 2):
            profile = dp_obj.get_by_name(state.adb, uuid)
        else:
            # Cyborg's answer: not acceptable at this microversion
            raise errors.HTTPError(
                406,
                "'%s' is not a device profile uuid; showing a profile by "
                'name needs microversion 2.2 or later' % uuid,
            )
    # Cyborg answers one profile wrapped in "device_profile".
    util.send(resp, {'device_profile': render(req, profile)})


def delete(state, req, resp, uuid):
    util.authorize(state, req, policies.DP % 'delete')
    with _deleting(uuid):
        if uuidutils.is_uuid_like(uuid):
            dp_obj.delete(state.adb, uuid)
        else:
            dp_obj.delete_by_names(state.adb, [uuid])
    util.send(resp, None, 204)


def delete_by_names(state, req, resp):
    """``DELETE /v2/device_profiles?value=name1,name2``: all or none."""
    util.authorize(state, req, policies.DP % 'delete')
    params = util.query(req, {'value'})
    value = params.get('value')
    if not value:
        raise util.bad_request(
            'Deleting device profiles needs the query '
            "parameter 'value' (comma-separated names)"
        )
    names = [n.strip() for n in value.split(',')]
    if any(not n for n in names):
        raise util.bad_request(
            "Query parameter 'value' has an empty name: %r" % value
        )
    with _deleting():
        dp_obj.delete_by_names(state.adb, names)
    util.send(resp, None, 204)
