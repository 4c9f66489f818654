"""Frozen value records: what ``@dataclass(frozen=True)`` gave the runtime's records (fields from the class's
annotations, in order, with defaults; compared, hashed and shown by value; no attribute set after ``__init__``),
without its price at import. dataclasses compiles each generated method with ``exec`` when the class is made, about
0.7 ms a class: its 14 records were half of ``tmlr_runtime.serve()``'s 20 ms, which a service pays at every start
(docs/serving.md, "Start-up, measured"). A record is made once per class here, and its instances keep their fields in
``__dict__`` (artifact/rules.py fills it directly when it reads metadata)."""
from __future__ import annotations

from typing import Any, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Subclass and annotate the fields (defaults as class attributes, after the fields without one)."""

    _field_names: tuple[str, ...] = ()  # not ``_fields``: that name says "namedtuple" to code that looks for one
    _defaults: dict[str, Any] = {}
    _template: dict[str, Any] = {}  # every field in order, with its default (None where it has none)
    _required: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [n for n, a in cls.__dict__.get("__annotations__", {}).items() if not str(a).startswith(("ClassVar", "typing.ClassVar"))]
        cls._field_names = (*cls._field_names, *own)
        cls._defaults = {**cls._defaults, **{n: cls.__dict__[n] for n in own if n in cls.__dict__}}
        cls._template = {n: cls._defaults.get(n) for n in cls._field_names}
        cls._required = frozenset(cls._field_names) - cls._defaults.keys()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # one dict merge: near a dataclass's __init__ in cost (users may make a TensorDescriptor at every launch)
        given = dict(zip(self._field_names, args), **kwargs)
        if len(given) != len(args) + len(kwargs) or not self._required <= given.keys() <= self._template.keys():
            raise TypeError(f"{type(self).__name__}({', '.join(self._field_names)}) was given {len(args)} positional "
                            f"field(s) and {sorted(kwargs)} by keyword: too many, unknown, given twice or missing one")
        self.__dict__.update({**self._template, **given})  # the template's order: the fields'

    def _values(self) -> tuple[Any, ...]:
        return tuple(map(self.__dict__.__getitem__, self._field_names))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r} (make another with records.replace)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={v!r}' for n, v in zip(self._field_names, self._values()))})"


def replace(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes`` (as ``dataclasses.replace``)."""
    return type(record)(**{**record.__dict__, **changes})


def fields(record: Record | type[Record]) -> tuple[str, ...]:
    """The field names, in order."""
    return record._field_names
