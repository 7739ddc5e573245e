"""The route table of the accelerator API: path -> {method: handler}.

Every route is served both at the root and under ``/accelerator`` (the
prefix Cyborg's own links and devstack use). Handlers are
``handler(state, req, resp, **path_params)``; :func:`routes` binds them to
a :class:`State`.
"""

import functools

from oslo_log import log as logging

from nimbus.accelerator.api.handlers import arq
from nimbus.accelerator.api.handlers import attribute
from nimbus.accelerator.api.handlers import deployable
from nimbus.accelerator.api.handlers import device
from nimbus.accelerator.api.handlers import device_profile
from nimbus.accelerator.api.handlers import root
from nimbus.accelerator.api.handlers import util

LOG = logging.getLogger(__name__)

ROUTES = [
    ('/', {'GET': root.home}),
    ('/v2', {'GET': root.v2}),
    ('/v2/', {'GET': root.v2}),
    (
        '/v2/device_profiles',
        {
            'GET': device_profile.list_profiles,
            'POST': device_profile.create,
            'DELETE': device_profile.delete_by_names,
        },
    ),
    (
        '/v2/device_profiles/{uuid}',
        {'GET': device_profile.show, 'DELETE': device_profile.delete},
    ),
    (
        '/v2/accelerator_requests',
        {
            'GET': arq.list_arqs,
            'POST': arq.create,
            'PATCH': arq.update,
            'DELETE': arq.delete,
        },
    ),
    (
        '/v2/accelerator_requests/{uuid}',
        {'GET': arq.show, 'PATCH': arq.update_one, 'DELETE': arq.delete_one},
    ),
    ('/v2/devices', {'GET': device.list_devices}),
    ('/v2/devices/{uuid}', {'GET': device.show}),
    ('/v2/deployables', {'GET': deployable.list_deployables}),
    ('/v2/deployables/{uuid}', {'GET': deployable.show}),
    (
        '/v2/attributes',
        {'GET': attribute.list_attributes, 'POST': attribute.create},
    ),
    (
        '/v2/attributes/{uuid}',
        {'GET': attribute.show, 'DELETE': attribute.delete},
    ),
]

PUBLIC_PATHS = (
    '/',
    '/v2',
    util.PREFIX,
    util.PREFIX + '/',
    util.PREFIX + '/v2',
    '/v2/',
    util.PREFIX + '/v2/',
)


class State:
    """What every handler needs: the database, policy, and the service's
    binder and agent when this app runs inside the accelerator service.

    ``wake_binder()`` tells the binder a bind was recorded (without one, a
    binder in another process finds it at its next poll).
    ``release(ctxt, releases)`` asks the agents to release what an unbind
    or delete freed (best effort: the handle is already free here).
    """

    def __init__(self, conf, adb, enforcer, binder=None, agent=None):
        self.conf = conf
        self.adb = adb
        self.enforcer = enforcer
        self.binder = binder
        self.agent = agent

    def wake_binder(self):
        if self.binder is not None:
            self.binder.wake()

    def release(self, ctxt, releases):
        if self.agent is None:
            return
        for item in releases:
            try:
                self.agent.release(ctxt, item['host'], item['arq'])
            except Exception:
                LOG.exception(
                    'Asking %s to release accelerator request %s failed',
                    item['host'],
                    item['arq']['uuid'],
                )


def routes(state):
    """The route table with every handler bound to ``state``, at the root
    and under ``/accelerator``."""
    table = []
    for path, methods in ROUTES:
        bound = {
            method: functools.partial(fn, state)
            for method, fn in methods.items()
        }
        table.append((path, bound))
        table.append((util.PREFIX + ('' if path == '/' else path), bound))
    return table
