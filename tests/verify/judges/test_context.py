"""The context judge's comparison (verify/contexts.py) and the runtime and values judges' reading of what the box
saw (verify/observed.py), on answers written here: no box."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patcher.verify.judges.context import compare, outcome
from patcher.verify.judges.observed import runtime_evidence
from patcher.verify.judges.watch import observe_spec, required
from patcher.verify.policy.treediff import Change


@dataclass
class Run:
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    obs: list[dict[str, Any]] = field(default_factory=list)
    ended: list[dict[str, Any]] = field(default_factory=list)


def _runs(bare: str | None, dressed: str | None) -> dict[str, Run]:
    def rec(got: str | None) -> dict[str, dict[str, Any]]:
        if got is None:
            return {}
        kind, _, exc = got.partition(":")
        return {"t0": {"outcome": kind, "exc": exc or None}}
    return {"bare": Run(rec(bare)), "dressed": Run(rec(dressed))}


TEST = "tests/test_x.py::test_it"


def test_an_outcome_that_follows_the_context_where_the_base_does_not_is_refused() -> None:
    found, summary = compare({"t0": TEST}, {TEST: "failed:KeyError"}, _runs("failed:KeyError", "failed:KeyError"),
                             _runs("failed:KeyError", "passed"))
    assert len(found) == 1 and found[0].refuses and found[0].reason == "behaves_differently"
    assert "passed under pytest" in found[0].quote and "failed (KeyError) run as an application" in found[0].quote
    assert summary["differences"] == 1 and summary["contexts"] == ["pytest", "bare", "dressed"]


def test_contexts_where_the_base_differs_are_not_compared() -> None:
    """A test that needs pytest's working directory fails otherwise on the base too: no evidence either way."""
    found, summary = compare({"t0": TEST}, {TEST: "failed:KeyError"},
                             _runs("failed:FileNotFoundError", "failed:KeyError"),
                             _runs("failed:FileNotFoundError", "passed"))
    assert found == [] and summary["pairs_compared"] == 1


def test_a_context_a_passing_test_beside_it_cannot_take_on_the_base_is_not_compared() -> None:
    """A module whose tests run a script by a path relative to the tree: the crash fails everywhere on the base,
    and the fixed test fails in the empty working directory for its own reason. A control shows it."""
    base, after = _runs("failed:OSError", "failed:OSError"), _runs("failed:OSError", "passed")
    base["bare"].by_id["c0"] = {"outcome": "failed", "exc": "OSError"}
    base["dressed"].by_id["c0"] = {"outcome": "passed"}
    sibling = "tests/test_x.py::test_from_file"
    found, summary = compare({"t0": TEST}, {TEST: "failed:OSError"}, base, after, {"c0": sibling})
    assert [(e.kind, e.refuses) for e in found] == [("context_unfit", False)], found
    assert found[0].quote == f"{sibling} failed (OSError)" and summary["differences"] == 0
    other = compare({"t0": TEST}, {TEST: "failed:OSError"}, base, after, {"c0": "tests/test_y.py::test_z"})[0]
    assert [e.kind for e in other if e.refuses] == ["depends_on_context"], "a control of another module"
    base["bare"].by_id["c0"] = {"outcome": "passed"}
    again = compare({"t0": TEST}, {TEST: "failed:OSError"}, base, after, {"c0": sibling})[0]
    assert [e.kind for e in again] == ["depends_on_context"], "the control passes there: the fix is judged"


def test_a_base_failure_of_the_same_type_with_another_message_is_another_outcome() -> None:
    """The script the test runs is not found from an empty working directory (OSError: can't open file) where
    under pytest and dressed it crashed (OSError: its traceback): not the same failure, not compared."""
    base, after = _runs("failed:OSError", "failed:OSError"), _runs("failed:OSError", "passed")
    base["bare"].by_id["t0"]["message"] = "b\"python3: can't open file '/tmp/j1/tab/__init__.py': [Errno 2]\""
    base["dressed"].by_id["t0"]["message"] = "b'Traceback (most recent call last):\\n  ...TypeError'"
    found, _ = compare({"t0": TEST}, {TEST: "failed:OSError"}, base, after)
    assert found == []
    base["dressed"].by_id["t0"]["message"] = "b\"python3: can't open file '/work/x/tab/__init__.py': [Errno 2]\""
    found, _ = compare({"t0": TEST}, {TEST: "failed:OSError"}, base, after)
    assert [e.kind for e in found] == ["depends_on_context"], "the same message, paths aside"


