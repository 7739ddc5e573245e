"""The operator's dashboard served by nimbus-api under ``/dashboard/``.

- :mod:`~nimbus.api.dashboard.snapshot`: hosts (usage and capacity per
  resource class, grouped by cell and aggregate), servers per host and failed
  builds, read in a few queries per cell and cached for a short interval.
- :mod:`~nimbus.api.dashboard.stream`: one decision-stream listener per API
  process fanning out to every open page through bounded queues.
- ``static/``: the page itself (plain HTML, JavaScript and CSS, shipped as
  package data; no build step).

The handlers are in :mod:`nimbus.api.handlers.dashboard`; docs/dashboard.md
describes the page, its authentication and its cost.
"""

from nimbus.api.dashboard import snapshot
from nimbus.api.dashboard import stream


class Dashboard:
    """The dashboard's per-process state: the snapshot cache and the
    decision hub (``[dashboard]`` options)."""

    def __init__(self, conf, transport=None, hub=None):
        opts = conf.dashboard
        self.conf = opts
        self.cache = snapshot.SnapshotCache(ttl=opts.cache_ttl)
        if hub is None and transport is not None:
            hub = stream.DecisionHub(
                transport,
                queue_size=opts.queue_size,
                max_streams=opts.max_streams,
            )
        self.hub = hub

    def stop(self):
        if self.hub is not None:
            self.hub.stop()
