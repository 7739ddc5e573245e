"""The host manager's hosts as numeric columns, one row (slot) per HostState.

A decision over thousands of hosts spends its time in Python passes over them; the facts
the numeric filters and weighers read are kept here as numpy arrays instead, so that a
decision gathers its candidates' rows with one index array and compares, normalises and
sums them as array operations.

The rows never lag behind the HostStates: a HostState attached to a table (``attach``)
writes every tracked attribute through as it is assigned (see ``TableRow``),
and recounts its free PCI devices whenever it recomputes its derived figures, which
every change of its PCI pools is followed by. Columns:

* ``free_ram_mb``, ``free_vcpus``, ``free_disk_mb``, ``num_io_ops``, ``num_instances``,
  ``hypervisor_version``, ``failed_builds``, ``pci_free`` (float64, as the weighers'
  raw values are);
* ``ok``: compute service up and not disabled (bool);
* ``az`` and ``cell``: codes of the availability zone and cell uuid strings (int32;
  ``values['az'][code]`` is the string).

``memo`` keeps filters' remembered verdicts on static facts (see
``filters.capabilities.remembered``) per request key as int8 columns (-1: not judged
yet); a host's are forgotten whenever its ``static_memo`` is (its compute node record
changed) and when its row is given to another host.

:class:`TableRow`, the base of HostState, declares the tracked attributes.

``agg_keys`` counts, per aggregate metadata key, the attached hosts that have it: a key
no host has cannot override anything, so the per-host aggregate look-ups are skipped.
"""

from __future__ import annotations

import collections
import copy
import operator

import numpy as np

NUMERIC = (
    'free_ram_mb',
    'free_vcpus',
    'free_disk_mb',
    'num_io_ops',
    'num_instances',
    'hypervisor_version',
    'failed_builds',
    'pci_free',
)
CODED = ('az', 'cell')

_SLOT = operator.attrgetter('_slot')


