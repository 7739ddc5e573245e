"""nimbus.testing.quiet: one set of quiet overrides, a fresh copy a caller."""

from nimbus.testing import quiet


def test_every_call_is_a_fresh_copy():
    first = quiet.quiet_overrides()
    first['compute']['update_resources_interval'] = 1
    first['quota'] = {'instances': 1}

    second = quiet.quiet_overrides()
    assert second['compute']['update_resources_interval'] == 600
    assert 'quota' not in second


def test_groups_added_beside_the_quiet_ones():
    overrides = quiet.quiet_overrides(quota={'instances': 10})
    assert overrides['quota'] == {'instances': 10}
    assert overrides['conductor']['build_check_interval'] == 0
    assert overrides['DEFAULT']['report_interval'] == 600
