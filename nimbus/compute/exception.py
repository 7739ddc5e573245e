"""Exceptions of the compute agent."""

from nimbus.common import exception


class BuildFailed(exception.NimbusException):
    msg_fmt = 'Build of instance %(instance)s failed on %(host)s: %(reason)s'


class ReshapeNeeded(exception.NimbusException):
    """The driver wants to move inventory and allocations (startup only)."""

    msg_fmt = 'The provider tree must be reshaped.'


class ReshapeFailed(exception.NimbusException):
    """POST /reshaper failed; the compute service must not start."""

    msg_fmt = 'Reshaping the provider tree failed: %(reason)s'


class GuestNotFound(exception.NimbusException):
    """The hypervisor runs no guest of the instance."""

    msg_fmt = 'No guest of instance %(instance)s on %(host)s'


class GuestStateError(exception.NimbusException):
    """The guest is not in a state the driver can act from."""

    msg_fmt = 'Guest of %(instance)s is %(state)s; cannot %(action)s it'