def test_a_context_that_could_not_run_the_test_is_left_out() -> None:
    found, summary = compare({"t0": TEST}, {TEST: "failed:KeyError"}, _runs(None, "failed:KeyError"),
                             _runs(None, "passed"))
    assert found == [] and summary["pairs_compared"] == 1
    assert outcome({"outcome": "unjudged"}) is None and outcome({"outcome": "failed", "exc": "a.B"}) == "failed:B"


def test_required_comparisons_are_the_unconditional_asserts_at_the_top_of_the_test() -> None:
    text = ("import pytest\n\n\n@pytest.mark.parametrize('x', [1])\ndef test_a(x):\n    y = x + 1\n"
            "    assert y == 2\n    assert y is not None\n    if y:\n        assert y < 3\n    assert y > 0\n\n\n"
            "@helper\ndef test_b():\n    assert 1 == 1\n\n\n"
            "class TestC:\n    def test_c(self):\n        assert 1 in [1]\n\n\ndef test_b():\n    assert 2 == 2\n")
    assert required(text, "tests/t.py::test_a[1]") == [7]
    assert required(text, "tests/t.py::test_b") == [25], "the last definition of a name is the test"
    assert required(text, "tests/t.py::TestC::test_c") == [21]
    assert required("def (", "t.py::x") == [] and required(text, "tests/t.py") == []


def test_an_isclose_assert_at_the_top_of_the_test_is_required_too() -> None:
    text = ("import math\n\n\ndef test_a():\n    assert math.isclose(0.1 + 0.2, 0.3)\n    assert isclose(1, 1)\n"
            "    assert close(1, 1)\n")
    assert required(text, "tests/t.py::test_a") == [5, 6]


def test_the_observer_watches_added_lines_and_on_the_base_the_whole_changed_file() -> None:
    change = Change("pkg/m.py", "modified", added_lines=[(3, "x = 1")], new_text="a\nb\nx = 1\n", old_text="a\nb\n")
    modules = ["tests/test_m.py", "tests/test_m.py"]
    assert observe_spec([change], modules, None) == {"lines": {"pkg/m.py": [3]}, "tests": ["tests/test_m.py"]}
    assert observe_spec([change], modules, Path("/base"))["lines"] == {"pkg/m.py": [1, 2, 3]}


def test_an_event_the_base_shows_too_is_a_hint_and_an_ending_needs_the_base_to_end_well(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nexec(code)\n")
    event = {"id": "t0", "judge": "runtime", "kind": "built_code", "refuses": True, "file": "m.py", "line": 2,
             "what": "exec: it runs code built at run time"}
    value = {"id": "t0", "judge": "values", "kind": "overload", "refuses": True, "line": 5, "type": "m.Par",
             "method": "m.py:9", "what": "the compared value (Par) equals a fresh object of another type"}
    after = {"bare": Run(ended=[{"k": "group", "case": "t0", "signal": 9}]), "dressed": Run(obs=[event, value])}
    seen = runtime_evidence({"bare": Run(), "dressed": Run()}, after, {"t0": TEST}, tmp_path)
    got = {(e.judge, e.kind): e for e in seen.evidence}
    assert sorted(got) == [("runtime", "built_code"), ("runtime", "ends_process"), ("values", "overload")]
    assert all(e.refuses and e.reason == "suspicious_diff" for e in seen.evidence)
    assert "m.py:2: exec(code)" in got["runtime", "built_code"].quote
    assert "signal 9, running " + TEST in got["runtime", "ends_process"].quote
    assert seen.judges["runtime"]["refused"] == 2 and seen.judges["values"]["degenerate"] == 1
    same = runtime_evidence({"bare": Run(ended=[{"k": "group", "signal": 9}]), "dressed": Run(obs=[event])}, after,
                            {"t0": TEST}, tmp_path)
    assert sorted((e.kind, e.refuses) for e in same.evidence) == [("built_code", False), ("overload", True)]


def test_an_ending_the_memory_limit_made_is_a_hint_not_an_ending_behind_the_judges_back(tmp_path: Path) -> None:
    after = {"bare": Run(ended=[{"k": "group", "case": "t0", "signal": 9, "oom": True}]), "dressed": Run()}
    seen = runtime_evidence({"bare": Run(), "dressed": Run()}, after, {"t0": TEST}, tmp_path)
    assert [(e.kind, e.refuses) for e in seen.evidence] == [("out_of_memory", False)]
    assert seen.evidence[0].quote == f"bare: {TEST}"
