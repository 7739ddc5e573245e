"""The availability zone a server lands in, as Nova records it: a server
created without one takes its host's zone when it is scheduled (so
``OS-EXT-AZ:availability_zone`` and ``openstack server list --long`` show
it). A host's zone is the one of its aggregates (several: joined with
commas, as os-services shows them), else the zone its compute reported,
else ``[scheduler] default_availability_zone``: the rule the API and the
scheduler apply."""

import sqlalchemy as sa

from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models

AZ_KEY = 'availability_zone'


def default_zone(conf):
    try:
        return conf.scheduler.default_availability_zone
    except Exception:  # a ConfigOpts without the scheduler's options
        return 'nova'


def host_zone(api_session, cell_session, host, default):
    names = set(
        api_session.execute(
            sa.select(api_models.AggregateMetadata.value)
            .join(
                api_models.AggregateHost,
                api_models.AggregateHost.aggregate_id
                == api_models.AggregateMetadata.aggregate_id,
            )
            .where(
                api_models.AggregateHost.host == host,
                api_models.AggregateMetadata.key == AZ_KEY,
            )
        ).scalars()
    )
    if names:
        return ','.join(sorted(names))
    reported = cell_session.execute(
        sa.select(cell_models.Service.availability_zone).where(
            cell_models.Service.host == host,
            cell_models.Service.binary == 'nimbus-compute',
        )
    ).scalar()
    return reported or default
