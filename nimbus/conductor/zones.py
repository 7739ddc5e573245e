"""The availability zone a server lands in, as Nova records it: a server
created without one takes its host's zone when it is scheduled (so
``OS-EXT-AZ:availability_zone`` and ``openstack server list --long`` show
it). A host's zone is the one of its aggregates (several: joined with
commas, as os-services shows them), else the zone its compute reported,
else ``[scheduler] default_availability_zone``: the rule the API and the
scheduler apply."""

from oslo_config import cfg

from nimbus.db import aggregates as aggregate_rows
from nimbus.db import cell_services

AZ_KEY = 'availability_zone'


def default_zone(conf):
    try:
        return conf.scheduler.default_availability_zone
    except (AttributeError, cfg.Error):  # no scheduler options registered
        return 'nova'


def host_zone(api_session, cell_session, host, default):
    names = aggregate_rows.metadata_of_host(api_session, host, AZ_KEY)
    if names:
        return ','.join(sorted(names))
    reported = cell_services.reported_zone(
        cell_session, host, 'nimbus-compute'
    )
    return reported or default


def host_zones(api_session, cell_session, hosts, default):
    """:func:`host_zone` of many hosts of one cell in two queries:
    ``{host: zone}``."""
    hosts = set(hosts)
    if not hosts:
        return {}
    names = aggregate_rows.metadata_of_hosts(api_session, hosts, AZ_KEY)
    reported = cell_services.reported_zones(
        cell_session, hosts, 'nimbus-compute'
    )
    return {
        host: ','.join(sorted(names[host]))
        if names.get(host)
        else (reported.get(host) or default)
        for host in hosts
    }


def aggregate_zones(api_session, hosts):
    """The first half of :func:`host_zones`, in the API database: ``{host:
    zone names of its aggregates}`` (hosts without any left out)."""
    hosts = set(hosts)
    if not hosts:
        return {}
    return aggregate_rows.metadata_of_hosts(api_session, hosts, AZ_KEY)


def resolve_zones(cell_session, names, hosts, default):
    """The second half, in the cell's database: ``{host: zone}`` of
    ``hosts`` given ``names`` (:func:`aggregate_zones`); the zones the
    computes reported are read only for hosts without an aggregate's."""
    hosts = set(hosts)
    rest = {host for host in hosts if not names.get(host)}
    reported = (
        cell_services.reported_zones(cell_session, rest, 'nimbus-compute')
        if rest
        else {}
    )
    return {
        host: ','.join(sorted(names[host]))
        if names.get(host)
        else (reported.get(host) or default)
        for host in hosts
    }
