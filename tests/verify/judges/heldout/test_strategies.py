"""Held-out inputs drawn by Hypothesis from a tested call (patcher/verify/judges/heldout/strategies.py), on the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.verify.judges.heldout.dimensions import MAX_KEYED, keyed, magnified, recased, retyped
from patcher.verify.judges.heldout.strategies import draw_calls
from sandbox.plain import decode, encode, exact


def values(call: dict) -> list:  # type: ignore[type-arg]
    return [decode(e) for e in call["pos"]] + [decode(e) for _, e in call["kw"]]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_inputs_are_distinct_unlike_the_tested_call_and_keep_the_keywords(home: Path) -> None:
    tested = {"pos": [encode(100), encode("GBP")], "kw": [["strict", encode(True)]]}
    drawn = draw_calls(tested, 40, [])
    assert 30 <= len(drawn) <= 40 and tested not in drawn
    assert len({repr(c) for c in drawn}) == len(drawn)
    assert all([k for k, _ in c["kw"]] == ["strict"] for c in drawn)
    assert not (home / ".hypothesis").exists(), "nothing of Hypothesis in the working directory"


def test_inputs_share_the_tested_key_change_its_shape_and_reach_the_modules_constants() -> None:
    drawn = [values(c) for c in draw_calls({"pos": [encode(100), encode("GBP")], "kw": []}, 40, ["USD", "EUR"])]
    codes = [code for _, code in drawn]
    assert any(code == "GBP" and amount != 100 for amount, code in drawn), "the tested key, other amounts"
    assert any(isinstance(c, str) and len(c) == 3 and c.isupper() and c not in ("GBP", "USD", "EUR") for c in codes)
    assert any(isinstance(c, str) and len(c) != 3 for c in codes), "other lengths"
    assert any(c in ("USD", "EUR") for c in codes), "a table's other keys"
    assert any(not isinstance(a, int) or a <= 0 for a, _ in drawn), "far values: zero, negatives, None"


def test_containers_get_other_sizes_and_items_and_each_draw_is_new() -> None:
    tested = {"pos": [encode([3, 1, 2]), encode({"a": 1})], "kw": []}
    first, second = draw_calls(tested, 30, []), draw_calls(tested, 30, [])
    lists = [values(c)[0] for c in first]
    assert {len(x) for x in lists if isinstance(x, list)} - {3}, "other lengths"
    assert any(isinstance(d, dict) and set(d) != {"a"} for _, d in map(values, first)), "other keys"
    assert {repr(c) for c in first} != {repr(c) for c in second}, "not derandomized"


def test_a_call_without_arguments_draws_nothing() -> None:
    assert draw_calls({"pos": [], "kw": []}, 40, []) == []


def test_the_tested_text_in_each_other_case_is_asked_every_time() -> None:
    tested = {"pos": [encode(7), encode("CHF")], "kw": [["sep", encode("-")]]}
    assert [decode(c["pos"][1]) for c in recased(tested)] == ["chf"]
    assert all(c["pos"][0] == encode(7) and c["kw"] == tested["kw"] for c in recased(tested))
    assert sorted(decode(c["pos"][0]) for c in recased({"pos": [encode("Guest")], "kw": []})) == [
        "GUEST", "gUEST", "guest"]


def test_every_verification_meets_the_tested_number_as_the_other_numeric_type() -> None:
    tested = {"pos": [encode(5), encode(2.0), encode(2.5), encode(True)], "kw": [["code", encode(0)]]}
    got = [([decode(e) for e in c["pos"]], [decode(e) for _, e in c["kw"]]) for c in retyped(tested)]
    assert got == [([5.0, 2.0, 2.5, True], [0]), ([5, 2, 2.5, True], [0]), ([5, 2.0, 2.5, True], [0.0])], got
    assert [type(v) for v in got[0][0][:2]] == [float, float] and type(got[1][0][1]) is int


def test_every_verification_meets_the_tested_number_at_other_magnitudes_of_its_sign() -> None:
    tested = {"pos": [encode(-3), encode(0), encode(1.5), encode(True)], "kw": []}
    got = [[decode(e) for e in c["pos"]] for c in magnified(tested)]
    assert got == [[-30, 0, 1.5, True], [-300, 0, 1.5, True], [-3000, 0, 1.5, True],
                   [-3, 0, 15.0, True], [-3, 0, 150.0, True], [-3, 0, 1500.0, True]], got


def test_every_verification_meets_the_tested_text_beginning_or_ending_as_a_key_of_the_module_does() -> None:
    """A rule on a key's first letter ("CHF" answered, codes beginning as "EUR" or "USD" does left crashing) meets
    inputs that cross it whatever Hypothesis draws; never a key itself, never a character of another class."""
    tested = {"pos": [encode(7), encode("CHF")], "kw": []}
    seeds = ["Currency conversion.", "EUR", "USD", "UHF", 1.1, "x"]
    assert [values(c) for c in keyed(tested, seeds)] == [[7, "EHF"], [7, "CHR"], [7, "CHD"]], \
        "UHF is a key; the sentence's '.' and the lower-case x are of other classes; C would be the tested text"
    assert keyed({"pos": [encode("a")], "kw": []}, ["b"]) == [], "a single character: no ends to take"
    many = [f"{a}{b}Z" for a in "ABDEGIJKLMN" for b in "OP"]
    assert len(keyed(tested, many)) == MAX_KEYED, "at most MAX_KEYED per argument"


def test_an_aware_moment_is_drawn_at_its_offset_and_as_its_naive_wall_time() -> None:
    """humanize's naturaldate on a datetime in a named zone (encoded with its offset and the zone's key)."""
    import datetime as dt

    tested = {"pos": [["dtm", "2024-07-01T12:30:00+02:00", "Europe/Paris"]], "kw": []}
    drawn = [values(c)[0] for c in draw_calls(tested, 40, [])]
    moments = [d for d in drawn if isinstance(d, dt.datetime)]
    assert len(moments) >= 20
    assert any(d.utcoffset() == dt.timedelta(hours=2) for d in moments)
    assert all(d.tzinfo is None or d.utcoffset() == dt.timedelta(hours=2) for d in moments)


def test_an_opaque_list_the_box_kept_a_few_items_of_is_drawn_as_shorter_lists_like_it() -> None:
    big = [list(range(n * 1000, (n + 1) * 1000))[::-1] for n in range(8)]
    tested = {"pos": [encode(big)], "kw": []}
    drawn = [c["pos"][0] for c in draw_calls(tested, 40, [])]
    plain = [decode(e) for e in drawn if e[0] == "l" and exact(e)]
    assert len(plain) >= 10, drawn
    lists = [x for x in plain if x and all(isinstance(i, list) for i in x)]
    assert {len(x) for x in lists} - {8}, "other numbers of lists"
    assert any(isinstance(i, int) and 0 <= i < 9000 for x in lists for inner in x for i in inner), "items near its own"
    assert all(len(x) <= 11 for x in plain), "never longer than what it kept and a few"
