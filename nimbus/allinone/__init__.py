"""The whole cloud in one process: ``nimbus all-in-one``.

Also the functional-test harness: :class:`Cloud` is library code, so tests
(and anyone embedding Nimbus) start the real services in-process with it.
"""

from nimbus.allinone.cloud import Cloud  # noqa: F401
