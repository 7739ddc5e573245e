"""Harnesses for the people who build Nimbus, not shipped with it: the
soak run (``make soak``), the Tempest runner (``make tempest``), a real
Keystone for the integration tests, and the fault suite's bursts and
injectors (among them :mod:`harness.twice`, the daemon wrapper that sends
build casts twice). Run from the repository root (``python -m harness.soak_run``);
the fixtures an integrator would import stay in :mod:`nimbus.testing`."""
