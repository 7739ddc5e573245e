"""Argument types the ``nimbus`` CLI's subcommands share (argparse only:
``nimbus --help`` imports no server code)."""

import argparse


def positive_int(text):
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            'must be a whole number of at least 1, got %r' % text
        )
    return value
