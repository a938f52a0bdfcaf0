"""patchforge.model.record against dataclasses: the same declarations, the same behaviour."""
from __future__ import annotations

import copy
import dataclasses

import pytest

from patchforge.model import record as rec


def declare(decorator, field, **options):
    @decorator(**options)
    class Pin:
        """A doc."""
        kind: str
        commit: str
        source: dict = field(default_factory=dict)
        version: str | None = None
        image: object = field(default=None, compare=False)
        note: str = field(default="", repr=False)

    return Pin


@pytest.mark.parametrize("frozen", [False, True])
def test_a_record_behaves_as_the_dataclass_of_the_same_declaration(frozen):
    ours = declare(rec.record, rec.field, frozen=frozen)
    theirs = declare(dataclasses.dataclass, dataclasses.field, frozen=frozen)
    calls = [(("git", "c1"), {}), (("git", "c1", {"url": "u"}, "1.0"), {"image": 3}),
             (("git",), {"commit": "c2", "note": "n"})]
    for args, kwargs in calls:
        a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(a) == repr(b)
        assert vars(a) == vars(b)
        assert a == ours(*args, **kwargs) and a != ours("wheel", "c1")
        assert (a == b) is False  # another class, as between two dataclasses
    assert ours("git", "c", image=1) == ours("git", "c", image=2)  # compare=False
    assert ours("git", "c").source is not ours("git", "c").source  # a factory per instance
    assert ours.version is None and not hasattr(ours, "source")  # class attributes as dataclass
    assert ours.__doc__ == "A doc."
    if frozen:
        pin = ours("git", "c")
        for pins in ((pin, theirs("git", "c"))):
            with pytest.raises(TypeError):  # a dict field: unhashable, as with dataclass
                hash(pins)
        with pytest.raises(AttributeError):
            pin.kind = "dir"
        with pytest.raises(AttributeError):
            del pin.kind
    else:
        assert ours.__hash__ is None and theirs.__hash__ is None  # unhashable, as dataclass
        pin = ours("git", "c")
        pin.kind = "dir"
        assert pin.kind == "dir"


@pytest.mark.parametrize("frozen", [False, True])
def test_replace_and_copy(frozen):
    Pin = declare(rec.record, rec.field, frozen=frozen)
    pin = Pin("git", "c", {"url": "u"})
    moved = rec.replace(pin, commit="d")
    assert (moved.kind, moved.commit, moved.source) == ("git", "d", {"url": "u"})
    assert pin.commit == "c"
    assert copy.copy(pin) == pin and copy.deepcopy(pin) == pin
    with pytest.raises(TypeError):
        rec.replace(pin, colour="red")


def test_wrong_calls_and_declarations_are_refused():
    Pin = declare(rec.record, rec.field)
    for args, kwargs in [((), {}), (("git",), {}), (("git", "c"), {"kind": "x"}),
                         (("git", "c"), {"colour": "red"}), (tuple("abcdefg"), {})]:
        with pytest.raises(TypeError):
            Pin(*args, **kwargs)
    with pytest.raises(TypeError):
        @rec.record
        class Order:
            a: int = 0
            b: int
    with pytest.raises(ValueError):
        @rec.record
        class Shared:
            a: list = []  # noqa: RUF012 - the mistake being refused
    with pytest.raises(TypeError):
        @rec.record
        class Derived(Pin):
            extra: int = 0


def test_a_class_may_keep_its_own_methods():
    @rec.record(frozen=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("x")) == "<x>"
    assert Named("x") == Named("x") and len({Named("x"), Named("x")}) == 1
    assert hash(Named("x")) == hash(dataclasses.dataclass(frozen=True)(type("N", (), {
        "__annotations__": {"name": "str"}}))("x"))


@pytest.mark.parametrize("frozen", [False, True])
def test_every_way_of_giving_the_fields_fills_them_as_the_dataclass(frozen):
    # Each count of fields given by position, each subset of fields by keyword, in every
    # order: the same fields and the same refusals.
    import itertools

    ours = declare(rec.record, rec.field, frozen=frozen)
    theirs = declare(dataclasses.dataclass, dataclasses.field, frozen=frozen)
    names = [f.name for f in dataclasses.fields(theirs)]
    values = {"kind": "git", "commit": "c", "source": {"u": 1}, "version": "1.0", "image": 3,
              "note": "n"}
    for given in range(len(names) + 1):
        args = [values[name] for name in names[:given]]
        for count in range(len(names) + 1):
            for keywords in itertools.permutations(names, count):
                kwargs = {name: values[name] for name in keywords}
                try:
                    expected = theirs(*args, **kwargs)
                except TypeError:
                    with pytest.raises(TypeError):
                        ours(*args, **kwargs)
                    continue
                made = ours(*args, **kwargs)
                assert vars(made) == vars(expected) and repr(made) == repr(expected)
                changed = rec.replace(made, note="m", version=None)
                wanted = dataclasses.replace(expected, note="m", version=None)
                assert list(vars(changed).items()) == list(vars(wanted).items())


def test_replace_carries_the_fields_only():
    import functools

    calls = []

    @rec.record(frozen=True)
    class Text:
        body: str

        @functools.cached_property
        def words(self) -> int:
            calls.append(self.body)
            return len(self.body.split())

    one = Text("a b")
    assert one.words == 2
    other = rec.replace(one, body="a b c")
    assert other.words == 3 and calls == ["a b", "a b c"]  # not the first one's cached value

    @rec.record
    class Counted:
        n: int

        def __init__(self, n: int) -> None:  # its own: replace goes through it
            self.__dict__["n"] = n
            calls.append(n)

    assert rec.replace(Counted(1), n=2).n == 2 and calls[-2:] == [1, 2]
