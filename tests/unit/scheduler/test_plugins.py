"""Build and install a sample out-of-tree plugin (like the seed's acmefilter) and
schedule with it."""

import importlib
import subprocess
import sys
import textwrap

import pytest

from nimbus.api import extra_specs
from nimbus.scheduler import exception, plugins, selection, testing

from .conftest import host

PKG = "nimbusacmeplugin"

INIT = '''
from oslo_log import log as logging
from nimbus.scheduler import filters
from nimbus.scheduler.weighers import BaseHostWeigher

LOG = logging.getLogger(__name__)


class AcmeFilter(filters.BaseHostFilter):
    """Passes hosts whose name ends with the digit in acme:foo's length rule."""

    def host_passes(self, host_state, spec_obj):
        extra_spec = spec_obj.flavor.extra_specs.get('acme:foo')
        LOG.info("Extra spec value was '%s'", extra_spec)
        if extra_spec == 'baz':
            return host_state.host.endswith('-2')
        return True


class AcmeWeigher(BaseHostWeigher):
    multiplier_option = None

    def weigh(self, host_state, spec):
        return 1 if host_state.host.endswith('-0') else 0
'''

VALIDATORS = '''
from nimbus.api.extra_specs import base


def register():
    return [base.ExtraSpecValidator(
        name='acme:foo', description='My custom extra spec.',
        value={'type': str, 'enum': ['bar', 'baz']})]
'''

SETUP = f'''
from setuptools import setup

setup(
    name='{PKG}', version='0.1', description='My custom filter', packages=['{PKG}'],
    entry_points={{
        'nimbus.api.extra_spec_validators': ['acme = {PKG}.validators'],
        'nimbus.scheduler.weighers': ['AcmeWeigher = {PKG}:AcmeWeigher'],
    }},
)
'''


def _pip(*args):
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def acme(tmp_path_factory):
    pytest.importorskip("wheel", reason="building the sample plugin needs 'wheel'")
    root = tmp_path_factory.mktemp("acme")
    (root / PKG).mkdir()
    (root / PKG / "__init__.py").write_text(textwrap.dedent(INIT))
    (root / PKG / "validators.py").write_text(textwrap.dedent(VALIDATORS))
    (root / "setup.py").write_text(textwrap.dedent(SETUP))
    res = _pip("install", "-q", "--no-build-isolation", "--no-deps", str(root))
    assert res.returncode == 0, res.stderr
    importlib.invalidate_caches()
    extra_specs.reset()
    try:
        yield importlib.import_module(PKG)
    finally:
        _pip("uninstall", "-y", "-q", PKG)
        extra_specs.reset()
        sys.modules.pop(PKG, None)
        sys.modules.pop(PKG + ".validators", None)


def test_plugin_validator_registered(acme):
    extra_specs.validate("acme:foo", "bar")
    with pytest.raises(extra_specs.ExtraSpecValidationError):
        extra_specs.validate("acme:foo", "qux")


def test_schedule_with_plugin_filter_and_weigher(acme, conf):
    conf.set_override("available_filters",
                      ["nimbus.scheduler.filters.all_filters", f"{PKG}.AcmeFilter"],
                      "filter_scheduler")
    conf.set_override("enabled_filters", ["ComputeFilter", "AcmeFilter"], "filter_scheduler")
    conf.set_override("weight_classes", ["nimbus.scheduler.weighers.all_weighers"],
                      "filter_scheduler")
    sched = selection.FilterScheduler(conf)
    assert [f.name for f in sched.filters] == ["ComputeFilter", "AcmeFilter"]
    assert "AcmeWeigher" in [w.name for w in sched.weighers]  # via entry point
    hs = [host(f"h-{i}") for i in range(4)]
    sp = testing.spec(extra_specs={"acme:foo": "baz"})
    assert sched.schedule(sp, hs)[0][0]["service_host"] == "h-2"
    # the plugin weigher prefers h-0 when the filter lets everything through
    hs = [host(f"h-{i}") for i in range(4)]
    sp = testing.spec(extra_specs={"acme:foo": "bar"})
    assert sched.schedule(sp, hs)[0][0]["service_host"] == "h-0"


def test_enabled_but_not_available(conf):
    conf.set_override("enabled_filters", ["NoSuchFilter"], "filter_scheduler")
    with pytest.raises(exception.FilterNotFound):
        plugins.load_filters(conf)
