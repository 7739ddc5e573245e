"""Test-wide settings: quiet third-party deprecation noise, and the seeded
sample of the big input matrices that ``make check`` runs.

A test marked ``matrix`` is a big product of inputs (every route times
every malformed body, every route times every persona...). With
``--matrix-sample=F`` each such test function keeps a random fraction F of
its parametrized rows (at least one) and the rest are deselected; without
the option (``make test-matrix``, hence ``make test``) every row runs. The
sample is drawn from a seed printed in the report header: a fresh one each
run, so successive runs cover different rows, or ``NIMBUS_TEST_SEED`` to
repeat a run exactly.
"""

import os
import random
import re
import shutil
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck
from hypothesis import settings

warnings.filterwarnings('ignore', message='.*[Ee]ventlet.*')

# Hypothesis's default 200 ms deadline per example is a timing assertion:
# on a loaded 2-core machine a slow example fails a test whose behaviour
# is right. The property tests check what is computed, never how fast.
settings.register_profile(
    'nimbus', deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile('nimbus')

SEED_ENV = 'NIMBUS_TEST_SEED'


def pytest_addoption(parser):
    parser.addoption(
        '--matrix-sample',
        type=float,
        default=None,
        metavar='F',
        help='run a seeded random fraction F (0 < F <= 1) of the rows of '
        'each test marked matrix; the seed is printed, %s repeats it'
        % SEED_ENV,
    )


def _seed(config):
    workerinput = getattr(config, 'workerinput', None)
    if workerinput is not None and 'nimbus_test_seed' in workerinput:
        # an xdist worker samples with its controller's seed, so every
        # worker collects the same tests
        return workerinput['nimbus_test_seed']
    value = os.environ.get(SEED_ENV)
    if value:
        return int(value)
    return random.SystemRandom().randrange(1, 10**6)


def pytest_configure(config):
    fraction = config.getoption('--matrix-sample')
    if fraction is not None and not 0 < fraction <= 1:
        raise pytest.UsageError('--matrix-sample takes a fraction in (0, 1]')
    config.nimbus_test_seed = _seed(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput['nimbus_test_seed'] = node.config.nimbus_test_seed


def pytest_report_header(config):
    fraction = config.getoption('--matrix-sample')
    if fraction is None:
        return 'matrix: every row of the tests marked matrix'
    return (
        'matrix: a %g sample of each test marked matrix, seed %d (%s=%d repeats it)'
        % (
            fraction,
            config.nimbus_test_seed,
            SEED_ENV,
            config.nimbus_test_seed,
        )
    )


def pytest_collection_modifyitems(config, items):
    fraction = config.getoption('--matrix-sample')
    if fraction is None or fraction >= 1:
        return
    groups = {}
    for item in items:
        if item.get_closest_marker('matrix') is None:
            continue
        function = getattr(item, 'originalname', item.name)
        groups.setdefault((item.path, function), []).append(item)
    dropped = set()
    for (path, function), rows in groups.items():
        # one generator per test function, so a function's sample depends
        # only on the seed, not on which other tests were collected
        rng = random.Random(
            '%d:%s:%s' % (config.nimbus_test_seed, path.name, function)
        )
        keep = max(1, round(len(rows) * fraction))
        kept = set(map(id, rng.sample(rows, keep)))
        dropped.update(id(row) for row in rows if id(row) not in kept)
    if not dropped:
        return
    config.hook.pytest_deselected(items=[i for i in items if id(i) in dropped])
    items[:] = [i for i in items if id(i) not in dropped]


# A fresh SQLite database at alembic's head is a copy of one migrated
# once per test process (per migration tree): the same schema the
# migrations build, without running them again for each of the thousands
# of fixtures that start from an empty database. A database that exists
# already, a revision other than head, or a server URL goes through
# alembic as before, so the migration tests still upgrade for real.
# NIMBUS_TEST_MIGRATE_EACH=1 runs the migrations for every database.
_SQLITE_FILE = re.compile(r'^sqlite:///(?P<path>[^?]+)$')
_templates = {}


def _sync_from_template(real_sync):
    def sync(url, script_location, revision='head'):
        match = _SQLITE_FILE.match(str(url))
        path = match.group('path') if match else None
        if revision != 'head' or path is None or os.path.exists(path):
            return real_sync(url, script_location, revision)
        template = _templates.get(script_location)
        if template is None:
            template = os.path.join(
                tempfile.mkdtemp(prefix='nimbus-schema-'), 'head.db'
            )
            real_sync('sqlite:///' + template, script_location, revision)
            if any(
                os.path.exists(template + suffix)
                for suffix in ('-wal', '-journal')
            ):
                # not one self-contained file: no template for this tree
                _templates[script_location] = False
                return real_sync(url, script_location, revision)
            _templates[script_location] = template
        elif template is False:
            return real_sync(url, script_location, revision)
        shutil.copyfile(template, path)
        return None

    return sync


def pytest_sessionstart(session):
    if os.environ.get('NIMBUS_TEST_MIGRATE_EACH'):
        return
    from nimbus.common import db as common_db

    common_db.sync = _sync_from_template(common_db.sync)


def pytest_sessionfinish(session):
    for template in _templates.values():
        if template:
            shutil.rmtree(os.path.dirname(template), ignore_errors=True)
