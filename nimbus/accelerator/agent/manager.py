"""The RPC endpoint of one accelerator agent host (see rpcapi.py)."""

from nimbus.accelerator.agent import exception
from nimbus.common import rpc


def _check_arq(method, arq):
    handle = arq.get('attach_handle')
    missing = [
        key
        for key in ('uuid', 'device_rp_uuid')
        if not isinstance(arq.get(key), str)
    ]
    if not isinstance(handle, dict) or not isinstance(handle.get('uuid'), str):
        missing.append('attach_handle.uuid')
    if missing:
        raise rpc.InvalidMessage(
            '%s: arq lacks %s' % (method, ', '.join(missing))
        )


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
        _check_arq('program', arq)
        self.agent.program(ctxt, arq)
        return {'programmed': True}

    @rpc.expose(cast=True, required=('arq',), types={'arq': dict})
    def release(self, ctxt, arq):
        _check_arq('release', arq)
        self.agent.release(ctxt, arq)
