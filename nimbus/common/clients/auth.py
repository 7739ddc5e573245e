"""Keystone sessions of the service clients (placement, accelerator API).

Each client's config group carries the usual keystoneauth options, as every
OpenStack service's does: ``auth_type`` and the plugin's own options (or
``auth_section`` naming a group that holds them, e.g. ``keystone_authtoken``)
and the session options (``cafile``, ``insecure``, ``timeout``, ...). With
``auth_strategy = keystone`` a client sends its requests through a
keystoneauth session loaded from that group, which fetches and renews the
token; with ``noauth2`` no Keystone is involved.
"""

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
import requests

# The plugin whose options the sample config shows (as Nova does).
SAMPLE_PLUGIN = 'password'


class AuthConfigError(Exception):
    """A client group asks for keystone but says nothing of how."""


def _session_opts():
    # The client groups have their own ``timeout`` (with a default), which
    # the session loader reads as well.
    return [
        opt
        for opt in ks_loading.get_session_conf_options()
        if opt.dest != 'timeout'
    ]


def register_opts(conf, group):
    """Register the keystoneauth auth and session options in ``group``."""
    conf.register_opts(_session_opts(), group=group)
    ks_loading.register_auth_conf_options(conf, group)


def list_opts():
    """The keystoneauth options one client group shows in the sample."""
    return (
        _session_opts()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options(SAMPLE_PLUGIN)
    )


def load_session(conf, group):
    """A keystoneauth Session authenticated from ``group``'s options."""
    section = getattr(conf, group).auth_section
    if section:
        # The section (often [keystone_authtoken], which keystonemiddleware
        # registers only in the API processes) needs its group to exist;
        # registering the same options again is harmless.
        ks_loading.register_auth_conf_options(conf, section)
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    if auth is None:
        raise AuthConfigError(
            '[%s] auth_strategy = keystone but neither auth_type nor '
            'auth_section is set in [%s]' % (group, group)
        )
    return ks_loading.load_session_from_conf_options(conf, group, auth=auth)


class KeystoneSender:
    """A keystoneauth Session behind the ``requests.Session.request``
    signature the clients use: HTTP errors come back as responses, and a
    connection failure, or a 5xx from the identity service while getting a
    token, is a ``requests.ConnectionError`` (which the clients retry)."""

    def __init__(self, session):
        self.session = session

    def request(self, method, url, **kwargs):
        try:
            return self.session.request(url, method, raise_exc=False, **kwargs)
        except ks_exc.ConnectionError as exc:
            raise requests.ConnectionError(str(exc)) from exc
        except ks_exc.HttpServerError as exc:
            # The identity service failed to issue a token (a real Keystone
            # on a busy SQLite answered 500 "database is locked"): retried
            # like an unreachable peer, instead of ending the caller (a
            # compute died at start of it).
            raise requests.ConnectionError(
                'identity service: %s' % exc
            ) from exc

    def get(self, url, **kwargs):
        return self.request('GET', url, **kwargs)


def sender(conf, group, session=None):
    """What a client of ``group`` sends with: a KeystoneSender when the
    group's auth_strategy is keystone, else ``session`` (or a new
    ``requests.Session``)."""
    if getattr(conf, group).auth_strategy == 'keystone':
        return KeystoneSender(load_session(conf, group))
    return session or requests.Session()
