#!/usr/bin/env python
"""Contracts benchmark: what converting a message body costs, per library.

    .venv/bin/python benchmarks/contracts_bench.py [--number 20000] [--json out.json]

Times ``from_primitive`` (a primitive off the bus to a typed object) and
``to_primitive`` (back) for the two bodies on the scheduler's path, a
RequestSpec (nested: flavor, image, group, hints) and a Selection (an
allocation request of three providers), with:

- ``dict``: today's baseline for a Selection (the dict is used as it
  arrives: nothing to convert; ``dict(d)`` stands for a shallow copy);
- ``dataclass``: Nimbus's contracts (``nimbus.common.objects``, dataclasses
  with ``__slots__`` and hand-written conversion and type checks);
- ``msgspec``: an equivalent ``msgspec.Struct`` (``msgspec.convert`` /
  ``msgspec.to_builtins``), when msgspec is installed;
- ``ovo``: an equivalent oslo.versionedobjects class (``obj_from_primitive``
  of its ``obj_to_primitive``; its wire form is its own envelope), when
  oslo.versionedobjects is installed.

The contracts off the scheduler's path (an Instance of
``build_and_run_instance``, a full ComputeNodeRecord of the periodic
report, an InstanceInfo cache event) are timed as dataclasses against the
dict they replaced (``dict(d)``: a shallow copy).

Microseconds per conversion (best of ``--repeat`` runs of ``--number``).
"""

import argparse
import json
import sys
import timeit

from nimbus.common.objects import ComputeNodeRecord
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceInfo
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import Selection
from nimbus.scheduler import testing

SELECTION = {
    'service_host': 'host-1',
    'nodename': 'host-1',
    'compute_node_uuid': 'rp-1',
    'cell_uuid': 'cell-1',
    'allocation_request': {
        'allocations': {
            'rp-1': {'resources': {'VCPU': 2, 'MEMORY_MB': 4096}},
            'rp-1-disk': {'resources': {'DISK_GB': 20}},
            'rp-1-gpu': {'resources': {'VGPU': 1}},
        },
        'mappings': {'': ['rp-1'], '_device_profile_0': ['rp-1-gpu']},
    },
    'allocation_request_version': '1.39',
    'limits': {},
}

INSTANCE = {
    'uuid': 'u-1',
    'display_name': 'vm-1',
    'project_id': 'p-1',
    'user_id': 'user-1',
    'host': 'host-1',
    'node': 'host-1',
    'compute_node_uuid': 'rp-1',
    'vm_state': 'building',
    'task_state': 'scheduling',
    'power_state': 0,
    'flavor': {'name': 'm1.small', 'flavorid': '2', 'vcpus': 1},
    'image_ref': 'img-1',
    'availability_zone': 'nova',
    'metadata': {'role': 'web'},
    'accel_uuids': [],
    'launched_at': None,
    'created_at': '2026-11-25T12:00:00',
    'deleted': False,
}
NODE = {
    'uuid': 'rp-1',
    'host': 'host-1',
    'hypervisor_hostname': 'host-1',
    'hypervisor_type': 'QEMU',
    'hypervisor_version': 8002000,
    'cpu_info': {'arch': 'x86_64', 'features': ['avx2']},
    'host_ip': '10.0.0.1',
    'vcpus': 64,
    'memory_mb': 262144,
    'local_gb': 2000,
    'vcpus_used': 8,
    'memory_mb_used': 16384,
    'local_gb_used': 80,
    'running_vms': 4,
    'cpu_allocation_ratio': 16.0,
    'ram_allocation_ratio': 1.5,
    'disk_allocation_ratio': 1.0,
    'supported_instances': [['x86_64', 'qemu', 'hvm']],
    'numa_topology': {'cells': [{'id': 0, 'cpuset': [0, 1]}]},
    'pci_stats': [],
    'stats': {'rack': 'r1'},
    'failed_builds': 0,
}
INSTANCE_INFO = {
    'uuid': 'u-1',
    'flavor_id': '2',
    'group_uuid': None,
    'image_ref': 'img-1',
    'image_properties': {'hw_architecture': 'x86_64'},
}


