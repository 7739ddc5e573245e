"""The dashboard end to end in headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) against an all-in-one cloud: servers
booted through the API appear in the hosts heat map, the servers-per-host
table and the decisions list (pushed by the event stream), a failed build
appears with its fault, and the capacity panel answers.

``NIMBUS_DASHBOARD_SCREENSHOT=docs/dashboard.png`` saves the page as the
screenshot the README shows.
"""

import os
import shutil
import time

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.allinone import demo
from nimbus.messaging_internals import inproc
from nimbus.testing import infra

pytestmark = [pytest.mark.integration, pytest.mark.browser]

HOSTS = 24


def _browser():
    webdriver = infra.require_module('selenium.webdriver')
    binary = shutil.which('chromium') or shutil.which('chromium-browser')
    driver_path = shutil.which('chromedriver')
    if not binary or not driver_path:
        infra.unavailable(
            'headless Chromium is not installed (apt-get '
            'install chromium chromium-driver)'
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--window-size=1400,1000',
    ):
        options.add_argument(arg)
    service = webdriver.ChromeService(executable_path=driver_path)
    return webdriver.Chrome(options=options, service=service)


@pytest.fixture
def cloud(tmp_path):
    cloud = cloud_mod.Cloud(
        str(tmp_path / 'cloud'),
        hosts=HOSTS,
        transport_url='inproc:///%s-api' % tmp_path.name,
        cell_transport_url='inproc:///%s-cell1' % tmp_path.name,
        overrides={
            'DEFAULT': {'report_interval': 1},
            'dashboard': {'cache_ttl': 0.5},
        },
    )
    cloud.start()
    try:
        demo.seed(cloud.api_url)
        yield cloud
    finally:
        cloud.stop()
        inproc.reset_buses()


@pytest.fixture
def browser():
    driver = _browser()
    try:
        yield driver
    finally:
        driver.quit()


