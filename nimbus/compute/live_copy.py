"""The simulated copy of a live migration (the fake driver's): the guest's
memory, and its disk for a block migration, moved in steps, each step's
progress reported (the migration's ``memory_*``/``disk_*`` byte counts);
an abort stops it, a force complete ends it at once. Used by the source's
:meth:`nimbus.compute.live_migration.LiveMigrations.live_migration`.
"""

import math
import threading

MIB = 1024 * 1024
GIB = 1024 * MIB


class Aborted(Exception):
    """The live migration was aborted (DELETE /servers/{id}/migrations/{id})."""


class Job:
    """A live migration under way on its source: what the abort and the
    force complete tell the copy."""

    def __init__(self):
        self.wake = threading.Event()
        self.aborted = False
        self.forced = False

    def abort(self):
        self.aborted = True
        self.wake.set()

    def force(self):
        self.forced = True
        self.wake.set()


def resolve_block_migration(requested):
    """``auto`` (or None) is a block migration on the fake driver: it has
    no shared storage; True/False stay as asked."""
    if requested is None or requested == 'auto':
        return True
    return bool(requested)


class Copy:
    """The simulated transfer (``[fake_driver] live_migration_seconds``
    long, a progress update every ``live_migration_step_seconds``)."""

    def __init__(self, seconds, step_seconds):
        self.seconds = float(seconds)
        self.step_seconds = float(step_seconds)

    def totals(self, flavor, block_migration):
        memory = int((flavor or {}).get('memory_mb') or 0) * MIB
        disk = (
            int((flavor or {}).get('root_gb') or 0) * GIB
            if block_migration
            else 0
        )
        return memory, disk

    def steps(self):
        if self.seconds <= 0:
            return 1
        return max(1, math.ceil(self.seconds / self.step_seconds))

    def run(self, job, memory, disk, report):
        """Copy in steps, ``report(progress)`` after each (the migration's
        columns); raises Aborted when the job is aborted."""
        steps = self.steps()
        for index in range(1, steps + 1):
            if self.seconds > 0 and not job.forced:
                job.wake.wait(self.seconds / steps)
            if job.aborted:
                raise Aborted()
            # Read once: a force complete arriving during the report
            # must not end the copy on a partial step.
            forced = job.forced
            report(progress(memory, disk, 1.0 if forced else index / steps))
            if forced:
                return


def progress(memory, disk, done):
    """The migration's progress columns when ``done`` (0..1) is copied."""
    memory_done = int(memory * done)
    disk_done = int(disk * done)
    return {
        'memory_total': memory,
        'memory_processed': memory_done,
        'memory_remaining': memory - memory_done,
        'disk_total': disk,
        'disk_processed': disk_done,
        'disk_remaining': disk - disk_done,
    }
