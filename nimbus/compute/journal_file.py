"""One host's journal on disk: a JSON object in
``<state_path>/<folder>/<host>.json``, shared by the build journal
(:mod:`nimbus.compute.journal`) and the action journal
(:mod:`nimbus.compute.action_journal`).

Written with an atomic rename and no fsync: it survives a ``kill -9`` of
the process (the page cache stays), which is what a journal is for. A
torn or unreadable file reads as empty, with a warning: what it held is
caught by the conductors' checks on work that makes no progress.
"""

import os

from oslo_log import log as logging
import orjson

LOG = logging.getLogger(__name__)


class JournalFile:
    def __init__(self, state_path, folder, host, what):
        self.path = os.path.join(state_path, folder, '%s.json' % host)
        self.what = what

    def load(self):
        """The entries on disk (``{}`` when there is no journal yet, or
        it cannot be read)."""
        try:
            with open(self.path, 'rb') as f:
                entries = orjson.loads(f.read())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            LOG.warning(
                'Ignoring the unreadable %s %s: %s', self.what, self.path, exc
            )
            return {}
        return entries if isinstance(entries, dict) else {}

    def save(self, entries):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + '.tmp'
        # orjson: json.dump encodes in pure Python, and a build journal
        # is written twice a build (taken, settled).
        with open(tmp, 'wb') as f:
            f.write(orjson.dumps(entries, option=orjson.OPT_NON_STR_KEYS))
        os.replace(tmp, self.path)
