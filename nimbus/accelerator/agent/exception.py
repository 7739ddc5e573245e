"""Exceptions the accelerator agent answers over RPC.

This module is in :data:`nimbus.common.rpc.ALLOWED_EXMODS`, so a caller
(the accelerator service's binder) receives them as these classes.
"""

from nimbus.common import exception


class ProgrammingFailed(exception.NimbusException):
    """Programming an attach handle for an ARQ failed: the device, the
    host and the driver's reason are in the message."""

    msg_fmt = (
        'Programming device %(device)s on %(host)s for ARQ %(arq)s '
        'failed: %(reason)s'
    )
