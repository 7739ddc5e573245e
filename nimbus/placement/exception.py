"""Placement's errors: each carries its HTTP status and Placement error code.

The REST layer (``nimbus.common.wsgi``) turns any of these into the
``{"errors": [...]}`` body with ``code`` set, so callers branch on the code,
never on the message.
"""

from nimbus.common import exception

UNDEFINED = 'placement.undefined_code'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
INVENTORY_INUSE = 'placement.inventory.inuse'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = (
    'placement.resource_provider.cannot_delete_parent'
)
PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
QUERY_DUPLICATE_KEY = 'placement.query.duplicate_key'
QUERY_BAD_VALUE = 'placement.query.bad_value'
QUERY_MISSING_VALUE = 'placement.query.missing_value'


class PlacementException(exception.NimbusException):
    """Base: ``code`` is the HTTP status, ``error_code`` Placement's code."""

    error_code = UNDEFINED

    def __init__(self, message=None, error_code=None, **kwargs):
        super().__init__(message, **kwargs)
        if error_code is not None:
            self.error_code = error_code


# The classes below are alike by design (a status, a message, Placement's
# error code): Placement's API answers each by its type, apart from the
# rest of Nimbus's (nimbus.common.exception).
class NotFound(PlacementException):
    code = 404
    # True where Placement 16 answers the 404 from inside the handler
    # (with ``vary``), False where its NotFound escapes the handler
    in_handler = False


class NoAllocations(NotFound):
    """DELETE /allocations/{consumer} of a consumer without allocations."""

    in_handler = True
    msg_fmt = 'Not found.'


class ProviderNotFound(NotFound):
    msg_fmt = 'No resource provider with uuid %(uuid)s found.'


class BadRequest(PlacementException):
    code = 400
    msg_fmt = 'Bad request.'


class Conflict(PlacementException):
    code = 409
    msg_fmt = 'Conflict.'


class ConcurrentUpdate(Conflict):
    error_code = CONCURRENT_UPDATE
    msg_fmt = (
        '%(what)s was changed by another request: generation '
        'conflict. Re-read and retry.'
    )


class ProviderGenerationRace(ConcurrentUpdate):
    """A provider changed between the read and the write of allocations:
    the write is retried server-side before this reaches a client."""

    msg_fmt = (
        'A resource provider was changed by a concurrent request '
        'while allocations were written. Retry.'
    )


class InventoryInUse(Conflict):
    error_code = INVENTORY_INUSE
    msg_fmt = 'Inventory for %(rcs)s on resource provider %(uuid)s in use.'


class CapacityExceeded(Conflict):
    msg_fmt = 'Unable to allocate inventory: %(detail)s'


class DuplicateName(Conflict):
    error_code = DUPLICATE_NAME
