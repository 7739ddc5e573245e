"""The server actions a compute host has taken from its queue and not
finished, on disk (as :mod:`nimbus.compute.journal` keeps the builds).

oslo.messaging acknowledges a cast when the RPC server takes it: an
action taken when the process died is gone from the broker, while the
actions still queued for the host arrive after the restart. The server is
left with its task (``powering-off``...) either way, so the host keeps
its own record: an action is written when it starts and removed when it
ends, whatever the outcome. At the next start,
:meth:`nimbus.compute.guest_actions.GuestActions.recover` finishes those
still in the journal. A password (``changePassword``) is never written:
that action cannot be finished after a restart and ends in error.
"""

import threading

from nimbus.compute import journal_file

# Options that are secrets: never on disk.
SECRET_OPTIONS = ('admin_password',)


class ActionJournal:
    """``{instance uuid: {'name', 'request_id', 'options'}}`` of one
    host."""

    def __init__(self, state_path, host):
        self._file = journal_file.JournalFile(
            state_path, 'compute-actions', host, 'action journal'
        )
        self.path = self._file.path
        self._lock = threading.Lock()
        self._entries = self._file.load()

    def _save(self):
        self._file.save(self._entries)

    def taken(self, uuid, name, request_id, options):
        with self._lock:
            self._entries[uuid] = {
                'name': name,
                'request_id': request_id,
                'options': {
                    key: value
                    for key, value in (options or {}).items()
                    if key not in SECRET_OPTIONS
                },
            }
            self._save()

    def settled(self, uuid):
        with self._lock:
            if self._entries.pop(uuid, None) is not None:
                self._save()

    def entries(self):
        with self._lock:
            return dict(self._entries)
