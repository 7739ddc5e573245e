"""What the private servers share: a ``with`` block that starts the server
and always stops it, even when the start itself fails half way (a data
directory made, a process up that never answered)."""


class Managed:
    """A base for a fixture with ``start()`` (answering the started
    object) and ``stop()`` (safe to call on a half-started one)."""

    def start(self):
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
