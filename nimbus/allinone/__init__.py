"""The whole cloud in one process: ``nimbus all-in-one``.

Also the functional-test harness: :class:`Cloud` is library code, so tests
(and anyone embedding Nimbus) start the real services in-process with it.

``Cloud`` is imported on first use (PEP 562): ``nimbus.allinone.client``,
which the ``nimbus`` CLI uses, must not pull in every service.
"""


def __getattr__(name):
    if name == 'Cloud':
        from nimbus.allinone.cloud import Cloud

        return Cloud
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
