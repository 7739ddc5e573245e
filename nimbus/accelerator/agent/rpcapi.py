"""RPC client of nimbus-accelerator-agent (topic ``accelerator-agent``,
``server=<host>``), on the accelerator service's bus.

The caller is the accelerator service's binder: it programs the device of
an ARQ being bound, and releases it after an unbind or a delete.

An ``arq`` argument is the primitive of the contract
:class:`nimbus.accelerator.contracts.AgentArq` 1.0::

    {"nimbus_object.version": "1.0", "uuid", "instance_uuid",
     "device_rp_uuid",
     "attach_handle": {"uuid", "attach_type", "attach_info", "in_use"}}

Version history
  1.0  program (call; answers {"programmed": true} or raises
       ProgrammingFailed), release (cast). The ``arq`` became the AgentArq
       1.0 contract with the same fields (an arq without a contract
       version is read as 1.0: no RPC version change).
"""

from nimbus.accelerator import contracts
from nimbus.common import rpc


def _arq(arq):
    """A contract goes as its primitive; a dict is taken as one (the
    agent checks it and refuses a malformed arq)."""
    if isinstance(arq, contracts.AgentArq):
        return arq.to_primitive()
    return arq


TOPIC = 'accelerator-agent'
VERSION = '1.0'


class AgentAPI(rpc.HostClients):
    topic = TOPIC
    version = VERSION

    def program(self, ctxt, host, arq, timeout=None):
        """Call: program the attach handle of ``arq`` on ``host``.

        Returns ``{"programmed": True}``. Raises
        :class:`nimbus.accelerator.agent.exception.ProgrammingFailed`
        (device, host and reason in its message) when the device cannot be
        programmed or is not on that host; ``timeout`` (seconds) overrides
        ``[rpc] rpc_response_timeout`` for slow devices.
        """
        cctxt = self._client(host).prepare(version='1.0', timeout=timeout)
        return cctxt.call(ctxt, 'program', arq=_arq(arq))

    def release(self, ctxt, host, arq):
        """Cast: give back the attach handle ``arq`` held on ``host``."""
        self._client(host).prepare(version='1.0').cast(
            ctxt, 'release', arq=_arq(arq)
        )
