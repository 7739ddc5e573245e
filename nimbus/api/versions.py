"""The compute API's microversion range, read by the app (negotiation)
and by version discovery (``GET /``, ``GET /v2.1``)."""

MIN_VERSION = '2.1'
MAX_VERSION = '2.96'