class HostTable:
    """Numeric columns of the attached HostStates, indexed by their ``_slot``."""

    def __init__(self, capacity: int = 256):
        self.capacity = capacity
        self.cols = {c: np.zeros(capacity, dtype=np.float64) for c in NUMERIC}
        self.ok = np.zeros(capacity, dtype=bool)
        self.codes = {c: np.zeros(capacity, dtype=np.int32) for c in CODED}
        self.values = {c: [] for c in CODED}
        self._code_of = {c: {} for c in CODED}
        self.agg_keys: collections.Counter = collections.Counter()
        self.states: list = []  # slot -> HostState (None: free)
        self.objs = np.empty(capacity, dtype=object)  # the same, as an array
        self._free: list[int] = []
        self.memo: dict = {}  # request key -> int8 verdicts (-1: unknown)
        # HostStates whose applied placement summary was set or forgotten
        # since the host manager last took this set: the others are as the
        # last compact answer left them (host_manager.AnswerMemo).
        self.touched: set = set()

    def __len__(self):
        return len(self.states) - len(self._free)

    # ------------------------------------------------------------ membership
    def attach(self, hs) -> None:
        """Give ``hs`` a row and write all its tracked facts into it."""
        if hs._table is self:
            return
        if hs._table is not None:
            hs._table.detach(hs)
        if self._free:
            slot = self._free.pop()
            self.states[slot] = hs
        else:
            slot = len(self.states)
            if slot >= self.capacity:
                self._grow(2 * self.capacity)
            self.states.append(hs)
        self.objs[slot] = hs
        hs._slot = slot
        hs._table = self
        self.forget_static(slot)
        self.agg_keys.update(hs.aggregate_metadata.keys())
        write_row(self, hs)

    def detach(self, hs) -> None:
        if hs._table is not self:
            return
        self.agg_keys.subtract(hs.aggregate_metadata.keys())
        self.agg_keys += collections.Counter()  # drop keys counted to zero
        self.states[hs._slot] = None
        self.objs[hs._slot] = None
        self._free.append(hs._slot)
        self.ok[hs._slot] = False
        hs._table = None
        hs._slot = -1

    def _grow(self, capacity: int) -> None:
        def grown(a):
            out = np.zeros(capacity, dtype=a.dtype)
            out[: len(a)] = a
            return out

        self.cols = {c: grown(a) for c, a in self.cols.items()}
        self.ok = grown(self.ok)
        self.objs = grown(self.objs)
        for key, a in self.memo.items():
            out = np.full(capacity, -1, dtype=np.int8)
            out[: len(a)] = a
            self.memo[key] = out
        self.codes = {c: grown(a) for c, a in self.codes.items()}
        self.capacity = capacity

    # ------------------------------------------------------------ writes
    def put(self, column: str, slot: int, value) -> None:
        self.cols[column][slot] = value

    def put_ok(self, slot: int, ok: bool) -> None:
        self.ok[slot] = ok

    def put_code(self, kind: str, slot: int, value) -> None:
        codes = self._code_of[kind]
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(self.values[kind])
            self.values[kind].append(value)
        self.codes[kind][slot] = code

    def forget_static(self, slot: int) -> None:
        for verdicts in self.memo.values():
            verdicts[slot] = -1

    def memo_column(self, key, limit: int) -> np.ndarray:
        """The remembered verdicts for ``key`` (created unknown); past ``limit``
        keys all are forgotten first."""
        col = self.memo.get(key)
        if col is None:
            if len(self.memo) >= limit:
                self.memo.clear()
            col = self.memo[key] = np.full(self.capacity, -1, dtype=np.int8)
        return col

    def aggregate_keys_changed(self, old, new) -> None:
        self.agg_keys.subtract(old)
        self.agg_keys.update(new)
        self.agg_keys += collections.Counter()

    # ------------------------------------------------------------ reads
    def slots_of(self, hosts) -> np.ndarray | None:
        """The rows of ``hosts`` (a list of HostStates), or None when one of them
        is not attached to this table."""
        n = len(hosts)
        known = getattr(hosts, 'slots', None)
        if (
            known is not None
            and getattr(hosts, 'table', None) is self
            and len(known) == n
        ):
            return known
        slots = np.fromiter(map(_SLOT, hosts), dtype=np.intp, count=n)
        if n and (slots.min() < 0 or not self._all_mine(hosts, slots)):
            return None
        return slots

    def _all_mine(self, hosts, slots) -> bool:
        states = self.states
        top = len(states)
        if slots.max() >= top:
            return False
        return all(map(operator.is_, map(states.__getitem__, slots), hosts))

    def hosts_at(self, slots) -> list:
        """The HostStates of rows ``slots``, as a list."""
        return self.objs[slots].tolist()

    def rows(self, hosts) -> np.ndarray:
        """The rows of ``hosts``, all known to be attached here."""
        return np.fromiter(map(_SLOT, hosts), dtype=np.intp, count=len(hosts))

    def column(self, name: str, slots) -> np.ndarray:
        return self.cols[name][slots]

    def code_mask(self, kind: str, slots, verdict) -> np.ndarray:
        """True where ``verdict(value)`` holds for the row's ``kind`` string (judged
        once per distinct value, not per host)."""
        table = np.fromiter(
            map(verdict, self.values[kind]),
            dtype=bool,
            count=len(self.values[kind]),
        )
        if not len(table):
            return np.zeros(len(slots), dtype=bool)
        return table[self.codes[kind][slots]]


def table_of(hosts):
    """The table every one of ``hosts`` is attached to, with their rows, as
    ``(table, slots)``; ``(None, None)`` when there is no single one."""
    table = getattr(hosts, 'table', None)
    if table is None:
        if not hosts:
            return None, None
        table = hosts[0]._table
        if table is None:
            return None, None
    slots = table.slots_of(hosts)
    if slots is None:
        return None, None
    return table, slots


class Candidates(list):
    """HostStates in placement's candidate order, with their table rows (``slots``)
    when the host manager built them from its table; ``uuids`` are the hosts' compute
    node uuids, in the same order. ``requests``: the allocation requests by root
    uuid the hosts were looked up from (each host's uuid is one of its keys), or
    None."""

    __slots__ = ('table', 'slots', 'uuids', 'requests', '_sizes')

    def __init__(
        self, hosts=(), table=None, slots=None, uuids=None, requests=None
    ):
        super().__init__(hosts)
        self.table = table
        self.slots = slots
        self.uuids = uuids
        self.requests = requests
        # the hosts and the requests' keys as they were: a change since
        # (a host appended, a request dropped) voids drawn_from
        self._sizes = (len(self), None if requests is None else len(requests))

    def drawn_from(self, alloc_reqs) -> bool:
        """True when every host was looked up by a key of ``alloc_reqs`` (the
        very dict, with as many keys as then): each has an allocation request
        there."""
        return (
            alloc_reqs is not None
            and self.requests is alloc_reqs
            and (len(self), len(alloc_reqs)) == self._sizes
        )


