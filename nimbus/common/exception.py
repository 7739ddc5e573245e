"""Exceptions shared by more than one service.

Each service package keeps its own ``exception.py`` for the rest; nothing is
sorted by matching message strings.
"""


class NimbusException(Exception):
    """Base class. ``code`` is the HTTP status the REST layer answers with."""

    code = 500
    msg_fmt = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)


# One class per HTTP status, alike by design: each is only a status and a
# message that callers catch by type (Placement's own, with its error
# codes, are nimbus.placement.exception's).
class NotFound(NimbusException):
    code = 404
    msg_fmt = 'Resource could not be found.'


class Invalid(NimbusException):
    code = 400
    msg_fmt = 'Invalid input.'


class Conflict(NimbusException):
    code = 409
    msg_fmt = 'Conflict.'


class Forbidden(NimbusException):
    code = 403
    msg_fmt = 'Policy does not allow this action.'


class NoValidHost(NimbusException):
    msg_fmt = 'No valid host was found. %(reason)s'


class PlacementError(NimbusException):
    msg_fmt = 'Placement request failed: %(reason)s'


class PlacementConflict(PlacementError):
    """A 409 from placement; ``error_code`` is placement's code."""

    def __init__(self, message=None, error_code=None, **kwargs):
        super().__init__(message, **kwargs)
        self.error_code = error_code


class AcceleratorRequestBindTimeout(NimbusException):
    msg_fmt = 'Timed out waiting for accelerator requests %(arqs)s to bind.'
