"""Plain value objects that cross package boundaries (dicts on the wire)."""

from nimbus.common.objects.request_spec import Flavor  # noqa: F401
from nimbus.common.objects.request_spec import ImageMeta  # noqa: F401
from nimbus.common.objects.request_spec import InstanceGroup  # noqa: F401
from nimbus.common.objects.request_spec import RequestSpec  # noqa: F401
