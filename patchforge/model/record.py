"""`record`: value classes declared like dataclasses, made without generating code at import.

A class is declared exactly as for `dataclasses.dataclass` (annotated fields, defaults,
`field(default_factory=..., repr=False, compare=False)`, `frozen=True`) and gets the same
`__init__`, `__repr__`, `__eq__`, `__hash__` and frozen-ness; `replace(obj, **changes)` is
`dataclasses.replace`.

Why not dataclasses: `dataclass()` writes each method as source text and compiles it when the
module is imported (Python 3.11: one `exec` per method, six for a frozen class), which no
bytecode cache keeps. patchforge runs one short process per command, and a resumed rebase
loads about thirty such classes: 15-20 ms of every command's start-up went to compiling them.
Here the methods are ordinary functions of this module, shared by every class; a class costs
what its body costs. The price is a generic `__init__` (arguments matched to fields in a loop,
about as fast as a frozen dataclass's, slower than a mutable one's) and this module.

Only what the package uses is supported: no `ClassVar`/`InitVar`, `init=False`, `__post_init__`,
`KW_ONLY`, ordering or slots, and no inheritance between records (the decorator refuses a
record base). Type checkers read a record as a dataclass (`typing.dataclass_transform`).
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar, dataclass_transform

_T = TypeVar("_T")
_NO_DEFAULT: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to (or deleting) a field of a frozen record."""


class _Field:
    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | None, repr: bool,
                 compare: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(*, default: Any = _NO_DEFAULT, default_factory: Callable[[], Any] | None = None,
          repr: bool = True, compare: bool = True) -> Any:
    """A field's default (or a factory making one per instance), and whether it is part of
    `repr()` and of `==` and `hash()`."""
    if default is not _NO_DEFAULT and default_factory is not None:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr, compare)


class _Spec:
    """What the shared methods need to know about one record class."""
    __slots__ = ("names", "known", "defaults", "factories", "shown", "compared", "tails")

    def __init__(self, cls: type) -> None:
        names, defaults, factories = [], {}, {}
        shown, compared = [], []
        for name in cls.__dict__.get("__annotations__", {}):
            value = cls.__dict__.get(name, _NO_DEFAULT)
            spec = value if isinstance(value, _Field) else _Field(value, None, True, True)
            if spec.default_factory is not None:
                factories[name] = spec.default_factory
            elif spec.default is not _NO_DEFAULT:
                if isinstance(spec.default, (list, dict, set)):
                    raise ValueError(f"mutable default {type(spec.default).__name__} for field "
                                     f"{name} is not allowed: use default_factory")
                defaults[name] = spec.default
            elif defaults or factories:
                raise TypeError(f"non-default argument {name!r} follows default argument")
            if isinstance(value, _Field):
                # As dataclass() does: the class attribute is the plain default, or none.
                if spec.default is _NO_DEFAULT:
                    delattr(cls, name)
                else:
                    setattr(cls, name, spec.default)
            names.append(name)
            if spec.repr:
                shown.append(name)
            if spec.compare:
                compared.append(name)
        self.names = tuple(names)
        self.known = frozenset(names)
        self.defaults = defaults
        self.factories = factories
        self.shown = tuple(shown)
        self.compared = tuple(compared)
        # For each count of arguments given by position, the (name, default) pairs of the
        # fields after them when every one has a plain default (None when one has a factory
        # or none): the common call fills them in one step.
        self.tails = tuple(tuple((name, defaults[name]) for name in self.names[given:])
                           if all(name in defaults for name in self.names[given:]) else None
                           for given in range(len(self.names) + 1))


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    spec: _Spec = type(self).__record__
    names = spec.names
    given = len(args)
    if given > len(names):
        raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments but "
                        f"{given} were given")
    # Straight into the instance's dictionary (a frozen record refuses setattr), in the
    # fields' order, then the keywords' (as a call with every field given by keyword would
    # fill it); a series of 300 patches makes about 7,500 records.
    if kwargs and (not spec.known.issuperset(kwargs)
                   or not kwargs.keys().isdisjoint(names[:given])):
        for name in kwargs:
            if name not in spec.known or names.index(name) < given:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated "
                                f"argument {name!r}")
    fields = self.__dict__
    fields.update(zip(names, args))
    if kwargs:
        fields.update(kwargs)
        if given + len(kwargs) == len(names):
            return
        for name in names[given:]:
            if name not in fields:
                fields[name] = _default(self, spec, name)
        return
    tail = spec.tails[given]
    if tail is not None:
        fields.update(tail)
        return
    for name in names[given:]:
        fields[name] = _default(self, spec, name)


def _default(self: Any, spec: _Spec, name: str) -> Any:
    """The value of field `name` when the caller gives none: its default, or a new one from
    its factory; a TypeError for a field without either."""
    if name in spec.defaults:
        return spec.defaults[name]
    if name in spec.factories:
        return spec.factories[name]()
    raise TypeError(f"{type(self).__name__}() missing argument {name!r}")


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__record__.shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = type(self).__record__.compared
    return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in type(self).__record__.compared))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[_T] | None = None, /, *, frozen: bool = False) -> Any:
    """Make `cls` a record (see the module's docstring); `@record` or `@record(frozen=True)`."""
    def make(cls: type[_T]) -> type[_T]:
        if any(hasattr(base, "__record__") for base in cls.__mro__[1:]):
            raise TypeError(f"{cls.__name__}: a record cannot derive from a record")
        cls.__record__ = _Spec(cls)  # type: ignore[attr-defined]
        own = cls.__dict__
        for name, method in (("__init__", _init), ("__repr__", _repr), ("__eq__", _eq)):
            if name not in own:
                setattr(cls, name, method)
        # dataclass()'s rule: a frozen record hashes its compared fields; a mutable one is
        # unhashable, unless the class defines __hash__ itself.
        if "__hash__" not in own or own["__hash__"] is None:
            setattr(cls, "__hash__", _hash if frozen else None)
        if frozen:
            setattr(cls, "__setattr__", _frozen_setattr)
            setattr(cls, "__delattr__", _frozen_delattr)
        return cls

    return make if cls is None else make(cls)


def replace(obj: _T, /, **changes: Any) -> _T:
    """A new record like `obj` with `changes` (field name -> value), as dataclasses.replace."""
    cls = type(obj)
    spec: _Spec = cls.__record__  # type: ignore[attr-defined]
    if not spec.known.issuperset(changes):
        unknown = set(changes) - spec.known
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    values = {name: changes[name] if name in changes else getattr(obj, name)
              for name in spec.names}
    if cls.__init__ is not _init:
        return cls(**values)
    # Every field given: what _init would make of them, without matching keywords to fields.
    new = object.__new__(cls)
    new.__dict__.update(values)
    return new