def _until(what, check, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('timed out waiting for ' + what)
        time.sleep(0.25)


# The page redraws its panels on every poll: read them in one script run
# rather than element by element (an element may be replaced in between).
HEAT_MAP = """return Array.from(document.querySelectorAll('#heatmap .host')).map(
    e => [e.closest('.group').dataset.aggregate, e.dataset.host,
          +e.dataset.servers, +e.dataset.used, +e.dataset.capacity]);"""
SERVERS_TABLE = """return Array.from(document.querySelectorAll('#servers tbody tr'))
    .filter(r => r.dataset.host).map(
        r => [r.dataset.host, +r.querySelector('.servers').textContent]);"""


def _wait_servers(api, uuids):
    def done():
        servers = [api.server(u) for u in uuids]
        if all(s['status'] in ('ACTIVE', 'ERROR') for s in servers):
            return servers

    return _until('the servers to build', done)


def test_booted_servers_appear_in_the_page(cloud, browser):
    from selenium.webdriver.common.by import By

    api = client_mod.ComputeClient(cloud.api_url)
    flavors = {f['name']: f for f in api.get('/flavors')['flavors']}
    image = api.images()[0]

    browser.get(cloud.dashboard_url + '#token=admin:admin')
    # The token left the address bar; the page signed in with it.
    _until(
        'the heat map',
        lambda: (
            len(browser.find_elements(By.CSS_SELECTOR, '#heatmap .host'))
            == HOSTS
        ),
    )
    assert '#token' not in browser.current_url
    _until(
        'the event stream',
        lambda: browser.find_element(By.ID, 'stream-state').text == 'live',
    )

    for rack, first in (('rack-a', 1), ('rack-b', 9)):
        agg = api.post('/os-aggregates', {'aggregate': {'name': rack}})
        for n in range(first, first + 8):
            api.post(
                '/os-aggregates/%s/action' % agg['aggregate']['id'],
                {'add_host': {'host': 'host-%d' % n}},
            )
    flavors['mem.big'] = api.create_flavor('mem.big', 4, 90000, 40)
    booted = []
    for n, name in enumerate(
        ('m1.small', 'm1.medium', 'm1.large', 'mem.big') * 4
    ):
        booted.append(
            api.create_server('web-%d' % n, flavors[name]['id'], image['id'])[
                'server'
            ]['id']
        )
    huge = api.create_flavor('m1.huge', 512, 2048, 20)
    failed = api.create_server('too-big', huge['id'], image['id'])['server'][
        'id'
    ]
    servers = _wait_servers(api, booted + [failed])
    placed = {}
    for server in servers[:-1]:
        assert server['status'] == 'ACTIVE', server
        host = server['OS-EXT-SRV-ATTR:host']
        placed[host] = placed.get(host, 0) + 1
    assert servers[-1]['status'] == 'ERROR'

    def heat_map_counts():
        cells = browser.execute_script(HEAT_MAP)
        counts = {host: n for _agg, host, n, _u, _c in cells}
        return (
            cells if {h: n for h, n in counts.items() if n} == placed else None
        )

    cells = _until('the booted servers in the heat map', heat_map_counts)
    assert len(cells) == HOSTS
    groups = {}
    for agg, *_ in cells:
        groups[agg] = groups.get(agg, 0) + 1
    assert groups == {'rack-a': 8, 'rack-b': 8, '(no aggregate)': 8}

    def decided_hosts():
        items = browser.find_elements(By.CSS_SELECTOR, '#decisions li')
        hosts = {
            h
            for li in items
            for h in (li.get_attribute('data-hosts') or '').split()
        }
        failures = [
            li for li in items if 'outcome-failed' in li.get_attribute('class')
        ]
        return items if hosts >= set(placed) and failures else None

    items = _until('the decisions in the list', decided_hosts)
    assert len(items) == len(booted) + 1
    assert any('m1.huge' in li.text for li in items)

    assert dict(browser.execute_script(SERVERS_TABLE)) == placed

    row = _until(
        'the failed build',
        lambda: browser.execute_script(
            'var r = document.querySelector(\'#failures tr[data-uuid="%s"]\');'
            'return r && r.textContent;' % failed
        ),
    )
    assert 'too-big' in row and 'cell0' in row

    select = browser.find_element(By.ID, 'flavor')
    _until('the flavors', lambda: select.find_elements(By.TAG_NAME, 'option'))
    for option in select.find_elements(By.TAG_NAME, 'option'):
        if option.text == 'm1.small':
            option.click()
    browser.find_element(By.CSS_SELECTOR, '#capacity-form button').click()
    total = _until(
        'the capacity answer',
        lambda: browser.find_elements(By.CSS_SELECTOR, '#capacity .cap-total'),
    )[0]
    expected = api.get('/os-scheduler/capacity?flavor=m1.small&hosts=false')[
        'capacity'
    ][0]['total']
    assert int(total.get_attribute('data-total')) == expected
    assert 'cell1' in browser.find_element(By.ID, 'capacity').text

    for option in browser.find_elements(By.CSS_SELECTOR, '#rc option'):
        if option.text == 'MEMORY_MB':
            option.click()
    hot = [c for c in browser.execute_script(HEAT_MAP) if c[3] >= 90000]
    assert len(hot) == 4 and all(c[4] == 131072 for c in hot)
    shot = os.environ.get('NIMBUS_DASHBOARD_SCREENSHOT')
    browser.save_screenshot(shot or str(cloud.state_dir) + '/dashboard.png')


def test_a_member_token_is_sent_back_to_sign_in(cloud, browser):
    from selenium.webdriver.common.by import By

    browser.get(cloud.dashboard_url)
    form = _until(
        'the sign-in form',
        lambda: (
            browser.find_element(By.ID, 'login').is_displayed()
            and browser.find_element(By.ID, 'login')
        ),
    )
    browser.find_element(By.ID, 'token').send_keys('demo:demo')
    form.find_element(By.TAG_NAME, 'button').click()
    message = _until(
        'the refusal', lambda: browser.find_element(By.ID, 'login-error').text
    )
    assert '403' in message
    assert not browser.find_element(By.ID, 'board').is_displayed()
