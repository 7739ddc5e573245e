"""CPU set syntax of ``hw:cpu_realtime_mask``, ``hw:numa_cpus.N`` and
friends: ``'0-3,^2,6'`` is ``{0, 1, 3, 6}``. Read by the API (validation)
and the scheduler (NUMA fitting)."""


class InvalidCPUSpec(ValueError):
    pass


def parse_cpu_spec(spec):
    """The set of CPU ids ``spec`` names; :class:`InvalidCPUSpec` (a
    ``ValueError``) for a range that runs backwards or a part that is not a
    number."""
    include, exclude = set(), set()
    for part in str(spec).split(','):
        part = part.strip()
        if not part:
            continue
        target = include
        if part.startswith('^'):
            target, part = exclude, part[1:]
        try:
            if '-' in part:
                low, high = (int(p) for p in part.split('-', 1))
                if low > high:
                    raise InvalidCPUSpec('bad CPU range %r' % part)
                target.update(range(low, high + 1))
            else:
                target.add(int(part))
        except InvalidCPUSpec:
            raise
        except ValueError as exc:
            raise InvalidCPUSpec(
                '%r is not a CPU number or range' % part
            ) from exc
    return include - exclude
