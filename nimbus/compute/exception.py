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
