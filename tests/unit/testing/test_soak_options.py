"""``soak_run --option SECTION.NAME=VALUE``: parsed into config sections,
a malformed one refused with a message naming it."""

import pytest

from harness import soak_run


def test_options_become_config_sections():
    assert soak_run.parse_options(
        [
            'DEFAULT.executor_thread_pool_size=8',
            'conductor.recovery_interval = 0',
            'oslo_messaging_rabbit.heartbeat_rate=3',
        ]
    ) == {
        'DEFAULT': {'executor_thread_pool_size': '8'},
        'conductor': {'recovery_interval': '0'},
        'oslo_messaging_rabbit': {'heartbeat_rate': '3'},
    }


def test_the_environment_form_is_comma_separated():
    assert soak_run.parse_options('DEFAULT.a=1,api.b=x,') == {
        'DEFAULT': {'a': '1'},
        'api': {'b': 'x'},
    }
    assert soak_run.parse_options('') == {}


@pytest.mark.parametrize('bad', ['novalue', 'nosection=1', '.name=1', 's.=1'])
def test_a_malformed_option_is_named(bad):
    with pytest.raises(ValueError, match='SECTION.NAME=VALUE'):
        soak_run.parse_options([bad])


def test_the_command_line_refuses_a_malformed_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        soak_run.main(['--option', 'oops'])
    assert exit_.value.code == 2
    assert "option 'oops'" in capsys.readouterr().err
