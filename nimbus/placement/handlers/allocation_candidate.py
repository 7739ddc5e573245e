"""GET /allocation_candidates (1.10): the in-process engine on a snapshot.

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
    snapshot = state.cache.get()
    try:
        body = candidates.get_allocation_candidates_json(
            snapshot,
            util.params(req),
            util.version(req).as_tuple(),
            state.candidate_options,
        )
    except candidate_errors.CandidatesQueryError as exc:
        raise exception.BadRequest(exc.detail, error_code=exc.code) from exc
    util.send_json(req, resp, body)
