"""Contracts: the typed, versioned objects whose primitives cross a
process (docs/contracts.md lists them with their versions)."""

from nimbus.common.objects.action_event import ActionEvent  # noqa: F401
from nimbus.common.objects.base import MalformedPrimitive  # noqa: F401
from nimbus.common.objects.base import VERSION_KEY  # noqa: F401
from nimbus.common.objects.build_attempt import BuildAttempt  # noqa: F401
from nimbus.common.objects.build_request import BuildRequest  # noqa: F401
from nimbus.common.objects.compute_node import (  # noqa: F401
    ComputeNodeRecord,
)
from nimbus.common.objects.host_events import AggregateInfo  # noqa: F401
from nimbus.common.objects.host_events import InstanceInfo  # noqa: F401
from nimbus.common.objects.host_events import ServerGroupInfo  # noqa: F401
from nimbus.common.objects.host_events import ServiceInfo  # noqa: F401
from nimbus.common.objects.instance import Instance  # noqa: F401
from nimbus.common.objects.instance_event import InstanceEvent  # noqa: F401
from nimbus.common.objects.instance_update import InstanceUpdate  # noqa: F401
from nimbus.common.objects.migration import Migration  # noqa: F401
from nimbus.common.objects.request_spec import Flavor  # noqa: F401
from nimbus.common.objects.request_spec import ImageMeta  # noqa: F401
from nimbus.common.objects.request_spec import InstanceGroup  # noqa: F401
from nimbus.common.objects.request_spec import RequestSpec  # noqa: F401
from nimbus.common.objects.selection import Selection  # noqa: F401
