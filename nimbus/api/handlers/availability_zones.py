"""/os-availability-zone and /os-availability-zone/detail."""

from nimbus.api import policies
from nimbus.api import util
from nimbus.api.objects import aggregates as agg_obj
from nimbus.api.objects import services as service_obj


def _zones(req, include_internal):
    deps = util.deps(req)
    services = service_obj.list_services(
        deps.cells, deps.conf.service_down_time, util.utcnow()
    )
    zones_by_host = agg_obj.zones_by_host(deps.api_db)
    zones = {}
    for service in services:
        zone = agg_obj.service_zone(deps.conf, service, zones_by_host)
        is_compute = service['binary'].endswith('compute')
        if not is_compute and not include_internal:
            continue
        for name in zone.split(','):
            entry = zones.setdefault(name, {'available': False, 'hosts': {}})
            usable = service['up'] and not service['disabled']
            if is_compute and usable:
                entry['available'] = True
            if not is_compute:
                entry['available'] = entry['available'] or service['up']
            entry['hosts'].setdefault(service['host'], {})[
                service_obj.shown_binary(service['binary'])
            ] = {
                'available': service['up'],
                'active': not service['disabled'],
                'updated_at': util.isotime(service['updated_at']),
            }
    # Zones of aggregates whose hosts run no service yet still exist.
    for name in agg_obj.zone_names(deps.api_db):
        zones.setdefault(name, {'available': False, 'hosts': {}})
    return zones


def index(req, resp):
    _answer(req, resp, 'list', detail=False)


def detail(req, resp):
    _answer(req, resp, 'detail', detail=True)


def _answer(req, resp, rule, detail):
    """The zones, with their internal ones and hosts when ``detail``."""
    util.authorize(req, policies.AZ % rule)
    zones = _zones(req, include_internal=detail)
    resp.media = {
        'availabilityZoneInfo': [
            {
                'zoneName': name,
                'zoneState': {'available': z['available']},
                'hosts': (z['hosts'] or None) if detail else None,
            }
            for name, z in sorted(zones.items())
        ]
    }
