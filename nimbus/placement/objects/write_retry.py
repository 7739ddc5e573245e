"""One placement write, run again when it loses a provider generation
race (:class:`~nimbus.placement.exception.ProviderGenerationRace`): the
allocation writes of PUT and POST /allocations and of the reshaper (see
:mod:`nimbus.placement.objects.allocation`)."""

from oslo_log import log as logging
import tenacity

from nimbus.placement import exception

LOG = logging.getLogger(__name__)


def write_retrying(pdb, attempts, fn, *args, **kwargs):
    """``pdb.write(fn, *args, **kwargs)``, run again on a provider
    generation race, ``attempts`` times in all (at least once).

    A consumer generation conflict or a client's stale provider generation
    is not retried (the caller must re-read). After the last attempt the
    race is a 409 ``placement.concurrent_update``.
    """
    attempts = max(1, attempts)

    def lost_race(state):
        LOG.debug(
            'Allocation write lost a provider generation race '
            '(attempt %d of %d)',
            state.attempt_number,
            attempts,
        )

    def gave_up(state):
        LOG.warning(
            'Allocation write still lost a provider generation race '
            'after %d attempts',
            attempts,
        )
        raise exception.ConcurrentUpdate(what='A resource provider')

    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(
            exception.ProviderGenerationRace
        ),
        stop=tenacity.stop_after_attempt(attempts),
        before_sleep=lost_race,
        retry_error_callback=gave_up,
    )(pdb.write, fn, *args, **kwargs)
