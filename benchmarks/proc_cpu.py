"""CPU time of a process tree, read from /proc (Linux), for the benches.

``tree_cpu_seconds(pid)`` is the user + system time of ``pid`` (all its
threads), of its live descendants, and of the children it has already
waited for (``cutime``/``cstime``). ``database_pids(url)`` finds a local
MariaDB/MySQL or PostgreSQL server (by its process name) whose CPU the
bench may read too; on another host or without /proc it is empty and the
figures are None.
"""

import os

TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100
DB_NAMES = {'mysql': ('mariadbd', 'mysqld'), 'postgresql': ('postgres',)}


def _stat(pid):
    """(comm, ppid, utime + stime + cutime + cstime in ticks) or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            data = f.read()
    except OSError:
        return None
    # comm is in parentheses and may itself hold spaces or parentheses.
    comm = data[data.index('(') + 1 : data.rindex(')')]
    fields = data[data.rindex(')') + 2 :].split()
    # fields[0] is field 3 (state): ppid is field 4, utime..cstime 14-17.
    return comm, int(fields[1]), sum(int(x) for x in fields[11:15])


def _all():
    out = {}
    try:
        names = os.listdir('/proc')
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out


def tree_cpu_seconds(pid):
    """CPU seconds of ``pid`` and its descendants; None without /proc."""
    procs = _all()
    if pid not in procs:
        return None
    children = {}
    for p, (_, ppid, _) in procs.items():
        children.setdefault(ppid, []).append(p)
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += procs[p][2]
        todo.extend(children.get(p, ()))
    return total / TICKS


def database_pids(url):
    """Pids of the local database servers ``url``'s engine runs on (the
    top of each server's process tree), or [] (SQLite, another host)."""
    if not url or url.startswith('sqlite'):
        return []
    engine = url.split(':', 1)[0].split('+', 1)[0]
    names = DB_NAMES.get(engine)
    host = url.split('@', 1)[-1].split('/', 1)[0].split(':', 1)[0]
    if not names or host not in ('127.0.0.1', 'localhost', '::1', ''):
        return []
    procs = _all()
    return [
        p
        for p, (comm, ppid, _) in procs.items()
        if comm in names and procs.get(ppid, ('',))[0] not in names
    ]


def cpu_meter(pids):
    """A function returning the CPU seconds of ``pids``' trees so far, or
    None when ``pids`` is empty or one cannot be read."""
    pids = list(pids)
    if not pids:
        return lambda: None

    def seconds():
        values = [tree_cpu_seconds(p) for p in pids]
        return None if None in values else sum(values)

    return seconds
