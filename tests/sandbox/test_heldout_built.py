"""Instances the held-out judge varies, made again through `__init__` (sandbox/judge/heldout/built.py), on this
machine (no Docker): what `__init__` does for every instance (a registry, a value kept aside) is done for the drawn
ones; an attribute asked as the base's run had it stays as this side's run made it; a class that cannot be made
again from its attributes is copied."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import sys
import types
from typing import Any

import pytest

from sandbox import plain
from tests.support.boxfiles import box_module

built = box_module("judge/heldout/built.py", "_test_heldbuilt")

MADE: set[int] = set()


@dataclasses.dataclass
class Parcel:
    weight: float
    insured: bool = False
    fee: float | None = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.fee = 2.0 if self.insured else None
        self.made_as = (self.weight, self.insured)
        MADE.add(id(self))


class Task:
    def __init__(self, name: str, priority: int) -> None:
        self._name, self.priority = name, priority
        self.key = name.lower()


class Doubled:
    def __init__(self, x: int) -> None:
        self.x = x * 2


class Free:
    def __init__(self, size: int) -> None:
        self.width = size


_MODULE = types.ModuleType("_test_built_classes")
for cls in (Parcel, Task, Doubled, Free):
    cls.__module__ = _MODULE.__name__
    setattr(_MODULE, cls.__name__, cls)
sys.modules[_MODULE.__name__] = _MODULE


def _resolve(name: str) -> Any:
    module, _, qual = name.partition(":")
    return getattr(sys.modules[module], qual)


def _value(enc: Any, live: Any, rec: Any = None) -> Any:
    return built.value(enc, live, rec, plain, _resolve)


def test_a_varied_instance_is_made_through_init_and_what_init_derives_follows_the_drawn_values() -> None:
    live = Parcel(2)
    rec = plain.encode(live)
    asked = [*rec[:2], [[k, ["i", "30"]] if k == "weight" else [k, v] for k, v in rec[2]]]
    made = _value(asked, live, rec)
    assert type(made) is Parcel and id(made) in MADE, "made through __init__: registered"
    assert made.weight == 30 and made.made_as == (30, False), "derived from the drawn weight, not copied"


def test_the_tested_instance_asked_unchanged_is_made_again_equal() -> None:
    live = Task("Write", 2)
    rec = plain.encode(live)
    made = _value(rec, live, rec)
    assert made is not live and vars(made) == vars(live)


def test_an_attribute_asked_as_the_base_had_it_stays_as_this_side_made_it() -> None:
    live = Parcel(2)
    live.fee = 0.0  # the diff's run sets the fee the base left None
    rec = ["o", plain.encode(live)[1], [[k, ["n"] if k == "fee" else v] for k, v in plain.encode(live)[2]]]
    assert _value(rec, live, rec).fee == 0.0
    drawn = ["o", rec[1], [[k, ["f", "7.5"]] if k == "fee" else [k, v] for k, v in rec[2]]]
    assert _value(drawn, live, rec).fee == 7.5, "a value the judge drew is set as drawn"


def test_a_private_attribute_fills_its_parameter_and_an_attribute_set_after_init_is_kept() -> None:
    live = Task("Write", 2)
    live.priority = 9  # set by the test after making it
    rec = plain.encode(live)
    asked = ["o", rec[1], [[k, ["s", "Read"]] if k == "_name" else [k, v] for k, v in rec[2]]]
    made = _value(asked, live, rec)
    assert (made._name, made.key, made.priority) == ("Read", "read", 9)


def test_a_class_that_cannot_be_made_again_from_its_attributes_is_copied() -> None:
    for live in (Doubled(3), Free(4)):
        rec = plain.encode(live)
        made = _value(rec, live, rec)
        assert made is not live and vars(made) == vars(live)
    assert built.instance(Doubled(3), {}, {"x"}, plain.encode) is None, "__init__ transforms: no control"
    assert built.instance(Free(4), {}, {"width"}, plain.encode) is None, "a parameter with no attribute"


def test_items_of_a_longer_list_are_made_from_the_test_s_last_item() -> None:
    tasks = [Task("a", 1), Task("b", 2)]
    rec = plain.encode(tasks)
    three = ["l", [*rec[1], ["o", rec[1][0][1], [["_name", ["s", "C"]], ["priority", ["i", "0"]],
                                                 ["key", ["s", "b"]]]]]]
    made = _value(three, tasks, rec)
    assert [t.key for t in made] == ["a", "b", "c"], "the third made through __init__: its key derived"


def test_what_init_makes_past_the_test_s_instance_is_not_on_the_made_one() -> None:
    """An instance still being made when the tested call meets it (parse's Parser, mid-`__init__`)."""
    live = Task("Write", 2)
    del live.key
    rec = plain.encode(live)
    made = _value(rec, live, rec)
    assert vars(made) == vars(live)


class FakeDatetime(dt.datetime):
    """As freezegun's: a subclass with no state of its own."""


def test_a_moment_of_a_date_subclass_is_varied_as_its_moment_and_made_as_the_live_argument_s_class() -> None:
    live = FakeDatetime(2024, 7, 1, 12, 30, tzinfo=dt.UTC)
    assert plain.encode(live) == ["dtm", "2024-07-01T12:30:00+00:00"]
    made = _value(["dtm", "2023-01-02T03:04:05+00:00"], live, plain.encode(live))
    assert type(made) is FakeDatetime and made == dt.datetime(2023, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def test_a_live_object_is_made_again_as_an_equal_copy_through_its_class_where_its_class_can_make_one() -> None:
    class ReversedIsNone:  # a test's own local class: no state, a constructor that takes nothing
        __reversed__ = None

        def __iter__(self) -> Any:
            return iter([1])

    live = ReversedIsNone()
    copy = built.again(live, plain.encode, {})
    assert type(copy) is ReversedIsNone and copy is not live and list(copy) == [1]
    task = Task("Build", 3)
    made = built.again(task, plain.encode, {})
    assert made is not task and vars(made) == vars(task)


def test_what_cannot_be_made_again_equal_stays_the_live_object() -> None:
    sentinel, marker = object(), Free(3)
    assert built.again(sentinel, plain.encode, {}) is sentinel  # no __dict__
    assert built.again(marker, plain.encode, {"_marker": marker}) is marker  # the function's module holds it
    doubled = Doubled(2)
    assert built.again(doubled, plain.encode, {}) is doubled  # __init__ transforms what it is given: no equal copy
    assert built.again(len, plain.encode, {}) is len and built.again(Task, plain.encode, {}) is Task


class Shelved(list):  # type: ignore[type-arg]
    """A list subclass keeping its items in attributes of its own, whose list methods must never copy it."""

    def __init__(self) -> None:
        self.lists: list[list[int]] = [[]]

    def append(self, item: Any) -> None:
        raise AssertionError("copied through its own list methods")

    extend = append

    def __iter__(self) -> Any:
        return (x for inner in self.lists for x in inner)


def test_an_instance_is_copied_by_its_state_never_through_its_own_list_methods() -> None:
    live = Shelved()
    live.lists = [[3, 1], [2]]
    with pytest.raises(AssertionError):
        copy.copy(live)  # as copy.copy makes it: its items appended one by one
    made = built.shallow(live)
    assert type(made) is Shelved and made is not live and made.lists is live.lists
