"""WSGI entry points for the servers operators run: gunicorn, uWSGI,
mod_wsgi.

=====================================  ================================
``nimbus.wsgi.api:application``        the compute API (nimbus-api)
``nimbus.wsgi.placement:application``  the placement API
``nimbus.wsgi.accelerator:application`` the accelerator API (HTTP only)
=====================================  ================================

Each builds the app its console script builds, through the same
composition root (:mod:`nimbus.services`) and the same option parsing,
logging and broker check (:func:`nimbus.cmd.common.setup`); only the
HTTP server differs. The built-in cheroot server of the console scripts
and of ``nimbus all-in-one`` is unchanged.

Which config files, first match wins:

1. ``NIMBUS_CONFIG_FILE``: one path, or several separated by ``:``
   (read in order, later ones override); each must exist;
2. else in the directory ``OS_NIMBUS_CONFIG_DIR`` (default
   ``/etc/nimbus``): the service's own file (``nimbus.conf`` for the API,
   ``placement.conf``, ``accelerator.conf``, the names of
   ``etc/nimbus/examples``), or ``nimbus.conf`` when it has none.

No file found is an error naming the paths tried, not a silent run on
defaults.

The app is built once per worker process, on its first request or when
the server calls :meth:`Application.load` (the shipped gunicorn config
does so in ``post_worker_init``), never at import time: a server that
imports the module in its master before forking (``gunicorn --preload``,
uWSGI without ``lazy-apps``) still gives each worker connections of its
own.
"""

import os
import threading

ENV_FILE = 'NIMBUS_CONFIG_FILE'
ENV_DIR = 'OS_NIMBUS_CONFIG_DIR'
DEFAULT_DIR = '/etc/nimbus'
COMMON_FILE = 'nimbus.conf'


class ConfigNotFound(RuntimeError):
    """No config file where the environment (or the default) points."""


def config_files(service_file, environ=None):
    """The config files of a service whose own file is ``service_file``;
    see the module docstring."""
    environ = os.environ if environ is None else environ
    named = environ.get(ENV_FILE, '').strip()
    if named:
        files = [path for path in named.split(':') if path]
        missing = [path for path in files if not os.path.isfile(path)]
        if missing:
            raise ConfigNotFound(
                '%s names %s: no such file' % (ENV_FILE, ', '.join(missing))
            )
        return files
    directory = environ.get(ENV_DIR, '').strip() or DEFAULT_DIR
    tried = []
    for name in dict.fromkeys((service_file, COMMON_FILE)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return [path]
        tried.append(path)
    raise ConfigNotFound(
        'no config file: tried %s (set %s to a file or %s to a directory)'
        % (', '.join(tried), ENV_FILE, ENV_DIR)
    )


def load_conf(prog, service_file, needs_bus=False, environ=None):
    """The registered, parsed conf of ``prog`` from :func:`config_files`,
    set up as its console script sets it up (logging, the broker check)."""
    from nimbus.cmd import common

    args = []
    for path in config_files(service_file, environ):
        args += ['--config-file', path]
    try:
        return common.setup(prog, args, needs_bus=needs_bus)
    except SystemExit as exc:
        # setup's one-line refusal (no broker, a URL that does not
        # parse): raised, so the server logs it and the worker fails.
        raise RuntimeError(str(exc.code)) from None


class Application:
    """A WSGI callable that builds ``factory(conf)`` once, in the process
    that first serves (or calls :meth:`load`), and then hands it every
    request."""

    def __init__(self, prog, service_file, factory, needs_bus=False):
        self.prog = prog
        self.service_file = service_file
        self.factory = factory
        self.needs_bus = needs_bus
        self._app = None
        self._lock = threading.Lock()

    def load(self):
        """The built app (built now on the first call)."""
        if self._app is None:
            with self._lock:
                if self._app is None:
                    conf = load_conf(
                        self.prog, self.service_file, self.needs_bus
                    )
                    self._app = self.factory(conf)
        return self._app

    def __call__(self, environ, start_response):
        return self.load()(environ, start_response)