def spec_primitive():
    spec = testing.spec(
        vcpus=2,
        memory_mb=4096,
        root_gb=20,
        num=3,
        extra_specs={
            'hw:cpu_policy': 'dedicated',
            'trait:CUSTOM_X': 'required',
        },
        image_props={'hw_architecture': 'x86_64', 'img_hv_type': 'qemu'},
    )
    out = spec.to_primitive()
    out['scheduler_hints'] = {'different_host': ['u-1'], 'query': None}
    out['instance_group'] = {
        'uuid': 'g-1',
        'name': 'g',
        'policy': 'anti-affinity',
        'rules': {},
        'members': ['u-1', 'u-2'],
        'hosts': ['host-9'],
    }
    return out


def _msgspec_pair():
    try:
        import msgspec
    except ImportError:
        return None

    class FlavorS(msgspec.Struct):
        name: str = ''
        flavorid: str = ''
        vcpus: int = 0
        memory_mb: int = 0
        root_gb: int = 0
        ephemeral_gb: int = 0
        swap: int = 0
        extra_specs: dict = {}

    class ImageS(msgspec.Struct):
        id: str | None = None
        name: str | None = None
        properties: dict = {}

    class GroupS(msgspec.Struct):
        uuid: str | None = None
        name: str | None = None
        policy: str | None = None
        rules: dict = {}
        members: list = []
        hosts: list = []

    class SpecS(msgspec.Struct, rename={'version': 'nimbus_object.version'}):
        flavor: FlavorS
        version: str = '1.0'
        instance_uuids: list[str] = []
        num_instances: int = 1
        min_count: int = 1
        project_id: str | None = None
        user_id: str | None = None
        image: ImageS | None = None
        availability_zone: str | None = None
        scheduler_hints: dict = {}
        instance_group: GroupS | None = None
        requested_resources: list[dict] = []
        device_profile: str | None = None
        is_bfv: bool = False
        ignore_hosts: list = []
        force_hosts: list = []
        force_nodes: list = []
        retry: dict | None = None
        request_id: str | None = None

    class SelS(msgspec.Struct, rename={'version': 'nimbus_object.version'}):
        service_host: str
        allocation_request: dict | None
        version: str = '1.0'
        nodename: str | None = None
        compute_node_uuid: str | None = None
        cell_uuid: str | None = None
        allocation_request_version: str | None = None
        limits: dict = {}
        availability_zone: str | None = None

    def conv(kind):
        return (lambda d: msgspec.convert(d, kind), msgspec.to_builtins)

    return conv(SpecS), conv(SelS)


def _ovo_pair():
    try:
        from oslo_versionedobjects import base as ovo_base
        from oslo_versionedobjects import fields as ovo_fields
    except ImportError:
        return None

    @ovo_base.VersionedObjectRegistry.register
    class BenchSelection(ovo_base.VersionedObject):
        VERSION = '1.0'
        fields = {
            'service_host': ovo_fields.StringField(),
            'nodename': ovo_fields.StringField(nullable=True),
            'compute_node_uuid': ovo_fields.StringField(nullable=True),
            'cell_uuid': ovo_fields.StringField(nullable=True),
            'allocation_request': ovo_fields.DictOfNullableStringsField(
                nullable=True
            ),
            'allocation_request_version': ovo_fields.StringField(
                nullable=True
            ),
            'limits': ovo_fields.DictOfNullableStringsField(),
        }

    @ovo_base.VersionedObjectRegistry.register
    class BenchFlavor(ovo_base.VersionedObject):
        VERSION = '1.0'
        fields = {
            'name': ovo_fields.StringField(),
            'flavorid': ovo_fields.StringField(),
            'vcpus': ovo_fields.IntegerField(),
            'memory_mb': ovo_fields.IntegerField(),
            'root_gb': ovo_fields.IntegerField(),
            'ephemeral_gb': ovo_fields.IntegerField(),
            'swap': ovo_fields.IntegerField(),
            'extra_specs': ovo_fields.DictOfStringsField(),
        }

    @ovo_base.VersionedObjectRegistry.register
    class BenchSpec(ovo_base.VersionedObject):
        VERSION = '1.0'
        fields = {
            'flavor': ovo_fields.ObjectField('BenchFlavor'),
            'instance_uuids': ovo_fields.ListOfStringsField(),
            'num_instances': ovo_fields.IntegerField(),
            'min_count': ovo_fields.IntegerField(),
            'project_id': ovo_fields.StringField(nullable=True),
            'user_id': ovo_fields.StringField(nullable=True),
            'image_properties': ovo_fields.DictOfStringsField(),
            'availability_zone': ovo_fields.StringField(nullable=True),
            'group_uuid': ovo_fields.StringField(nullable=True),
            'group_members': ovo_fields.ListOfStringsField(),
            'request_id': ovo_fields.StringField(nullable=True),
        }

    ser = ovo_base.VersionedObjectSerializer()

    def spec_from(d):
        # The ovo wire form is its own envelope: build the object from the
        # same values first (untimed in the comparison's spirit: the real
        # cost on arrival is deserialize_entity of the envelope).
        return ser.deserialize_entity(None, d)

    flavor = spec_primitive()['flavor']

    def make_spec():
        p = spec_primitive()
        return BenchSpec(
            flavor=BenchFlavor(**flavor),
            instance_uuids=p['instance_uuids'],
            num_instances=p['num_instances'],
            min_count=p['min_count'],
            project_id=p['project_id'],
            user_id=p['user_id'],
            image_properties=p['image']['properties'],
            availability_zone=p['availability_zone'],
            group_uuid='g-1',
            group_members=['u-1', 'u-2'],
            request_id=p['request_id'],
        )

    def make_sel():
        return BenchSelection(
            service_host='host-1',
            nodename='host-1',
            compute_node_uuid='rp-1',
            cell_uuid='cell-1',
            allocation_request={'rp-1': 'VCPU=2,MEMORY_MB=4096'},
            allocation_request_version='1.39',
            limits={},
        )

    return (
        (spec_from, lambda o: ser.serialize_entity(None, o), make_spec),
        (spec_from, lambda o: ser.serialize_entity(None, o), make_sel),
    )


