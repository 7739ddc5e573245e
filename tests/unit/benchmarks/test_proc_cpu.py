"""benchmarks/proc_cpu.py reads the CPU of a process tree from /proc."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(
    os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
)
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
import proc_cpu  # noqa: E402

pytestmark = pytest.mark.skipif(
    not os.path.exists('/proc/self/stat'), reason='needs /proc'
)


def test_a_busy_child_counts_in_its_parents_tree():
    child = subprocess.Popen(
        [
            sys.executable,
            '-c',
            'import sys, time\n'
            't = time.process_time()\n'
            'while time.process_time() - t < 0.3: pass\n'
            'print("done", flush=True)\n'
            'sys.stdin.read()\n',
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline() == 'done\n'
        mine = proc_cpu.tree_cpu_seconds(os.getpid())
        theirs = proc_cpu.tree_cpu_seconds(child.pid)
        assert theirs >= 0.25
        # The live child is a descendant of this process.
        assert mine >= theirs
        meter = proc_cpu.cpu_meter([child.pid])
        assert meter() >= 0.25
    finally:
        child.stdin.close()
        child.wait(10)


def test_what_cannot_be_read_is_none():
    assert proc_cpu.tree_cpu_seconds(2**31 - 1) is None
    assert proc_cpu.cpu_meter([])() is None
    assert proc_cpu.cpu_meter([2**31 - 1])() is None
    assert proc_cpu.database_pids('sqlite:///x.db') == []
    assert proc_cpu.database_pids('mysql+pymysql://u@db.example/x') == []
