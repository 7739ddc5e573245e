"""`nimbus all-in-one` gives a cloud to try: the standard flavors and a demo
image exist from the start, once however often it is started on the same
state, so the README's first commands (a dry run of m1.small) work."""

import json
import os
import subprocess
import sys

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone import demo


@pytest.mark.slow
def test_seed_creates_flavors_and_image_once_and_a_dry_run_works(make_cloud):
    cloud = make_cloud(hosts=2)
    first_flavors, first_image = demo.seed(cloud.api_url)
    again_flavors, again_image = demo.seed(cloud.api_url)  # a restart
    api = client_mod.ComputeClient(cloud.api_url)
    names = sorted(f['name'] for f in api.get('/flavors')['flavors'])
    assert names == sorted(name for name, *_ in demo.FLAVORS)
    assert [f['id'] for f in again_flavors] == [f['id'] for f in first_flavors]
    assert again_image['id'] == first_image['id']
    assert [i['name'] for i in api.images()] == [demo.IMAGE[0]]

    exe = os.path.join(os.path.dirname(sys.executable), 'nimbus')
    proc = subprocess.run(
        [
            exe,
            'schedule',
            '--dry-run',
            '--flavor',
            'm1.small',
            '--format',
            'json',
            '--url',
            cloud.api_url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cloud.state_dir,
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert {h['host'] for h in answer['ranked']} == {'host-1', 'host-2'}
