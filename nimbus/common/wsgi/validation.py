"""JSON Schema validation shared by every REST API of Nimbus.

One validator class for all of them, so a rule holds everywhere at once:

- ``integer`` means a JSON integer. jsonschema's Draft 7 checker also takes
  a float with no fractional part (``1.0``, or ``1e+20``, which is what a
  JSON reader makes of ``99999999999999999999``); Nimbus does not, so a
  count, an amount or a limit can never arrive as a float that later code
  turns into a huge ``int``. Booleans are not integers either.
- Validators are built once per schema object (building one costs more
  than most validations) and kept for the life of the process; schemas
  are module constants or built per microversion, so the cache is small.
  With each goes a compiled quick check (:mod:`quick_check`) that lets a
  valid document through without jsonschema's walk; jsonschema still
  decides (and words) every refusal.

:func:`first_error` returns jsonschema's best match (or None) and
:func:`where` renders its path, so each API words its own 400.
"""

import jsonschema
from jsonschema import validators

from nimbus.common.wsgi import quick_check


def _is_integer(checker, instance):
    return isinstance(instance, int) and not isinstance(instance, bool)


_TYPES = jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
    'integer', _is_integer
)

StrictValidator = validators.extend(
    jsonschema.Draft7Validator, type_checker=_TYPES
)

_FORMATS = jsonschema.FormatChecker()
_CACHE = {}
_CACHE_LIMIT = 4096


def _entry(schema, formats):
    key = (id(schema), formats)
    entry = _CACHE.get(key)
    if entry is None or entry[0] is not schema:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()  # schemas built per request must not pile up
        entry = (
            schema,
            StrictValidator(
                schema, format_checker=_FORMATS if formats else None
            ),
            quick_check.checker(schema, formats),
        )
        _CACHE[key] = entry
    return entry


def validator(schema, formats=True):
    """The (cached) validator of ``schema``; ``formats`` checks the
    ``format`` keywords (uuid, ipv4, date-time, ...)."""
    return _entry(schema, formats)[1]


def first_error(schema, data, formats=True):
    """The most relevant :class:`jsonschema.ValidationError` of ``data``
    against ``schema``, or None when it validates. A document the
    schema's quick check (:mod:`nimbus.common.wsgi.quick_check`) finds
    valid is not walked by jsonschema."""
    _schema, full, quick = _entry(schema, formats)
    if quick is not None and quick(data):
        return None
    return jsonschema.exceptions.best_match(full.iter_errors(data))


def where(error):
    """`` (at 'a/0/b')`` for an error inside the document, else ``''``."""
    path = '/'.join(str(p) for p in error.absolute_path)
    return " (at '%s')" % path if path else ''
