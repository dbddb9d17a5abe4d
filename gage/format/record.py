"""Records: value classes whose methods are compiled once, into the module's bytecode.

Why not `dataclasses` for the classes on the start path (docs/architecture.md says which those
are): `@dataclass` writes each class's `__init__`, `__repr__` and `__eq__` (and for a frozen
one `__setattr__`, `__delattr__` and `__hash__`) as source text and compiles it at import, in
every process: about 0.6 ms a frozen class on a quiet 2-core machine, and importing
`dataclasses` loads `inspect`, `ast`, `dis` and `tokenize` (8 to 9 ms more). The 33 classes on
the path of `gage verdict ID` were about a third of its start-up (bench/bench_startup.py).
mypy checks a record as the dataclass it mirrors (`dataclass_transform`): a frozen record's
field cannot be assigned, in the type check as at run time. A record's `__init__` is
written out in its own class, so it is compiled once, into the `.pyc`; what every record
shares (equality, hash, repr, refusing a change) is written here once, driven by the class's
`__slots__`.

The rules are those of `dataclasses`, so a class moved from one to the other behaves the same:

- a record's fields are the names in `__slots__`, along its record bases first;
- `==` compares every field not named in `_uncompared`, and only between records of exactly
  the same class (anything else is `NotImplemented`, as a dataclass's `__eq__` returns);
- a `Frozen` record refuses `setattr` and `delattr` once made (`FrozenRecordError`, an
  `AttributeError`, as `FrozenInstanceError` is) and hashes by its compared fields; a
  mutable `Record` is unhashable, as a mutable dataclass with `eq` is;
- `repr` is `ClassName(field=value, ...)` over the fields not named in `_unshown`;
- `replace(record, **changes)` makes a new record through `__init__`, from every field but
  those named in `_uninit` (fields `__init__` does not take, such as a cache).

A frozen record's `__init__` sets its fields with `set_field(self, name, value)` (which is
`object.__setattr__`, as a frozen dataclass's generated `__init__` does).
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    R = TypeVar("R", bound="Fields")
else:
    # mypy alone needs the marker: it then checks a record as a dataclass (its fields, and a
    # frozen record's refusal of an assignment) while the class keeps the __init__ it writes.

    def dataclass_transform(**_options: object) -> object:
        return lambda cls: cls

set_field = object.__setattr__


class FrozenRecordError(AttributeError):
    """A field of a frozen record was set or deleted after the record was made."""


def _no_fields(_record: object) -> tuple[()]:
    return ()


class Fields:
    """What every record shares: its fields read from its slots, equality and repr by field."""

    __slots__ = ()

    # Set for each subclass by __init_subclass__ from the slots; the three `_un...` names are
    # what a subclass may set in its body.
    _fields: ClassVar[tuple[str, ...]] = ()
    _uncompared: ClassVar[tuple[str, ...]] = ()
    _unshown: ClassVar[tuple[str, ...]] = ()
    _uninit: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def _compared(record: Any, /) -> object:
        """The fields `==` and `hash` look at, as one value (replaced for each subclass)."""
        return ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: list[str] = []
        for klass in reversed(cls.__mro__):
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name not in fields and name not in ("__dict__", "__weakref__"):
                    fields.append(name)
        cls._fields = tuple(fields)
        compared = [n for n in fields if n not in cls._uncompared]
        # attrgetter of two or more names gives a tuple, of one the value itself, which
        # compares and hashes the same way for a record of one field.
        made: dict[str, object] = {
            "_compared": staticmethod(
                attrgetter(*compared) if compared else _no_fields
            ),
            "__match_args__": tuple(n for n in fields if n not in cls._uninit),
        }
        for name, value in made.items():
            setattr(cls, name, value)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared(self) == self._compared(other)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={getattr(self, name, '<unset>')!r}"
            for name in self._fields
            if name not in self._unshown
        )
        return f"{type(self).__qualname__}({shown})"


@dataclass_transform(eq_default=True)
class Record(Fields):
    """A mutable record: equality and repr by field, unhashable."""

    __slots__ = ()


@dataclass_transform(eq_default=True, frozen_default=True)
class Frozen(Fields):
    """An immutable record: hashable by its compared fields, and refusing any change."""

    __slots__ = ()

    if not TYPE_CHECKING:  # hidden from mypy, which would then let any name be assigned

        def __setattr__(self, name: str, value: object) -> None:
            raise FrozenRecordError(
                f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}"
            )

        def __delattr__(self, name: str) -> None:
            raise FrozenRecordError(
                f"cannot delete field {name!r} of a frozen {type(self).__qualname__}"
            )

    def __hash__(self) -> int:
        return hash(self._compared(self))

    def __setstate__(self, state: object) -> None:
        # copy and pickle restore a slotted object's fields with setattr, which a frozen record
        # refuses: set them as __init__ does. The state is (None, {slot: value}) for slots.
        slots = state[1] if isinstance(state, tuple) and len(state) == 2 else state
        if isinstance(slots, dict):
            for name, value in slots.items():
                set_field(self, name, value)


def replace(record: R, /, **changes: Any) -> R:
    """A new record like `record`, with `changes`; made through `__init__`, so it is checked as any."""
    cls = type(record)
    args = {
        name: getattr(record, name) for name in cls._fields if name not in cls._uninit
    }
    unknown = sorted(changes.keys() - args.keys())
    if unknown:
        raise TypeError(
            f"{cls.__qualname__} has no field {unknown[0]!r} that __init__ takes"
        )
    args.update(changes)
    return cls(**args)
