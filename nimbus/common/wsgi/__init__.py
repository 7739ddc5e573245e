"""The REST application base shared by nimbus-api and nimbus-placement-api.

An API is a route table: ``[(path, {METHOD: handler})]``. A handler is a
plain function ``handler(req, resp, **path_params)``; it reads
``req.context['ctx']`` (the :class:`~nimbus.common.context.RequestContext`)
and ``req.context['version']`` (the negotiated microversion), and sets
``resp.media`` or raises. :func:`build_app` turns the table into a Falcon
app with: request ids, authentication (noauth2 or keystone), microversion
negotiation, JSON errors in the API's own style, and no 500 tracebacks.
"""

from nimbus.common.wsgi.app import build_app  # noqa: F401
from nimbus.common.wsgi.app import json_body  # noqa: F401
from nimbus.common.wsgi.app import parse_json  # noqa: F401
from nimbus.common.wsgi.app import read_body  # noqa: F401
from nimbus.common.wsgi.app import validate  # noqa: F401
from nimbus.common.wsgi.errors import HTTPError  # noqa: F401
from nimbus.common.wsgi.microversion import Version  # noqa: F401
from nimbus.common.wsgi.server import serve  # noqa: F401
