"""The per-request shortcuts: policy decision cache, counter reads."""

import types

import pytest

from nimbus.common.wsgi import errors
from nimbus.placement.handlers import util
from nimbus.placement.objects import base


class _Enforcer:
    def __init__(self):
        self.calls = 0
        self.allow = True

    def authorize(self, ctx, rule, target=None):
        self.calls += 1
        if not self.allow:
            raise errors.HTTPError(403, 'no')


def _ctx(user='u', project='p', roles=('admin',)):
    return types.SimpleNamespace(
        user_id=user,
        project_id=project,
        roles=list(roles),
        is_admin='admin' in roles,
    )


def test_policy_decisions_are_cached_per_credentials_rule_and_target():
    enf = _Enforcer()
    cache = util.PolicyCache(enf, ttl=60)
    for _ in range(3):
        cache.authorize(_ctx(), 'a')
    assert enf.calls == 1
    cache.authorize(_ctx(), 'b')
    cache.authorize(_ctx(roles=('reader',)), 'a')
    cache.authorize(_ctx(project='q'), 'a')
    cache.authorize(_ctx(), 'a', {'project_id': 'x'})
    assert enf.calls == 5


def test_denials_are_cached_too_and_everything_expires():
    enf = _Enforcer()
    enf.allow = False
    cache = util.PolicyCache(enf, ttl=60)
    for _ in range(2):
        with pytest.raises(errors.HTTPError) as info:
            cache.authorize(_ctx(), 'a')
        assert info.value.status_int == 403
    assert enf.calls == 1
    enf.allow = True
    cache._expires = 0  # the ttl has passed: the policy is asked again
    cache.authorize(_ctx(), 'a')
    assert enf.calls == 2


def test_state_reads_survive_a_broken_connection(tmp_path):
    from nimbus.placement import db as placement_db

    url = 'sqlite:///%s' % (tmp_path / 'p.sqlite')
    placement_db.sync(url)
    pdb = base.PlacementDB(url)
    first = pdb.state()
    pdb.write(lambda conn: None)
    assert pdb.state() == (first[0] + 1, first[1])
    pdb._state_conn.dbapi_connection.close()  # e.g. the server went away
    pdb.write(lambda conn: None, structure=False, usage=True)
    assert pdb.state() == (first[0] + 1, first[1] + 1)
    assert pdb.state() == (first[0] + 1, first[1] + 1)
    pdb.database.dispose()
