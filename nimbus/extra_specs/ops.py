"""The extra-spec value language shared by ComputeCapabilitiesFilter,
AggregateInstanceExtraSpecsFilter and ImagePropertiesFilter.

A requirement string may start with an operator; without one it means ``s==`` of the
whole string::

    "= 4"            host value >= 4 (numeric; '=' means "at least", like vcpus)
    "== 4", "!= 4", ">= 4", "<= 4"            numeric comparisons
    "s== 2.1.0", "s!= x", "s>= b", "s> b", "s<= b", "s< b"   string comparisons
    "<in> gcc"       the word is a substring of (or an element of) the host value
    "<all-in> aes mmx"   every word is in the host value (a list, or a string)
    "<or> fpu <or> gpu"  the host value equals one of the alternatives
"""

from __future__ import annotations

import operator


def _num(fn):
    def op(host_value, args):
        try:
            return fn(float(host_value), float(args[0]))
        except (TypeError, ValueError, IndexError):
            return False

    return op


def _str(fn):
    def op(host_value, args):
        if not args:
            return False
        return fn(str(host_value), args[0])

    return op


def _in(host_value, args):
    if not args:
        return False
    if isinstance(host_value, (list, tuple, set, frozenset, dict)):
        return args[0] in host_value
    return args[0] in str(host_value)


def _all_in(host_value, args):
    if not args:
        return False
    if isinstance(host_value, (list, tuple, set, frozenset, dict)):
        return all(a in host_value for a in args)
    text = str(host_value)
    return all(a in text for a in args)


def _or(host_value, args):
    # args come as 'a', '<or>', 'b', '<or>', 'c' once the leading '<or>' is stripped
    options = [a for a in args if a != '<or>']
    return str(host_value) in options


OPERATORS = {
    '=': _num(operator.ge),
    '==': _num(operator.eq),
    '!=': _num(operator.ne),
    '>=': _num(operator.ge),
    '<=': _num(operator.le),
    's==': _str(operator.eq),
    's!=': _str(operator.ne),
    's>=': _str(operator.ge),
    's>': _str(operator.gt),
    's<=': _str(operator.le),
    's<': _str(operator.lt),
    '<in>': _in,
    '<all-in>': _all_in,
    '<or>': _or,
}


class Requirement:
    """A parsed requirement; ``matches(host_value)`` evaluates it."""

    __slots__ = ('text', 'op', 'args', '_fn')

    def __init__(self, text):
        self.text = str(text)
        words = self.text.split()
        if words and words[0] in OPERATORS:
            self.op, self.args = words[0], words[1:]
            self._fn = OPERATORS[self.op]
        else:
            self.op, self.args, self._fn = None, [], None

    def matches(self, host_value) -> bool:
        if host_value is None:
            return False
        if self._fn is None:
            return str(host_value) == self.text
        return self._fn(host_value, self.args)

    def __repr__(self):
        return f'Requirement({self.text!r})'


def match(host_value, requirement: str) -> bool:
    """One-shot helper: does ``host_value`` satisfy ``requirement``?"""
    return Requirement(requirement).matches(host_value)


def is_valid(requirement: str) -> bool:
    """Syntax check used by the API's extra-spec validators."""
    words = str(requirement).split()
    if not words or words[0] not in OPERATORS:
        return True
    op, args = words[0], words[1:]
    if not args:
        return False
    if op in ('=', '==', '!=', '>=', '<='):
        try:
            float(args[0])
        except ValueError:
            return False
        return len(args) == 1
    if op == '<or>':
        return all((a == '<or>') == (i % 2 == 1) for i, a in enumerate(args))
    return True
