"""The stock ``openstack`` CLI, one import for many commands.

Each ``openstack`` process spends one to three CPU seconds importing
openstackclient, its plugins and openstacksdk before it sends a request;
the operator sessions of the integration tests run some seventy commands,
several of them in polling loops, so the imports cost more CPU than the
cloud they test. :class:`Shell` keeps one Python process that has imported
the CLI and runs each command through ``openstackclient.shell.main(argv)``,
the function the ``openstack`` console script calls, with a new shell
object, the command's own environment and its own stdout and stderr. The
commands and their output are those of the console script; only the
interpreter is shared. The console script itself still runs in the
devstack, install-steps and cyborgclient tests.

Run as a script, this module is the serving side: a JSON line in
(``{"argv": [...], "env": {...}}``), a JSON line out
(``{"rc": N, "stdout": "...", "stderr": "..."}``).
"""

import contextlib
import io
import json
import logging
import os
import select
import subprocess
import sys
import time


class Result:
    """What ``subprocess.run(..., text=True)`` gives the tests."""

    def __init__(self, args, returncode, stdout, stderr):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class Shell:
    """A process with the CLI imported; :meth:`run` is one command."""

    def __init__(self):
        self.process = None

    def _start(self):
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONWARNINGS='ignore'),
        )

    def run(self, argv, env, timeout=300):
        if self.process is None or self.process.poll() is not None:
            self._start()
        request = json.dumps({'argv': list(argv), 'env': env})
        self.process.stdin.write(request + '\n')
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select(
                [self.process.stdout], [], [], max(left, 0)
            )
            if ready:
                break
            if left <= 0:
                self.close()
                raise subprocess.TimeoutExpired(
                    ['openstack'] + list(argv), timeout
                )
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            self.process = None
            raise RuntimeError(
                'the openstack shell process exited %s during %s'
                % (code, argv)
            )
        answer = json.loads(line)
        return Result(
            ['openstack'] + list(argv),
            answer['rc'],
            answer['stdout'],
            answer['stderr'],
        )

    def close(self):
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None


def _one(argv, env):
    from openstackclient import shell

    os.environ.clear()
    os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers = list(root.handlers)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = shell.main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            logging.getLogger(__name__).exception('openstack %s', argv)
            rc = 1
    # cliff configures the root logger on every run: leave it as found.
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    return {'rc': rc or 0, 'stdout': out.getvalue(), 'stderr': err.getvalue()}


def serve():
    answers = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    from openstackclient import shell  # noqa: F401  (the one import)

    for line in sys.stdin:
        request = json.loads(line)
        answers.write(json.dumps(_one(request['argv'], request['env'])) + '\n')
        answers.flush()


if __name__ == '__main__':
    serve()
