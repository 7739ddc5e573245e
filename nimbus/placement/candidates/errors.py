"""The single exception of the candidate engine and its error codes."""

UNDEFINED = 'placement.undefined_code'
BAD_VALUE = 'placement.query.bad_value'
DUPLICATE_KEY = 'placement.query.duplicate_key'
MISSING_VALUE = 'placement.query.missing_value'


class CandidatesQueryError(Exception):
    """A query the engine refuses; the REST handler answers HTTP 400.

    ``code`` is a Placement error code string, ``detail`` a message naming
    the offending parameter.
    """

    def __init__(self, detail: str, code: str = UNDEFINED):
        super().__init__(detail)
        self.detail = detail
        self.code = code

    def __repr__(self):
        return 'CandidatesQueryError(%r, code=%r)' % (self.detail, self.code)
