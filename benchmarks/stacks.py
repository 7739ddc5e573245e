"""Sample running daemons with py-spy and summarise where their CPU goes.

Used by ``boot_bench.py --profile DIR``: :func:`record` starts one
``py-spy record --format raw`` per daemon (non-blocking sampling, idle
threads left out, so the samples are CPU), :func:`finish` stops them
(SIGINT makes py-spy write its file) and writes ``summary-<tag>.txt``:
per daemon, the functions with the most samples on top of the stack
(self) and anywhere in it (inclusive). Without py-spy installed it
records nothing and says so once.

    .venv/bin/python benchmarks/stacks.py FILE...   # summarise raw files
"""

import collections
import os
import re
import shutil
import signal
import subprocess
import sys

_LINE = re.compile(r':\d+\)$')


def _py_spy():
    found = shutil.which('py-spy') or os.path.join(
        os.path.dirname(sys.executable), 'py-spy'
    )
    return found if os.path.exists(found) else None


def record(processes, directory, tag, rate=50):
    """Start sampling every ``{name: pid}``; ``[]`` without ``directory``
    or py-spy."""
    if not directory:
        return []
    binary = _py_spy()
    if binary is None:
        print('profile: py-spy is not installed; not sampling', flush=True)
        return []
    os.makedirs(directory, exist_ok=True)
    recorders = []
    for name, pid in processes.items():
        path = os.path.join(directory, '%s-%s.txt' % (name, tag))
        process = subprocess.Popen(
            [
                binary,
                'record',
                '--pid',
                str(pid),
                '--rate',
                str(rate),
                '--nonblocking',
                '--format',
                'raw',
                '--output',
                path,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        recorders.append((name, process, path))
    return recorders


def finish(recorders, top=12):
    """Stop the samplers, wait for their files, write the summary."""
    if not recorders:
        return None
    for _name, process, _path in recorders:
        process.send_signal(signal.SIGINT)
    for _name, process, _path in recorders:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    directory = os.path.dirname(recorders[0][2])
    tag = os.path.basename(recorders[0][2]).rsplit('-', 1)[1][: -len('.txt')]
    summary = os.path.join(directory, 'summary-%s.txt' % tag)
    with open(summary, 'w') as out:
        for name, _process, path in recorders:
            out.write(summarise(name, path, top))
    return summary


def _frame(frame):
    return _LINE.sub(')', frame.strip())


def parse(path):
    """``[(frames, samples)]`` of a py-spy raw (collapsed stacks) file."""
    stacks = []
    if not os.path.exists(path):
        return stacks
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            head, _, count = line.rpartition(' ')
            if not head or not count.isdigit():
                continue
            frames = [_frame(x) for x in head.split(';')]
            # The first frames name the process and the thread.
            frames = [x for x in frames if '(' in x]
            stacks.append((frames, int(count)))
    return stacks


def summarise(name, path, top=12):
    stacks = parse(path)
    total = sum(count for _frames, count in stacks)
    own = collections.Counter()
    inclusive = collections.Counter()
    for frames, count in stacks:
        if frames:
            own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = ['== %s: %d samples (%s)' % (name, total, path)]
    if total:
        lines.append('  self:')
        for frame, count in own.most_common(top):
            lines.append('    %5.1f%%  %s' % (100.0 * count / total, frame))
        lines.append('  inclusive:')
        for frame, count in inclusive.most_common(top * 3):
            lines.append('    %5.1f%%  %s' % (100.0 * count / total, frame))
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    for argument in sys.argv[1:]:
        sys.stdout.write(summarise(os.path.basename(argument), argument))
