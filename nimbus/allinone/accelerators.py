"""The accelerator side of the all-in-one cloud.

The accelerator service (its API, the agents' reports and the binder) runs
on the API bus with its own SQLite database in the state directory, and one
accelerator agent per simulated host reports that host's fake devices (one
FPGA and one GPU each, by default) as child providers of the host in
placement. The rest of the cloud reaches the service at
``[accelerator_client] endpoint``; the service reaches nimbus-api for the
``accelerator-request-bound`` events once the API is up.
"""

import os

from nimbus.accelerator import compute_events
from nimbus.common import wsgi
from nimbus import services


class Accelerators:
    """``Accelerators(cloud)``: started in three steps by the cloud, since
    each needs what the one before made: :meth:`serve` (before the rest of
    the cloud, which needs the URL), :meth:`start_agents` (once the
    computes have made their providers), :meth:`connect_api` (once
    nimbus-api listens)."""

    def __init__(self, cloud, port=0):
        self.cloud = cloud
        self.port = port
        self.url = None
        self.conf = None
        self.service = None
        self.agents = None
        self.database_url = 'sqlite:///%s' % os.path.join(
            cloud.state_dir, 'accelerator.db'
        )

    def overrides(self):
        """Config every service of the cloud gets: where the API is."""
        if self.url is None:
            return {}
        return {'accelerator_client': {'endpoint': self.url + '/v2'}}

    def serve(self):
        self.conf = self.cloud._conf(
            {'accelerator_database': {'connection': self.database_url}}
        )
        self.service = services.accelerator_service(self.conf).start()
        server = wsgi.serve(
            self.service.app,
            '127.0.0.1',
            self.port,
            name='nimbus-accelerator-api',
            backlog=self.conf.wsgi.listen_backlog,
        )
        self.url = server.url
        return [server, self.service]

    def start_agents(self, hosts):
        # Like the simulated computes, the agents call the placement app
        # of the process directly.
        self.agents = services.accelerator_agents(
            self.conf, hosts, placement_app=self.cloud.placement_app
        )
        self.agents.start()
        return self.agents

    def connect_api(self, api_url):
        self.conf.set_override(
            'endpoint', api_url + '/v2.1', group='compute_client'
        )
        self.service.binder.events = compute_events.from_conf(self.conf)
        self.service.binder.wake()
