"""Why a request landed where it did, or why it did not land at all.

An :class:`Explanation` is filled while filtering (cheaply: per filter it keeps references
to the lists that went in and came out) and turned into text or a JSON-able dict only when
someone asks - a failed request or a dry run.
"""

from __future__ import annotations

from urllib.parse import urlencode

# Rejected hosts kept in an admin's record of a failed request.
FULL_LIMIT = 1000


class FilterStep:
    """One filter's hosts in and out: the lists (``before``, ``after``), or
    only their counts and the hosts it rejected (``out``), when that is what
    the selection has at hand (an array filter over the host table)."""

    __slots__ = ('filter', 'before', 'after', 'n_in', 'n_out', 'out')

    def __init__(self, filt, before, after, counts=None, out=None):
        self.filter = filt
        self.before = before
        self.after = after
        if counts is None:
            counts = (len(before), len(after))
        self.n_in, self.n_out = counts
        self.out = out

    @property
    def name(self):
        return self.filter.name

    def rejected(self):
        if self.out is not None:
            return list(self.out)
        if len(self.after) == len(self.before):
            return []
        kept = {id(h) for h in self.after}
        return [h for h in self.before if id(h) not in kept]


class WindowedStep(FilterStep):
    """One filter's steps over the windows of a sampled decision
    (``sampling.py``), as one: counts summed, rejected hosts in window
    order."""

    __slots__ = ('parts',)

    def __init__(self, parts):
        super().__init__(
            parts[0].filter,
            None,
            None,
            (sum(p.n_in for p in parts), sum(p.n_out for p in parts)),
        )
        self.parts = parts

    def rejected(self):
        return [h for p in self.parts for h in p.rejected()]


class Explanation:
    def __init__(self, spec, sample_size: int = 10):
        self.spec = spec
        self.sample_size = sample_size
        self.placement_candidates = 0
        self.placement_query: list | None = (
            None  # GET /allocation_candidates params
        )
        self.pre_steps: list[
            dict
        ] = []  # ignore/force hosts, missing candidates
        self.steps: list[FilterStep] = []
        self.later: list[dict] = []  # events after the first instance
        self.failed_instances: list[dict] = []  # instances failed on their own
        self.choices: list[list] = []  # per instance: [weight, *alternates']
        self.placed = 0
        self.requested = 0
        self.min_count = 0
        self.sample = None  # a sampling.Sample when sampling was on

    def restart(self) -> None:
        """Forget the filtering and choices of a decision that is made
        again (a sample that ran out of hosts); keep what placement said."""
        self.pre_steps, self.steps, self.later = [], [], []
        self.failed_instances, self.choices = [], []
        self.placed = 0

    # -------------------------------------------------------------- recording
    def record_pre(self, name, before, after, reason):
        if len(before) != len(after):
            kept = {id(h) for h in after}
            self.pre_steps.append(
                {
                    'name': name,
                    'in': len(before),
                    'out': len(after),
                    'reason': reason,
                    'hosts': [h.host for h in before if id(h) not in kept],
                }
            )

    def record_filter(self, filt, before, after):
        self.steps.append(FilterStep(filt, before, after))

    def record_rejected(self, filt, n_in, rejected):
        """A filter that took ``n_in`` hosts and rejected ``rejected`` (a
        list, in candidate order)."""
        self.steps.append(
            FilterStep(
                filt, None, None, (n_in, n_in - len(rejected)), rejected
            )
        )

    def record_later(self, host, what, reason):
        if len(self.later) < 100:
            self.later.append({'host': host, 'what': what, 'reason': reason})

    def record_choice(self, weights):
        """The weights of an instance's selected host and its alternates."""
        self.choices.append(weights)

    def record_instance_failure(self, instance_uuid, host, reason):
        """One instance failed on its own (e.g. a consumer generation conflict in
        placement); the other instances of the request go on."""
        self.failed_instances.append(
            {'instance_uuid': instance_uuid, 'host': host, 'reason': reason}
        )

    def instance_failure(self, instance_uuid) -> str | None:
        for f in self.failed_instances:
            if f['instance_uuid'] == instance_uuid:
                return f['reason']
        return None

    # -------------------------------------------------------------- output
    def query_string(self) -> str | None:
        if self.placement_query is None:
            return None
        return urlencode(self.placement_query, safe=':,!')

    def filter_counts(self) -> list[dict]:
        return [
            {'name': s.name, 'in': s.n_in, 'out': s.n_out} for s in self.steps
        ]

    def rejected(self, limit: int | None = None) -> list[dict]:
        out = []
        for pre in self.pre_steps:
            for host in pre['hosts']:
                out.append(
                    {
                        'host': host,
                        'filter': pre['name'],
                        'reason': pre['reason'],
                    }
                )
                if limit is not None and len(out) >= limit:
                    return out
        for step in self.steps:
            for h in step.rejected():
                try:
                    reason = step.filter.reject_reason(h, self.spec)
                # a plugin's reason must not break the answer
                except Exception as exc:  # noqa: BLE001
                    reason = f'(no reason: {exc})'
                out.append(
                    {
                        'host': h.host,
                        'nodename': h.nodename,
                        'filter': step.name,
                        'reason': reason,
                    }
                )
                if limit is not None and len(out) >= limit:
                    return out
        return out

    def to_dict(self, full: bool = False) -> dict:
        out = {
            'placement_candidates': self.placement_candidates,
            'pre_filters': [
                {k: v for k, v in p.items() if k != 'hosts'}
                for p in self.pre_steps
            ],
            'filters': self.filter_counts(),
            'placement_query': self.query_string(),
            'rejected': self.rejected(
                FULL_LIMIT if full else self.sample_size
            ),
            'later': list(self.later),
            'failed_instances': list(self.failed_instances),
            'placed': self.placed,
            'requested': self.requested,
            'min_count': self.min_count,
            'message': self.message(),
        }
        if self.sample is not None:
            out['sampled'] = self.sample.to_dict()
        return out

    def message(self) -> str:
        parts = []
        if self.requested > 1:
            parts.append(
                f'placed {self.placed} of {self.requested} instances '
                f'(min_count {self.min_count})'
            )
        if self.placement_candidates == 0 and self.placement_query is not None:
            parts.append(
                'placement returned 0 hosts for GET /allocation_candidates?'
                + self.query_string()
            )
        else:
            parts.append(
                f'placement returned {self.placement_candidates} hosts'
            )
        for pre in self.pre_steps:
            parts.append(f'{pre["name"]}: {pre["in"]} in, {pre["out"]} out')
        if self.sample is not None:
            parts.append(self.sample.text())
        for s in self.steps:
            parts.append(f'{s.name}: {s.n_in} in, {s.n_out} out')
        text = 'No valid host: ' + '; '.join(parts)
        sample = self.rejected(min(self.sample_size, 5))
        if sample:
            text += '. Rejected: ' + '; '.join(
                f'{r["host"]}: {r["filter"]}: {r["reason"]}' for r in sample
            )
        if self.failed_instances:
            text += '. Failed instances: ' + '; '.join(
                f'{f["instance_uuid"]}: {f["reason"]}'
                for f in self.failed_instances[:5]
            )
        if self.later:
            text += '. Later: ' + '; '.join(
                f'{e["host"]}: {e["what"]}: {e["reason"]}'
                for e in self.later[:5]
            )
        return text
