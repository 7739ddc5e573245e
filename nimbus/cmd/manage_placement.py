"""nimbus-manage placement: offline work on a compute's provider tree.

    nimbus-manage --config-file F placement migrate-compute-inventory --host H

The offline upgrade step of seed 002 (Nova's ``nova-manage placement
migrate_compute_inventory``): with every service stopped but the databases,
run what a compute does at startup for host H, reaching placement directly
through ``[placement_database] connection`` (:mod:`nimbus.placement.direct`,
the same REST code with its schemas and microversions, no server). H's
driver (``[compute] compute_driver`` and its options, so pass the compute's
own config file) describes its tree; if it asks for a reshape, every
allocation of the tree is gathered (their sharing providers' too), handed to
the driver to move, and written with inventories in one ``POST /reshaper``.
Without a reshape the inventories are brought up to date and the command
says nothing needed moving. Exit status 1 when the reshape fails (nothing
is changed then) or H has no provider in placement.
"""

import sys

from nimbus.common.clients import placement as placement_client
from nimbus.common import context
from nimbus.compute import exception as compute_exception
from nimbus.compute import resource_tracker
from nimbus.compute import service as compute_service
from nimbus.placement import direct


def migrate_compute_inventory(conf):
    host = conf.category.migrate_host
    if not host:
        sys.exit('placement migrate-compute-inventory needs --host')
    if not conf.placement_database.connection:
        sys.exit(
            'placement migrate-compute-inventory: [placement_database] '
            'connection is not set (placement is reached through its '
            'database)'
        )
    ctxt = context.get_admin_context()
    with direct.PlacementDirect(conf) as session:
        client = placement_client.PlacementClient(
            direct.BASE_URL, session=session
        )
        root = resource_tracker.compute_node_uuid(host)
        if client.get_provider(ctxt, root) is None:
            sys.exit(
                'placement migrate-compute-inventory: host %s has no '
                'resource provider in placement (was its compute ever '
                'started?)' % host
            )
        driver = compute_service.load_driver(conf, host)
        # The tracker's cell conductor is only for the compute node record,
        # which this command does not write.
        tracker = resource_tracker.ResourceTracker(
            conf, host, driver, client, None
        )
        try:
            reshaped = tracker.update(ctxt, startup=True)
        except compute_exception.ReshapeFailed as exc:
            sys.exit(
                'placement migrate-compute-inventory: the reshape of '
                '%s failed, placement is unchanged: %s' % (host, exc)
            )
    if reshaped:
        print('%s: inventories and allocations reshaped' % host)
    else:
        print('%s: no reshape needed; inventories up to date' % host)


def add_commands(subparsers):
    placement = subparsers.add_parser('placement').add_subparsers(
        dest='action'
    )
    placement.required = True
    migrate = placement.add_parser('migrate-compute-inventory')
    migrate.add_argument('--host', dest='migrate_host')
    migrate.set_defaults(func=migrate_compute_inventory)
