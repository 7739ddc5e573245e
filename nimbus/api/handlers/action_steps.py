"""The steps every server action shares: find the server under the
action's policy, refuse a locked server or one with no host, take the
task and cast to the compute (:func:`begin_and_cast`); for the moves,
which cast to the conductor, the begin's 409/404 (:func:`beginning`) and
the unsent cast's undo and 503 (:func:`sending`)."""

import contextlib

from oslo_log import log as logging
import oslo_messaging as messaging

from nimbus.api import util
from nimbus.api.handlers import servers
from nimbus.api.objects import server_actions as action_obj
from nimbus.common.wsgi import errors

LOG = logging.getLogger(__name__)


def server_for(req, server_id, rule):
    """The server's record once ``rule`` allows it on the server's
    project (404 for another project's server, 403 for your project's
    when your roles may not)."""
    return servers.get_authorized(req, server_id, rule)


def check_lock(req, record):
    """Nova's check: a locked server refuses its actions to anyone but an
    admin."""
    if record.get('locked_by') and not util.ctx(req).is_admin:
        raise util.conflict('Instance %s is locked' % record['uuid'])


def check_placed(record, api_name):
    """The server has a cell and a host to act on (else 409, as Nova's
    instance-not-ready)."""
    if record['cell'] is None or not record.get('host'):
        raise util.conflict(
            "Cannot '%s' instance %s while it is in vm_state %s"
            % (api_name, record['uuid'], record.get('vm_state') or 'building')
            if record['cell'] is None
            else 'Instance %s is not ready (it has no host).' % record['uuid']
        )


def begin_and_cast(
    req,
    record,
    action_name,
    recorded_as,
    api_name,
    cast,
    then=None,
    before_cast=None,
):
    """Take the task and start the instance action (with ``then``'s
    changes, see :func:`nimbus.api.objects.server_actions.begin`), then
    ``cast(compute, ctx, host, uuid, request_id)``; a cast that cannot be
    sent gives the task back (503). ``before_cast()`` runs between the
    two (a rebuild reads the server it answers with: once cast, the
    compute may finish before the answer is built). Returns what
    ``before_cast`` returned."""
    deps = util.deps(req)
    ctx = util.ctx(req)
    check_placed(record, api_name)
    with beginning(record):
        action_obj.begin(
            deps.cells, record, action_name, ctx, recorded_as, api_name, then
        )
    shown = before_cast() if before_cast is not None else None
    with sending(
        req,
        record,
        action_name,
        api_name,
        'The compute host %s could not be told to %s the server; try '
        'again.' % (record['host'], api_name),
    ):
        cast(
            deps.compute_api(record['cell']),
            ctx,
            record['host'],
            record['uuid'],
            ctx.request_id,
        )
    return shown


@contextlib.contextmanager
def beginning(record, also=()):
    """Around the begin of an action on ``record``: a state that does not
    allow it (InvalidState, or one of ``also``) is a 409, a server gone
    meanwhile a 404."""
    try:
        yield
    except (action_obj.InvalidState, *also) as exc:
        raise util.conflict(str(exc)) from exc
    except action_obj.Gone as exc:
        raise util.not_found('Instance', record['uuid']) from exc


@contextlib.contextmanager
def sending(req, record, action_name, api_name, unsent):
    """Around the cast of a begun action: a cast that cannot be sent gives
    the task back and answers 503 ``unsent``."""
    try:
        yield
    except Exception as exc:
        LOG.exception('Could not send %s of %s', api_name, record['uuid'])
        action_obj.undo(
            util.deps(req).cells, record, action_name, util.ctx(req)
        )
        raise errors.HTTPError(503, unsent) from exc


def image_accepted(req, resp, image_id):
    """The 202 of createImage and createBackup: the new image's id in the
    body from 2.45, in a Location header before."""
    resp.status = 202
    if util.version(req) >= (2, 45):
        resp.media = {'image_id': image_id}
    else:
        resp.set_header(
            'Location', '%s/images/%s' % (util.base_url(req), image_id)
        )


def ask_compute(record, what, ask):
    """``ask()``'s answer: a call to the server's compute that reads from
    its guest. A driver that cannot answer is a 501 (``what`` it cannot
    show), a host that does not answer in time a 503, a guest not ready
    a 409."""
    try:
        return ask()
    except NotImplementedError as exc:
        raise errors.HTTPError(
            501, 'The virt driver cannot show %s.' % what
        ) from exc
    except messaging.MessagingTimeout as exc:
        raise errors.HTTPError(
            503, 'Compute host %s did not answer in time.' % record['host']
        ) from exc
    except messaging.MessagingException as exc:
        raise util.conflict(
            'Instance %s is not ready: %s'
            % (record['uuid'], getattr(exc, 'value', None) or exc)
        ) from exc
