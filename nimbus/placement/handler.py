"""The route table of the placement API: path -> {method: handler}.

Handlers are ``handler(state, req, resp, **path_params)``; :func:`routes`
binds them to a :class:`State` for :func:`nimbus.common.wsgi.build_app`.
A route missing a method answers 405 with an ``allow`` header listing the
route's methods in this table's order (the order of OpenStack Placement's
route declarations).
"""

import functools
import types

from nimbus.common.wsgi import errors
from nimbus.placement import exception

from nimbus.placement.handlers import aggregate
from nimbus.placement.handlers import allocation
from nimbus.placement.handlers import allocation_candidate
from nimbus.placement.handlers import allocation_listing
from nimbus.placement.handlers import inventory
from nimbus.placement.handlers import provider_usage_listing
from nimbus.placement.handlers import reshaper
from nimbus.placement.handlers import resource_class
from nimbus.placement.handlers import resource_provider
from nimbus.placement.handlers import root
from nimbus.placement.handlers import trait
from nimbus.placement.handlers import usage
from nimbus.placement.handlers import util

_RP = '/resource_providers/{uuid}'

ROUTES = [
    ('/', {'GET': root.home}),
    (
        '/resource_providers',
        {
            'GET': resource_provider.list_providers,
            'POST': resource_provider.create,
        },
    ),
    (
        _RP,
        {
            'GET': resource_provider.show,
            'DELETE': resource_provider.delete,
            'PUT': resource_provider.update,
        },
    ),
    (
        _RP + '/inventories',
        {
            'GET': inventory.list_inventories,
            'POST': inventory.create,
            'PUT': inventory.set_all,
            'DELETE': inventory.delete_all,
        },
    ),
    (
        _RP + '/inventories/{rc}',
        {
            'GET': inventory.show,
            'PUT': inventory.update,
            'DELETE': inventory.delete,
        },
    ),
    (_RP + '/usages', {'GET': usage.for_provider}),
    (
        _RP + '/aggregates',
        {
            'GET': aggregate.list_for_provider,
            'PUT': aggregate.set_for_provider,
        },
    ),
    (
        _RP + '/traits',
        {
            'GET': trait.list_for_provider,
            'PUT': trait.set_for_provider,
            'DELETE': trait.delete_for_provider,
        },
    ),
    (_RP + '/allocations', {'GET': allocation.for_provider}),
    (
        '/resource_classes',
        {'GET': resource_class.list_classes, 'POST': resource_class.create},
    ),
    (
        '/resource_classes/{name}',
        {
            'GET': resource_class.show,
            'PUT': resource_class.update,
            'DELETE': resource_class.delete,
        },
    ),
    ('/traits', {'GET': trait.list_traits}),
    (
        '/traits/{name}',
        {'GET': trait.show, 'PUT': trait.update, 'DELETE': trait.delete},
    ),
    ('/allocations', {'POST': allocation.post}),
    (
        '/allocations/{consumer_uuid}',
        {
            'GET': allocation.show,
            'PUT': allocation.update,
            'DELETE': allocation.delete,
        },
    ),
    ('/allocation_candidates', {'GET': allocation_candidate.list_candidates}),
    ('/usages', {'GET': usage.for_project}),
    ('/reshaper', {'POST': reshaper.reshape}),
    # Nimbus's own (not Placement's): see docs/placement.md.
    (allocation_listing.PATH, {'GET': allocation_listing.list_all}),
    (provider_usage_listing.PATH, {'GET': provider_usage_listing.list_all}),
]


class State:
    """What every handler needs: the database, caches, policy, options."""

    def __init__(self, conf, pdb, cache, enforcer):
        self.conf = conf
        self.pdb = pdb
        self.cache = cache
        self.enforcer = enforcer
        self.policy_cache = util.PolicyCache(enforcer)
        opts = conf.placement
        self.allocation_conflict_retry_count = (
            opts.allocation_conflict_retry_count
        )
        self.candidate_options = types.SimpleNamespace(
            max_allocation_candidates=opts.max_allocation_candidates,
            randomize_allocation_candidates=(
                opts.randomize_allocation_candidates
            ),
            allocation_candidates_generation_strategy=(
                opts.allocation_candidates_generation_strategy
            ),
            rng=None,
        )


# Set in the WSGI environ for an error Placement raises outside its
# handlers' own error handling (a missing content type, an object not found,
# a policy refusal): Placement 16 sends those without ``vary`` (wsgi.py).
BARE_ERROR = 'nimbus.placement.bare_error'
# A Content-Length that is not an integer, set aside (wsgi.py) before the
# framework reads it, so that the handler refuses it as Placement does.
BAD_CONTENT_LENGTH = 'nimbus.placement.bad_content_length'
CONTENT_LENGTH_NOT_INTEGER = 'content-length header must be an integer.'


def _typed_body(fn, state):
    """``fn`` bound to ``state``, refusing a body without a content type.

    As Placement, before any handler runs: a request whose
    ``Content-Length`` is not an integer is a 400, one with a
    ``Content-Length`` above 0 and no ``Content-Type`` too (an empty body
    without one gets the handlers' 415).
    """

    def handler(req, resp, **kw):
        if BAD_CONTENT_LENGTH in req.env:
            req.env[BARE_ERROR] = True
            raise errors.HTTPError(
                400, CONTENT_LENGTH_NOT_INTEGER, exception.UNDEFINED
            )
        if req.content_length and not req.content_type:
            req.env[BARE_ERROR] = True
            raise errors.HTTPError(
                400,
                'A request with a body (Content-Length above 0) needs '
                'a Content-Type header.',
                exception.UNDEFINED,
            )
        try:
            return fn(state, req, resp, **kw)
        except exception.NotFound as exc:
            # an object not found (Placement's NotFound escaping its
            # handler); see BARE_ERROR
            if not exc.in_handler:
                req.env[BARE_ERROR] = True
            raise

    return functools.update_wrapper(handler, fn)


def routes(state):
    """The route table with every handler bound to ``state``."""
    return [
        (
            path,
            {method: _typed_body(fn, state) for method, fn in methods.items()},
        )
        for path, methods in ROUTES
    ]
