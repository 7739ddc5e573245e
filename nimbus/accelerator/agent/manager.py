"""The RPC endpoint of one accelerator agent host (see rpcapi.py); an
``arq`` is read as the :class:`~nimbus.accelerator.contracts.AgentArq`
contract (a malformed one is refused as InvalidMessage)."""

from nimbus.accelerator import contracts
from nimbus.accelerator.agent import exception
from nimbus.common import rpc


def _read_arq(method, arq):
    with rpc.arriving(method):
        return contracts.AgentArq.from_primitive(arq).as_record()


class AgentManager:
    """Thin: checks the message, hands it to the host's
    :class:`~nimbus.accelerator.agent.service.AcceleratorAgent`.
    ``program`` runs in the RPC server's executor (the caller waits for
    its answer anyway)."""

    def __init__(self, agent):
        self.agent = agent

    @rpc.expose(
        required=('arq',),
        types={'arq': dict},
        expected=(exception.ProgrammingFailed,),
    )
    def program(self, ctxt, arq):
        self.agent.program(ctxt, _read_arq('program', arq))
        return {'programmed': True}

    @rpc.expose(cast=True, required=('arq',), types={'arq': dict})
    def release(self, ctxt, arq):
        self.agent.release(ctxt, _read_arq('release', arq))
