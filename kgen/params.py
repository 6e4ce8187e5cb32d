"""A base for the frozen dataclasses that describe a kernel family's op (Spec) and design point
(Config): deterministic hashing, dict round-trips, field-naming validation errors, and the former
names of renamed or removed fields, accepted for one release (CHANGELOG.md)."""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import ClassVar


class ParamError(ValueError):
    """A Spec or Config value is invalid; the message names the field and how to fix it."""


class ConfigError(ParamError):
    """A Config that cannot work: for this Spec on this arch, or at all (a removed axis)."""


@dataclass(frozen=True)
class Renamed:
    """A former 0/1 field now one of named values: `values[old]` of field `to`."""

    to: str
    values: tuple[str, str]


@dataclass(frozen=True)
class Removed:
    """A former field of a removed axis: 0 (what every kept variant takes) is dropped, any other
    value is refused with `reason` (what to take instead)."""

    reason: str


@dataclass(frozen=True)
class Params:
    # Former field names -> what became of them (Renamed, Removed); see accepts_former_names
    FORMER_NAMES: ClassVar[Mapping[str, Renamed | Removed]] = {}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        names = {f.name for f in fields(cls)} | set(cls.FORMER_NAMES)
        unknown = set(data) - names
        if unknown:
            raise ParamError(
                f"{cls.__name__} has no field(s) {sorted(unknown)}; "
                f"fields: {sorted(f.name for f in fields(cls))}"
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


_PLUMBING = frozenset({__name__, "dataclasses"})  # frames between a caller and the mapping


def accepts_former_names(cls):
    """Class decorator, above @dataclass: `cls(...)`, `cls.from_dict(...)` and
    `dataclasses.replace(...)` take the former names in cls.FORMER_NAMES with a
    DeprecationWarning, mapped onto today's fields (a former name given beside its new field
    wins: that is what replacing one field of an existing config under its old name means); a
    Renamed name also reads back (config.split_softmax -> 0/1)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **given):
        if not cls.FORMER_NAMES.keys() & given.keys():
            return init(self, *args, **given)
        init(self, *args, **_map_former_names(cls, given))

    cls.__init__ = __init__
    for name, became in cls.FORMER_NAMES.items():
        if isinstance(became, Renamed):
            setattr(cls, name, property(functools.partial(_read_former, name=name, became=became)))
    return cls


def _map_former_names(cls, given: dict) -> dict:
    given = dict(given)
    for name in [n for n in given if n in cls.FORMER_NAMES]:
        value, became = given.pop(name), cls.FORMER_NAMES[name]
        if isinstance(became, Removed):
            if value != 0:
                raise ConfigError(f"{cls.__name__}.{name}={value!r}: {became.reason}")
            _deprecated(f"{cls.__name__}.{name} was removed ({became.reason}); drop it")
            continue
        if value not in (0, 1):
            raise ParamError(
                f"{cls.__name__}.{name}={value!r}: must be 0 or 1 (a former name: "
                f"{became.to}={became.values[0]!r} or {became.values[1]!r})"
            )
        given[became.to] = became.values[value]
        _deprecated(
            f"{cls.__name__}.{name} is now {became.to}: {name}={value!r} is "
            f"{became.to}={became.values[value]!r} (CHANGELOG.md)"
        )
    return given


def _read_former(self, *, name: str, became: Renamed) -> int:
    _deprecated(f"{type(self).__name__}.{name} is now {became.to} (CHANGELOG.md)")
    return became.values.index(getattr(self, became.to))


def _deprecated(message: str) -> None:
    """Warn, naming the line that used the former name (past this module and dataclasses)."""
    frame, level = sys._getframe(2), 3
    while frame is not None and frame.f_globals.get("__name__") in _PLUMBING:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, DeprecationWarning, stacklevel=level)
