"""ExtraSpecValidator: describes one extra spec key (or key pattern) and checks values.

``name`` may contain ``{param}`` placeholders described by ``parameters``
(``[{"name": "group", "pattern": r"([1-9][0-9]*)?"}]``). ``value`` describes the value:
``{"type": str|int|bool, "enum": [...], "min": n, "max": n, "pattern": regex,
"validate": callable(value) -> error message or None}``.
"""

from __future__ import annotations

import re


class ExtraSpecValidationError(ValueError):
    pass


class ExtraSpecValidator:
    def __init__(
        self,
        name: str,
        description: str = '',
        value: dict | None = None,
        parameters: list | None = None,
        deprecated: bool = False,
    ):
        self.name = name
        self.description = description
        self.value = value or {'type': str}
        self.parameters = parameters or []
        self.deprecated = deprecated
        pattern = re.escape(name)
        for p in self.parameters:
            pattern = pattern.replace(
                re.escape('{%s}' % p['name']), '(?:%s)' % p['pattern']
            )
        self._regex = re.compile('^%s$' % pattern)

    @property
    def namespace(self) -> str | None:
        return self.name.split(':', 1)[0] if ':' in self.name else None

    def matches(self, key: str) -> bool:
        return bool(self._regex.match(key))

    def validate(self, key: str, value) -> None:
        spec = self.value
        typ = spec.get('type', str)
        text = str(value)
        if typ is int:
            try:
                num = int(text)
            except ValueError as exc:
                raise ExtraSpecValidationError(
                    f'{key}: {value!r} is not an integer'
                ) from exc
            if 'min' in spec and num < spec['min']:
                raise ExtraSpecValidationError(
                    f'{key}: {num} is below {spec["min"]}'
                )
            if 'max' in spec and num > spec['max']:
                raise ExtraSpecValidationError(
                    f'{key}: {num} is above {spec["max"]}'
                )
        elif typ is bool:
            if text.lower() not in ('true', 'false', '1', '0', 'yes', 'no'):
                raise ExtraSpecValidationError(
                    f'{key}: {value!r} is not a boolean'
                )
        if 'enum' in spec and text not in [str(e) for e in spec['enum']]:
            raise ExtraSpecValidationError(
                f'{key}: {value!r} is not one of {", ".join(map(str, spec["enum"]))}'
            )
        if 'pattern' in spec and not re.match(
            '^(?:%s)$' % spec['pattern'], text
        ):
            raise ExtraSpecValidationError(f'{key}: {value!r} is malformed')
        check = spec.get('validate')
        if check is not None:
            err = check(text)
            if err:
                raise ExtraSpecValidationError(f'{key}: {err}')