def write_row(table: HostTable, hs) -> None:
    """Write every tracked fact of ``hs`` into its row."""
    slot = hs._slot
    for c in NUMERIC[:-1]:
        table.cols[c][slot] = getattr(hs, c)
    table.cols['pci_free'][slot] = hs.pci_device_count()
    table.ok[slot] = bool(hs.service_up and not hs.service_disabled)
    table.put_code('az', slot, hs.availability_zone)
    table.put_code('cell', slot, hs.cell_uuid)


def detached_copy(hs, dup):
    """A copy of ``hs`` (each slot's value through ``dup``) outside any
    table: a copy writing into the original's row would make the row lie."""
    cls = type(hs)
    new = cls.__new__(cls)
    new._table, new._slot = None, -1
    for name in cls.__slots__:
        if name not in ('_table', '_slot') and hasattr(hs, name):
            setattr(new, name, dup(getattr(hs, name)))
    return new


def _numeric(column):
    def on_set(table, hs, value):
        table.cols[column][hs._slot] = value

    return on_set


def _service(table, hs, value):
    table.ok[hs._slot] = bool(hs._service_up and not hs._service_disabled)


def _coded(kind):
    def on_set(table, hs, value):
        table.put_code(kind, hs._slot, value)

    return on_set


def _pci(table, hs, value):
    table.cols['pci_free'][hs._slot] = hs.pci_device_count()


def _aggregates(table, hs, old, new):
    table.aggregate_keys_changed(old.keys(), new.keys())


ON_SET = {
    **{c: _numeric(c) for c in NUMERIC[:-1]},
    'service_up': _service,
    'service_disabled': _service,
    'availability_zone': _coded('az'),
    'cell_uuid': _coded('cell'),
    'pci_pools': _pci,
    'static_memo': lambda table, hs, value: table.forget_static(hs._slot),
}


def tracked(name: str):
    """A HostState attribute kept in the slot ``_<name>`` whose every assignment is
    written through to the host's table row (reads cost one C-level attrgetter)."""
    private = '_' + name
    get = operator.attrgetter(private)
    if name == 'aggregate_metadata':

        def set_(self, value):
            table = self._table
            if table is not None:
                _aggregates(table, self, getattr(self, private), value)
            setattr(self, private, value)

    else:
        on_set = ON_SET[name]

        def set_(self, value):
            setattr(self, private, value)
            table = self._table
            if table is not None:
                on_set(table, self, value)

    return property(get, set_, doc=f'{name} (tracked in the host table)')


TRACKED = (*ON_SET, 'aggregate_metadata')


class TableRow:
    """What makes a HostState a row of a HostTable: its ``_table`` and ``_slot``
    (set by :meth:`HostTable.attach`), the attributes written through to the row as
    they are assigned, the facts whose verdicts the table may remember, the recount
    of its free PCI devices, and copies that belong to no table."""

    __slots__ = ('_table', '_slot')

    # Written through to the host manager's HostTable row when attached.
    free_ram_mb = tracked('free_ram_mb')
    free_vcpus = tracked('free_vcpus')
    free_disk_mb = tracked('free_disk_mb')
    num_io_ops = tracked('num_io_ops')
    num_instances = tracked('num_instances')
    hypervisor_version = tracked('hypervisor_version')
    failed_builds = tracked('failed_builds')
    service_up = tracked('service_up')
    service_disabled = tracked('service_disabled')
    availability_zone = tracked('availability_zone')
    cell_uuid = tracked('cell_uuid')
    pci_pools = tracked('pci_pools')
    aggregate_metadata = tracked('aggregate_metadata')
    static_memo = tracked('static_memo')

    # What the compute reports about the host itself: these change only
    # through update_from_compute_node, which forgets ``static_memo`` (a
    # filter's verdicts that read nothing else, keyed by the request part
    # they judged; see filters.capabilities).
    STATIC_FACTS = frozenset(
        (
            'host',
            'nodename',
            'uuid',
            'cell_uuid',
            'hypervisor_type',
            'hypervisor_version',
            'hypervisor_hostname',
            'cpu_info',
            'host_ip',
            'supported_instances',
            'stats',
        )
    )

    def _recount_pci(self) -> None:
        if self._table is not None:
            _pci(self._table, self, None)

    def __copy__(self):
        return detached_copy(self, lambda v: v)

    def __deepcopy__(self, memo):
        return detached_copy(self, lambda v: copy.deepcopy(v, memo))
