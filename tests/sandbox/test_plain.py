"""Plain data across the box's edge (sandbox/plain.py): what is rebuilt, what stays opaque."""

from __future__ import annotations

import enum
import json
import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import pytest

from sandbox.plain import MAX_ITEMS, Iter, Member, Obj, decode, encode, exact, show_enc


class Colour(enum.Enum):
    RED = 1


Point = namedtuple("Point", "x y")


@dataclass
class Money:
    cents: int
    currency: str


class Barrel(list):  # type: ignore[type-arg]
    """A list subclass that keeps its items in lists of its own (boltons' BarrelList)."""

    def __init__(self, items: list[int]) -> None:
        self.lists = [list(items)]

    def __len__(self) -> int:
        return sum(len(x) for x in self.lists)


class Tagged(list):  # type: ignore[type-arg]
    pass


def resolve(name: str) -> Any:
    return {"tests.sandbox.test_plain:Colour": Colour, "tests.sandbox.test_plain:Point": Point,
            "tests.sandbox.test_plain:Money": Money, "tests.sandbox.test_plain:Barrel": Barrel}[name]


@pytest.mark.parametrize("value", [None, True, 0, -5, 2**100, 1.5, "GBP", "", b"\x00x", [1, "a"], (1,), {3, 4},
                                   frozenset({"a"}), {"a": [1, {2: None}]}, {(1, 2): b""}])
def test_data_comes_back_as_it_went(value: Any) -> None:
    enc = encode(value)
    assert exact(enc) and decode(enc) == value and type(decode(enc)) is type(value)


def test_floats_that_json_cannot_spell_come_back() -> None:
    assert math.isnan(decode(encode(float("nan")))) and decode(encode(float("-inf"))) == float("-inf")


def test_instances_enums_and_named_tuples_are_rebuilt_in_the_box_and_stand_in_outside() -> None:
    for value in (Money(5, "EUR"), Colour.RED, Point(1, 2)):
        enc = encode(value)
        assert exact(enc) and decode(enc, resolve) == value
    assert decode(encode(Money(5, "EUR"))) == Obj("tests.sandbox.test_plain:Money", (("cents", 5), ("currency", "EUR")))
    assert decode(encode(Colour.RED)) == Member("tests.sandbox.test_plain:Colour", "RED")
    assert encode(decode(encode(Point(1, 2)))) == encode(Point(1, 2)), "a stand-in encodes as the original"


def test_what_is_not_plain_data_is_opaque_and_never_rebuilt() -> None:
    class Local:
        pass

    for value in (lambda: 1, Local(), open, list(range(MAX_ITEMS + 1)), [1, object()]):
        enc = encode(value)
        assert not exact(enc)
    with pytest.raises(ValueError):
        decode(encode(object()))
    assert " at 0x…" in show_enc(encode(object())), "addresses are not part of an answer"


def test_a_container_subclass_whose_own_storage_is_empty_is_its_attributes() -> None:
    enc = encode(Barrel([3, 1, 2]))
    assert exact(enc), enc
    again = decode(enc, resolve)
    assert type(again) is Barrel and again.lists == [[3, 1, 2]] and len(again) == 3
    assert not exact(encode(Tagged([1, 2]))), "a list subclass with items in the list itself is not its __dict__"


def test_an_iterator_over_a_sequence_is_its_items_still_to_come_and_none_is_taken() -> None:
    items = iter([1, "a", 3])
    next(items)
    enc = encode(items)
    assert enc == ["it", [["s", "a"], ["i", "3"]]] and exact(enc)
    assert list(items) == ["a", 3], "encoding takes no item"
    backwards = reversed([1, 2, 3])
    assert decode(encode(backwards)) == Iter((3, 2, 1)) and list(backwards) == [3, 2, 1]
    assert list(decode(enc, resolve)) == ["a", 3], "in the box: an iterator again"
    assert not exact(encode(iter(range(10**12)))), "too many items: opaque, never made"
    assert not exact(encode(x for x in [1])), "a generator is code, not data"


def test_a_range_comes_back_through_its_constructor() -> None:
    assert encode(range(2, 10, 3)) == ["rg", "2,10,3"] and decode(["rg", "2,10,3"]) == range(2, 10, 3)


def test_a_combination_of_flags_comes_back_by_its_members_names() -> None:
    """parse's Parser keeps `re.IGNORECASE | re.DOTALL`: no member of that name (Python 3.9 names it None)."""
    import re

    for flags in (re.IGNORECASE | re.DOTALL, re.IGNORECASE, re.RegexFlag(0)):
        enc = encode(flags)
        assert decode(enc, lambda name: re.RegexFlag) == flags, enc
    assert encode(re.IGNORECASE | re.DOTALL)[2] == "IGNORECASE|DOTALL"


def test_a_datetime_in_a_named_zone_comes_back_in_that_zone_in_the_box_and_at_its_offset_outside() -> None:
    """humanize's naturaldate on `datetime(…, tzinfo=ZoneInfo("Europe/Paris"))`."""
    import datetime as dt
    import zoneinfo

    when = dt.datetime(2024, 7, 1, 12, 30, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
    enc = encode(when)
    assert enc == ["dtm", "2024-07-01T12:30:00+02:00", "Europe/Paris"]
    back = decode(enc, lambda name: None)
    assert back == when and back.tzinfo == when.tzinfo
    outside = decode(enc)
    assert outside == when and outside.utcoffset() == dt.timedelta(hours=2)


def test_an_opaque_list_keeps_a_few_of_its_items_spread_over_it_and_the_encoding_under_way_its_budget() -> None:
    barrel = Barrel([])
    barrel.lists = [list(range(n * 1000, (n + 1) * 1000))[::-1] for n in range(8)]  # too long to be plain data
    enc = encode(barrel, budget=400)
    lists = dict(enc[2])["lists"]
    assert enc[:2] == ["o", "tests.sandbox.test_plain:Barrel"] and lists[0] == "?" and not exact(enc)
    assert len(lists[3]) == 8 and all(inner[0] == "?" and len(inner[3]) == 10 for inner in lists[3])
    assert [int(e[1]) for e in lists[3][1][3]] == list(range(1999, 999, -100)), "spread over the list"
    wide = encode({"big": list(range(5000)), "after": [1, 2]}, budget=400)
    assert wide[0] == "?", "past its budget the whole value is opaque, as ever"
    assert encode([list(range(5000)), "x"], budget=400)[3][1] == ["s", "x"]
    assert len(encode(list(range(5000)))) == 4 and len(encode(object())) == 3, "only lists and tuples keep items"
    assert [int(e[1]) for e in encode([*range(14), object()], budget=400)[3]] == [0, 1, 3, 4, 6, 7, 9, 10, 12, 13]


class Node:
    def __init__(self, parent: Node | None = None) -> None:
        self.parent, self.children = parent, [object()]
        if parent is not None:
            parent.children.append(self)


def test_a_sample_of_a_value_that_holds_itself_ends_and_is_charged_to_the_encoding_under_way() -> None:
    root = Node()
    for _ in range(300):
        Node(Node(root))
    enc = encode(root, budget=400)
    assert enc[0] == "o" and len(json.dumps(enc)) < 60_000, len(json.dumps(enc))
    again = encode(root, budget=400)
    assert again == enc, "the same each time: no budget left behind"
    assert _parts(dict(enc[2])["children"]) <= 1 + 100, "the sample's parts: at most SAMPLE_PARTS"


def _parts(enc: Any) -> int:
    return 1 + sum(_parts(x) for x in enc[1:] for x in (x if isinstance(x, list) else []) if isinstance(x, list))
