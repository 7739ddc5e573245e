"""The interface every accelerator driver implements, and the naming rules
the agent relies on (deterministic uuids, traits).

A device as the agent reports it (to placement and to the accelerator
service) is a plain dict::

    {"uuid", "type": "FPGA" | "GPU", "vendor", "model", "std_board_info",
     "vendor_board_info", "hostname", "driver_name",
     "deployables": [{"uuid", "name", "num_accelerators", "rp_uuid",
                      "driver_name",
                      "attach_handles": [{"uuid", "attach_type": "PCI",
                                          "attach_info": "<JSON string>",
                                          "in_use": False}]}]}

Every uuid is derived from the host, the driver name and the device's
index on that host (uuid5), so a restarted agent reports the same devices
under the same uuids, and the deployable's ``rp_uuid`` (its resource
provider in placement) never changes either.
"""

import abc
import functools
import json
import uuid as uuidlib

# Namespaces of the uuid5 derivations (fixed forever: changing one would
# orphan every device provider in placement).
DEVICE_NAMESPACE = uuidlib.UUID('5b0f7d0e-6c8a-4d35-9b8e-2f1c3a7d9e41')
PROVIDER_NAMESPACE = uuidlib.UUID('c3e9a1d2-47b6-4f0e-8a5d-91b2e6f4c7a8')

DEVICE_TYPES = ('FPGA', 'GPU')

# PCI vendor ids with a name in the vendor trait (others: VENDOR_ID_<id>).
VENDOR_NAMES = {
    '8086': 'INTEL',
    '10de': 'NVIDIA',
    '1002': 'AMD',
    '15b3': 'MELLANOX',
    '19e5': 'HUAWEI',
    '1bd4': 'INSPUR',
    '10ee': 'XILINX',
}


class ProgramError(Exception):
    """A driver could not program (or release) a device; the message is
    the reason, in the driver's words."""


@functools.lru_cache(maxsize=1 << 16)
def device_uuid(host, driver_name, index):
    """The uuid of device ``index`` (0-based) of ``driver_name`` on
    ``host``. (These uuid functions are memoized: every periodic
    discovery of every simulated host derives the same uuids again.)"""
    return str(
        uuidlib.uuid5(
            DEVICE_NAMESPACE, '%s/%s/%d' % (host, driver_name, index)
        )
    )


@functools.lru_cache(maxsize=1 << 16)
def provider_uuid(host, device):
    """The resource provider uuid of a device (the deployable's
    ``rp_uuid``): derived from the host and the device uuid."""
    return str(uuidlib.uuid5(PROVIDER_NAMESPACE, '%s/%s' % (host, device)))


@functools.lru_cache(maxsize=1 << 16)
def child_uuid(parent, kind, index):
    """A uuid under ``parent`` (deployables, attach handles)."""
    return str(uuidlib.uuid5(uuidlib.UUID(parent), '%s/%d' % (kind, index)))


def provider_name(host, driver_name, index):
    """The name of a device's provider: ``<host>_<driver>_<index>``."""
    return '%s_%s_%d' % (host, driver_name, index)


def _trait_part(text):
    return ''.join(c if c.isalnum() else '_' for c in str(text)).upper()


def vendor_trait(device_type, vendor_id):
    """``CUSTOM_<TYPE>_<VENDOR>``: ``CUSTOM_GPU_NVIDIA``, or
    ``CUSTOM_FPGA_VENDOR_ID_1234`` for a vendor without a name here."""
    vendor_id = str(vendor_id).lower().removeprefix('0x')
    name = VENDOR_NAMES.get(vendor_id, 'VENDOR_ID_%s' % vendor_id)
    return 'CUSTOM_%s_%s' % (_trait_part(device_type), _trait_part(name))


def product_trait(device_type, product_id):
    """``CUSTOM_<TYPE>_PRODUCT_ID_<ID>``, as the device profiles of
    Cyborg's documentation ask for (``CUSTOM_GPU_PRODUCT_ID_1EB8``)."""
    product_id = str(product_id).lower().removeprefix('0x')
    return 'CUSTOM_%s_PRODUCT_ID_%s' % (
        _trait_part(device_type),
        _trait_part(product_id),
    )


class AcceleratorDriver(abc.ABC):
    """One kind of device on one host.

    Built as ``Driver(conf, host)`` by :func:`nimbus.accelerator.drivers.
    load`. Class attributes a driver sets:

    ``device_type``
        ``"FPGA"`` or ``"GPU"`` (the device dict's ``type``);
    ``resource_class``
        the placement resource class of its devices' inventory (``FPGA``,
        ``PGPU``, or a ``CUSTOM_`` one, which the agent creates).
    """

    device_type = None
    resource_class = None

    def __init__(self, conf, host):
        self.conf = conf
        self.host = host

    @abc.abstractmethod
    def discover(self):
        """The devices present now: a list of device dicts (the shape in
        this module's docstring), in a stable order. An exception stops
        this report (the agent logs it and reports again later)."""

    def traits(self, device):
        """The traits of ``device``'s provider besides the ownership
        trait. Default: the vendor and product traits derived from
        ``vendor`` and the ``product_id`` of ``std_board_info``."""
        product = _board_product(device)
        traits = {vendor_trait(device['type'], device['vendor'])}
        if product:
            traits.add(product_trait(device['type'], product))
        return traits

    @abc.abstractmethod
    def program(self, device, attach_handle, arq):
        """Make ``attach_handle`` of ``device`` ready for ``arq`` (a dict
        with ``uuid`` and ``instance_uuid``): flash a bitstream, reset a
        GPU. Returns nothing; raises :class:`ProgramError` with the reason
        when it cannot (the agent answers ProgrammingFailed). Programming
        a handle already programmed for the same ARQ succeeds again."""

    def release(self, device, attach_handle, arq):  # noqa: B027 - optional hook, no-op by default
        """Give the handle back after ``arq`` is unbound or deleted.
        Default: nothing to undo. An exception is logged by the agent."""

    def halt(self):  # noqa: B027 - optional hook, no-op by default
        """Abandon work under way (the agent is killed or stopping).
        Default: nothing."""


def _board_product(device):
    try:
        board = json.loads(device.get('std_board_info') or '{}')
    except (TypeError, ValueError):
        return None
    return board.get('product_id') if isinstance(board, dict) else None
