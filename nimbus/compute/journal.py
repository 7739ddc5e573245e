"""The builds a compute host has taken from its queue and not settled.

oslo.messaging acknowledges a cast when the RPC server takes it, before
the build runs: a build message that was taken when the process died is
gone from the broker, while the builds still queued for the host (durable
queues) arrive after the restart. The database cannot tell the two apart
(both are instances in BUILD on this host), so the host keeps its own
record, a small JSON file under ``[DEFAULT] state_path`` beside the
guests: a build is written when its message is taken and removed when it
is settled (ACTIVE, failed, handed back). At the next start
(:meth:`nimbus.compute.build.BuildRunner.recover`), the builds in the
journal without a guest were interrupted and are handed back; those not
in it are still in the queue and are left to build.

The journal also tells a build message delivered twice (a broker
redelivering, a sender retrying) from a new one: a build this process has
taken and not yet settled is not taken again (:meth:`BuildJournal.taken`
answers False), so two copies never spawn the same guest at once (the
second one's ``BUILD -> ACTIVE`` would fail and destroy the first one's
guest). A copy that arrives after the build settled finds the instance no
longer building and does nothing.

Written with an atomic rename and no fsync: it survives a ``kill -9`` of
the process (the page cache stays), which is what it is for.
"""

import threading

from nimbus.compute import journal_file


class BuildJournal:
    """``{instance uuid: build message}`` of one host, on disk."""

    def __init__(self, state_path, host):
        self._file = journal_file.JournalFile(
            state_path, 'compute-builds', host, 'build journal'
        )
        self.path = self._file.path
        self._lock = threading.Lock()
        self._entries = self._file.load()
        # Taken by this process and not settled yet (entries loaded from
        # disk are a previous process's, for recover()).
        self._running = set()

    def _save(self):
        self._file.save(self._entries)

    def taken(self, uuid, request_spec, selection, host_list):
        """The build message of ``uuid`` was taken from the queue: True,
        or False when this process is building ``uuid`` already (the
        message is a duplicate; nothing is written)."""
        with self._lock:
            if uuid in self._running:
                return False
            self._running.add(uuid)
            self._entries[uuid] = {
                'request_spec': request_spec,
                'selection': selection,
                'host_list': host_list,
            }
            self._save()
            return True

    def settled(self, uuid):
        """The build of ``uuid`` is over, whatever its outcome."""
        with self._lock:
            self._running.discard(uuid)
            if self._entries.pop(uuid, None) is not None:
                self._save()

    def get(self, uuid):
        with self._lock:
            return self._entries.get(uuid)

    def uuids(self):
        with self._lock:
            return set(self._entries)
