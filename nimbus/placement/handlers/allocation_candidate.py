"""GET /allocation_candidates (1.10): the in-process engine on a snapshot.

``X-Nimbus-Candidates: compact-1`` (from 1.34) asks for the compact body
of :mod:`nimbus.placement.candidates.compact`; the answer then carries
the same header.

The snapshot comes from the process cache (one tiny SELECT when nothing
changed), so this handler does not read provider data from the database.
"""

from nimbus.placement import exception
from nimbus.placement.candidates import errors as candidate_errors
from nimbus.placement.handlers import util


@util.since((1, 10))
@util.json_only
def list_candidates(state, req, resp):
    from nimbus.placement import candidates

    util.authorize(state, req, 'placement:allocation_candidates:list')
    from nimbus.placement.candidates import compact

    snapshot = state.cache.get()
    mv = util.version(req).as_tuple()
    # Nimbus's scheduler asks for the compact body; every other client
    # gets Placement's, unchanged.
    brief = compact.wanted(req.get_header(compact.HEADER), mv)
    try:
        body = candidates.get_allocation_candidates_json(
            snapshot,
            util.params(req),
            mv,
            state.candidate_options,
            compact=brief,
        )
    except candidate_errors.CandidatesQueryError as exc:
        raise exception.BadRequest(exc.detail, error_code=exc.code) from exc
    if brief:
        resp.set_header(compact.HEADER, compact.VERSION)
    util.send_json(req, resp, body)
