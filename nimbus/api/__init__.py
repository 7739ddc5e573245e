"""nimbus-api: the compute REST API, shaped like Nova's v2.1 API.

Layout (as OpenStack Placement): :mod:`nimbus.api.handler` is the route
table; ``handlers/<noun>.py`` are thin handlers (policy, microversion,
schema, one domain call, view); ``schemas/<noun>.py`` the JSON schemas;
``objects/<noun>.py`` the persistence; :mod:`nimbus.api.policies` the
oslo.policy defaults (Nova's rule names). :func:`nimbus.api.app.make_app`
builds the WSGI app with its dependencies injected;
``nimbus.wsgi.api:application`` serves it under gunicorn or uWSGI.

Microversions 2.1 to 2.96. Response fields that change with the version
and are honoured: server ``flavor`` (2.47), ``OS-EXT-SRV-ATTR:*`` extras
(2.3), ``locked`` (2.9), ``host_status`` (2.16), ``description`` (2.19),
``tags`` (2.26), ``locked_reason`` (2.73), ``pinned_availability_zone``
(2.96); flavor ``description`` (2.55), ``extra_specs`` (2.61), ``swap`` as
0 (2.75); service/hypervisor uuid ids (2.53), ``forced_down`` (2.11),
hypervisor fields trimmed (2.88); aggregate ``uuid`` (2.41); server group
``policy``/``rules`` (2.64) and ``project_id``/``user_id`` (2.13); external
event names by version (``accelerator-request-bound`` from 2.82).

Deliberate differences from Nova: ``networks`` is optional at every
version (there is no networking service); fault ``details`` are shown to
every user who can see the server (they list build attempts, never
tracebacks); ``os:scheduler_hints.query`` may also be a JSON array and
``cidr_mask`` is accepted as an alias of ``cidr``.
"""
