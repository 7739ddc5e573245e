"""Scheduler errors."""


class SchedulerError(Exception):
    pass


class NoValidHost(SchedulerError):
    """No host fits. ``explanation`` is a JSON-able dict (see ``explain.py``)."""

    def __init__(self, reason: str, explanation: dict | None = None):
        super().__init__(reason)
        self.reason = reason
        self.explanation = explanation or {}


class InvalidRequest(SchedulerError):
    pass


class FilterNotFound(SchedulerError):
    pass


class WeigherNotFound(SchedulerError):
    pass
