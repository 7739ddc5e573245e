"""nimbus.messaging_internals: the one package on oslo.messaging's private
internals, checked against the installed release, and the only one that
imports them."""

import ast
import configparser
import importlib.metadata
import pathlib

from packaging.requirements import Requirement
import pytest

from nimbus import messaging_internals

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_installed_release_has_every_internal_nimbus_uses():
    assert messaging_internals.missing() == []
    messaging_internals.check()


def test_the_installed_release_is_in_the_pinned_range():
    setup = configparser.ConfigParser()
    setup.read(ROOT / 'setup.cfg')
    pins = [
        Requirement(line)
        for line in setup['options']['install_requires'].split('\n')
        if line.strip().startswith('oslo.messaging')
    ]
    assert len(pins) == 1
    spec = pins[0].specifier
    assert spec.contains('18.3.1'), 'the pin excludes the tested release'
    assert not spec.contains('19.0.0'), 'the pin admits an untested major'
    assert spec.contains(importlib.metadata.version('oslo.messaging'))


def test_a_missing_internal_fails_loudly_and_names_it(monkeypatch):
    monkeypatch.setattr(
        messaging_internals,
        'REQUIRED',
        messaging_internals.REQUIRED
        + (('oslo_messaging._drivers.base', 'GoneInANewRelease'),),
    )
    with pytest.raises(messaging_internals.IncompatibleOsloMessaging) as info:
        messaging_internals.check()
    message = str(info.value)
    assert 'oslo_messaging._drivers.base.GoneInANewRelease' in message
    assert importlib.metadata.version('oslo.messaging') in message


def _private_imports(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.startswith('oslo_messaging._'):
                yield name


def test_no_other_module_imports_oslo_messaging_internals():
    offenders = []
    for path in sorted((ROOT / 'nimbus').rglob('*.py')):
        if 'messaging_internals' in path.parts:
            continue
        for name in _private_imports(path):
            offenders.append('%s imports %s' % (path.relative_to(ROOT), name))
    assert offenders == []
    # ... and the package itself does (the test would pass vacuously
    # if the walk found nothing).
    inside = [
        name
        for path in (ROOT / 'nimbus' / 'messaging_internals').glob('*.py')
        for name in _private_imports(path)
    ]
    assert 'oslo_messaging._drivers' in inside
