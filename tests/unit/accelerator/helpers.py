"""Shared pieces of the accelerator unit tests: a migrated SQLite database
and a host's device report in the agents' shape."""

from nimbus.accelerator import db as accel_db
from nimbus.accelerator.objects import base


def new_db(tmp_path, name='accelerator.sqlite'):
    url = 'sqlite:///%s' % (tmp_path / name)
    accel_db.sync(url)
    return base.AcceleratorDB(url)


def fpga(host, index, handles=1, rp_uuid=None):
    """One FPGA device with one deployable of ``handles`` attach handles;
    uuids derived from host and index so a second report is identical."""
    tag = '%08x' % (abs(hash((host, index))) % (1 << 32))
    return {
        'uuid': '%s-0000-4000-8000-%012d' % (tag, index),
        'type': 'FPGA',
        'vendor': '0x8086',
        'model': 'fake-fpga',
        'std_board_info': '{"product_id": "0xbcc0"}',
        'vendor_board_info': 'fake',
        'hostname': host,
        'driver_name': 'fake_fpga',
        'deployables': [
            {
                'uuid': '%s-0000-4000-9000-%012d' % (tag, index),
                'name': '%s_fpga_%d' % (host, index),
                'num_accelerators': handles,
                'rp_uuid': rp_uuid or '%s-0000-4000-a000-%012d' % (tag, index),
                'driver_name': 'fake_fpga',
                'attach_handles': [
                    {
                        'uuid': '%s-%04d-4000-b000-%012d' % (tag, h, index),
                        'attach_type': 'PCI',
                        'attach_info': '{"bus": "5e", "device": "%02d", '
                        '"domain": "0000", "function": "0"}' % h,
                        'in_use': False,
                    }
                    for h in range(handles)
                ],
            }
        ],
    }
