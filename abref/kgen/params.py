"""A base for the frozen dataclasses that describe a kernel family's op (Spec) and design point
(Config): deterministic hashing, dict round-trips and field-naming validation errors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields


class ParamError(ValueError):
    """A Spec or Config value is invalid; the message names the field and how to fix it."""


@dataclass(frozen=True)
class Params:
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ParamError(
                f"{cls.__name__} has no field(s) {sorted(unknown)}; fields: {sorted(names)}"
            )
        return cls(**data)

    def key(self) -> str:
        """A hash of the values that is the same in every process and on every machine."""
        text = json.dumps({"type": type(self).__name__, **self.to_dict()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _require(self, ok: bool, field: str, reason: str) -> None:
        if not ok:
            value = getattr(self, field)
            raise ParamError(f"{type(self).__name__}.{field}={value!r}: {reason}")

    def _require_int(self, field: str, low: int, high: int) -> None:
        value = getattr(self, field)
        self._require(
            isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
            field,
            f"must be an integer in [{low}, {high}]",
        )

    def _require_choice(self, field: str, choices: tuple) -> None:
        self._require(getattr(self, field) in choices, field, f"must be one of {choices}")
