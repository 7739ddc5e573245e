"""The deployment snippets shipped beside the example configs cannot rot:
etc/nimbus/examples/rabbitmq-cluster (the clustered transport_url and the
quorum-queue options) sets only options oslo.messaging registers, and its
URL lists three nodes; etc/nimbus/examples/wsgi (gunicorn, uWSGI) compiles,
parses and names the entry points that exist."""

import configparser
import importlib
import pathlib
import py_compile

from oslo_messaging import opts as messaging_opts
import pytest

from nimbus.common import rpc

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / 'etc' / 'nimbus'
EXAMPLES = EXAMPLES / 'examples'
CLUSTER = EXAMPLES / 'rabbitmq-cluster' / 'rabbitmq-cluster.conf'
WSGI = EXAMPLES / 'wsgi'


def _read(path):
    # DEFAULT as a section of its own, not merged into the others.
    parser = configparser.ConfigParser(
        interpolation=None, default_section='__none__'
    )
    parser.read(path)
    return parser


def test_the_cluster_snippet_sets_only_oslo_messaging_options():
    known = {}
    for group, opts in messaging_opts.list_opts():
        known.setdefault(group or 'DEFAULT', set()).update(
            o.dest for o in opts
        )
    parser = _read(CLUSTER)
    assert set(parser['DEFAULT']) == {'transport_url'}
    assert parser.sections() == ['DEFAULT', 'oslo_messaging_rabbit']
    for name in parser['oslo_messaging_rabbit']:
        assert name in known['oslo_messaging_rabbit'], name


def test_the_cluster_url_lists_three_nodes_and_one_vhost():
    url = _read(CLUSTER)['DEFAULT']['transport_url']
    driver, hosts, vhost = rpc.bus_of(url)
    assert driver == 'rabbit' and vhost == 'nimbus'
    assert {host for host, _port in hosts} == {
        'rabbit-1',
        'rabbit-2',
        'rabbit-3',
    }


def test_the_cluster_options_are_the_quorum_set():
    options = _read(CLUSTER)['oslo_messaging_rabbit']
    for name in (
        'rabbit_quorum_queue',
        'rabbit_transient_quorum_queue',
        'rabbit_stream_fanout',
    ):
        assert options.getboolean(name), name
    # oslo.messaging refuses stream fanout without a prefetch count.
    assert options.getint('rabbit_qos_prefetch_count') > 0


def test_the_gunicorn_settings_compile_and_load_the_app_in_workers():
    path = WSGI / 'gunicorn.conf.py'
    py_compile.compile(str(path), doraise=True)
    settings = {}
    exec(compile(path.read_text(), str(path), 'exec'), settings)
    assert settings['workers'] >= 2
    assert settings['preload_app'] is False

    class Worker:
        class wsgi:
            loads = []

            @classmethod
            def load(cls):
                cls.loads.append(1)

    settings['post_worker_init'](Worker)
    assert Worker.wsgi.loads == [1]


@pytest.mark.parametrize('service', ['api', 'placement', 'accelerator'])
def test_each_uwsgi_ini_names_its_entry_point(service):
    parser = configparser.ConfigParser(
        interpolation=None, inline_comment_prefixes=None
    )
    parser.read(WSGI / ('uwsgi-%s.ini' % service))
    section = parser['uwsgi']
    module, _, attr = section['module'].partition(':')
    assert module == 'nimbus.wsgi.%s' % service and attr == 'application'
    assert hasattr(importlib.import_module(module), attr)
    # Each worker builds its own app after the fork.
    assert section['lazy-apps'] == 'true'
    assert section['enable-threads'] == 'true'
