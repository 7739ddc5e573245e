"""Scheduler errors. NoValidHost subclasses the shared one so callers (the conductor)
catch it whether it was raised locally or re-raised from an RPC reply."""

from nimbus.common import exception as common_exc


class SchedulerError(common_exc.NimbusException):
    msg_fmt = 'Scheduler error: %(reason)s'


class NoValidHost(common_exc.NoValidHost):
    """No host fits. ``explanation`` is a JSON-able dict (see ``explain.py``); it travels
    in the RPC error reply as a keyword argument."""

    def __init__(
        self, reason: str = '', explanation: dict | None = None, **kwargs
    ):
        super().__init__(reason)
        self.reason = reason
        self.explanation = explanation or {}
        self.kwargs = {'explanation': self.explanation}


class InstanceClaimFailed(SchedulerError):
    """A claim that cannot succeed for this instance on any host (placement's consumer
    generation conflict: the consumer already holds other allocations). Raised by a
    ``claim`` callable; the selection loop fails that one instance with ``reason`` and
    goes on with the others."""

    def __init__(self, reason: str = '', **kwargs):
        super().__init__(reason)
        self.reason = reason
        self.kwargs = {}


class InvalidRequest(common_exc.Invalid):
    msg_fmt = 'Invalid scheduling request: %(reason)s'

    def __init__(self, reason: str = '', **kwargs):
        super().__init__(reason)
        self.kwargs = {}


class FilterNotFound(SchedulerError):
    def __init__(self, reason: str = '', **kwargs):
        super().__init__(reason)
        self.kwargs = {}


class WeigherNotFound(SchedulerError):
    def __init__(self, reason: str = '', **kwargs):
        super().__init__(reason)
        self.kwargs = {}
