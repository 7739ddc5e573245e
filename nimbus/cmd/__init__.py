"""Entry points: one module per daemon, plus nimbus-manage and ``nimbus``.

oslo.service (pulled in by a dependency) imports eventlet, which prints a
deprecation banner on import. Nimbus never uses eventlet, so the commands
silence that one warning before anything imports it.
"""

import warnings

warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
