"""nimbus-accelerator-agent refuses bad configurations with one line."""

import subprocess
import sys


def _run(tmp_path, text, *args):
    config = tmp_path / 'agent.conf'
    config.write_text(text)
    return subprocess.run(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.accelerator_agent',
            '--config-file',
            str(config),
        ]
        + list(args),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unknown_driver_is_named(tmp_path):
    result = _run(
        tmp_path,
        '[DEFAULT]\nhost = acc\n'
        'transport_url = rabbit://guest:guest@127.0.0.1:5672/\n'
        '[accelerator_agent]\nenabled_drivers = fake_gpu,fake_tpu\n',
        '--simulated-hosts',
        '2',
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        'nimbus-accelerator-agent: accelerator driver(s) '
        'fake_tpu not found in entry point group '
        'nimbus.accelerator.drivers ([accelerator_agent] '
        'enabled_drivers)'
    )


def test_the_in_process_bus_is_refused(tmp_path):
    result = _run(tmp_path, '[DEFAULT]\nhost = acc\n')
    assert result.returncode == 1
    assert 'nimbus-accelerator-agent: no transport_url is set' in result.stderr
