"""nimbus.testing.tempest: the counts it reads from a ``tempest run``
output and the tempest.conf it writes."""

import configparser

from nimbus.testing import tempest

OUTPUT = """
======
Totals
======
Ran: 441 tests in 1200.0000 sec.
 - Passed: 201
 - Skipped: 150
 - Expected Fail: 0
 - Unexpected Success: 0
 - Failed: 90
Sum of execute time for each test: 2000.0000 sec.
"""


class _Keystone:
    url = 'http://127.0.0.1:5000/v3'


def test_counts_of_a_tempest_run():
    assert tempest.counts(OUTPUT) == {
        'Passed': 201,
        'Skipped': 150,
        'Expected Fail': 0,
        'Unexpected Success': 0,
        'Failed': 90,
    }
    assert tempest.counts('no totals here') == {}


def test_conf_says_what_nimbus_serves(tmp_path):
    sections = tempest.tempest_conf(
        _Keystone(),
        'img',
        'img2',
        '42',
        '84',
        str(tmp_path),
        ['host-1', 'host-2'],
    )
    path = tmp_path / 'tempest.conf'
    tempest.write_conf(path, sections)
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(path)
    assert conf['service_available']['neutron'] == 'false'
    assert conf['service_available']['cinder'] == 'false'
    assert conf['compute']['image_ref'] == 'img'
    assert conf['compute']['flavor_ref_alt'] == '84'
    assert conf['compute']['min_compute_nodes'] == '2'
    assert conf['identity']['uri_v3'] == _Keystone.url
    features = conf['compute-feature-enabled']
    assert features['resize'] == 'false'
    assert 'ServerGroupAffinityFilter' in features[
        'scheduler_enabled_filters'
    ].split(',')