def _time(func, arg, number, repeat):
    best = min(timeit.repeat(lambda: func(arg), number=number, repeat=repeat))
    return best / number * 1e6


def run(number, repeat):
    spec_p = spec_primitive()
    sel_p = dict(SELECTION)
    results = {'RequestSpec': {}, 'Selection': {}}
    spec_o = RequestSpec.from_primitive(spec_p)
    sel_o = Selection.from_primitive(sel_p)
    results['Selection']['dict'] = {
        'from_us': _time(dict, sel_p, number, repeat),
        'to_us': _time(dict, sel_p, number, repeat),
    }
    results['RequestSpec']['dataclass'] = {
        'from_us': _time(RequestSpec.from_primitive, spec_p, number, repeat),
        'to_us': _time(RequestSpec.to_primitive, spec_o, number, repeat),
    }
    results['Selection']['dataclass'] = {
        'from_us': _time(Selection.from_primitive, sel_p, number, repeat),
        'to_us': _time(Selection.to_primitive, sel_o, number, repeat),
    }
    pair = _msgspec_pair()
    if pair is not None:
        for name, (load, dump), prim in (
            ('RequestSpec', pair[0], spec_p),
            ('Selection', pair[1], sel_p),
        ):
            obj = load(prim)
            results[name]['msgspec'] = {
                'from_us': _time(load, prim, number, repeat),
                'to_us': _time(dump, obj, number, repeat),
            }
    pair = _ovo_pair()
    if pair is not None:
        for name, (load, dump, make) in (
            ('RequestSpec', pair[0]),
            ('Selection', pair[1]),
        ):
            obj = make()
            prim = dump(obj)
            results[name]['ovo'] = {
                'from_us': _time(load, prim, number, repeat),
                'to_us': _time(dump, obj, number, repeat),
            }
    for name, kind, prim in (
        ('Instance', Instance, INSTANCE),
        ('ComputeNodeRecord', ComputeNodeRecord, NODE),
        ('InstanceInfo', InstanceInfo, INSTANCE_INFO),
    ):
        obj = kind.from_primitive(prim)
        results[name] = {
            'dict': {
                'from_us': _time(dict, prim, number, repeat),
                'to_us': _time(dict, prim, number, repeat),
            },
            'dataclass': {
                'from_us': _time(kind.from_primitive, prim, number, repeat),
                'to_us': _time(kind.to_primitive, obj, number, repeat),
            },
        }
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--number', type=int, default=20000)
    p.add_argument('--repeat', type=int, default=5)
    p.add_argument('--json', metavar='FILE')
    args = p.parse_args(argv)
    results = run(args.number, args.repeat)
    for name, by_lib in results.items():
        for lib, t in by_lib.items():
            print(
                f'{name:17s} {lib:10s} from_primitive {t["from_us"]:7.2f} us'
                f'   to_primitive {t["to_us"]:7.2f} us'
            )
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
