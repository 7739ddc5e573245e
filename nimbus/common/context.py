"""The request context: who asks, for which project, with what roles.

It travels with every RPC message (:class:`nimbus.common.rpc.Serializer`
turns it into a dict and back) and sets oslo.context's thread-local current
context, which oslo.log reads to put the request id in every log line.
"""

from oslo_context import context as oslo_context
from oslo_utils import uuidutils


class RequestContext(oslo_context.RequestContext):
    """A context with Nimbus's own defaults.

    ``service_catalog`` and other Nova fields are deliberately absent: a
    Nimbus service talks to placement and the accelerator API through
    configured endpoints, not a catalog.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault('overwrite', True)
        super().__init__(*args, **kwargs)
        if not self.request_id:
            self.request_id = 'req-' + uuidutils.generate_uuid()

    def to_dict(self):
        values = super().to_dict()
        values['is_admin'] = self.is_admin
        return values

    def wire_dict(self):
        """What an RPC message carries of this context: what
        :meth:`from_dict` reads, flags only when set. oslo.context's
        ``to_dict`` adds names, domains, scopes and the auth token, which
        no receiver reads (and a token has no business on the bus)."""
        values = {
            'user_id': self.user_id,
            'project_id': self.project_id,
            'request_id': self.request_id,
        }
        if self.roles:
            values['roles'] = list(self.roles)
        if self.global_request_id:
            values['global_request_id'] = self.global_request_id
        for flag in ('is_admin', 'read_only', 'show_deleted'):
            if getattr(self, flag):
                values[flag] = True
        return values

    @classmethod
    def from_dict(cls, values, **kwargs):
        values = dict(values)
        kwargs.setdefault('overwrite', True)
        return cls(
            user_id=values.get('user_id') or values.get('user'),
            project_id=(
                values.get('project_id')
                or values.get('project')
                or values.get('tenant')
            ),
            roles=values.get('roles') or [],
            is_admin=values.get('is_admin', False),
            request_id=values.get('request_id'),
            global_request_id=values.get('global_request_id'),
            read_only=values.get('read_only', False),
            show_deleted=values.get('show_deleted', False),
            **kwargs,
        )

    def elevated(self):
        """A copy of this context with admin rights (same request id)."""
        values = self.to_dict()
        values['is_admin'] = True
        roles = set(values.get('roles') or [])
        roles.add('admin')
        values['roles'] = sorted(roles)
        return RequestContext.from_dict(values, overwrite=False)


def get_admin_context(request_id=None):
    """A context for the service's own work (periodic tasks, startup)."""
    return RequestContext(
        user_id=None,
        project_id=None,
        is_admin=True,
        roles=['admin', 'service'],
        request_id=request_id,
        overwrite=False,
    )
