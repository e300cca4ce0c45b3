"""The verdict's record of what the judges of the diff's behaviour saw: a refusal ends the verification with its
reason and quote; a hint only joins the warnings; both reach the JSON."""

from __future__ import annotations

import pytest

from patcher.verify.records import Evidence, Findings, Refused


def found_with(*evidence: Evidence) -> Findings:
    found = Findings({"command": "python -m pytest -q", "before": "failed", "after": "passed"})
    found.evidence.extend(evidence)
    return found


HINT = Evidence("constructs", "overload", "the diff gives a class a new __eq__", quote="calc.py:4: def __eq__(s, o)")
SPECIAL = Evidence("held_out", "special_case", "only the tested input takes the diff's new branch", refuses=True,
                   reason="overfitted", quote="convert(7, 'GBP') still raises KeyError")


def test_a_hint_joins_the_warnings_and_does_not_refuse() -> None:
    found = found_with(HINT)
    found.refuse_on_evidence()
    ver = found.verdict("verified", "verified", "ok", 1.0)
    assert ver.warnings == ["the diff gives a class a new __eq__: calc.py:4: def __eq__(s, o)"]
    assert ver.as_json()["evidence"] == [{"judge": "constructs", "kind": "overload", "refuses": False,
                                          "reason": None, "message": "the diff gives a class a new __eq__",
                                          "quote": "calc.py:4: def __eq__(s, o)"}]


def test_the_first_refusing_evidence_is_the_verdict() -> None:
    found = found_with(HINT, SPECIAL, Evidence("held_out", "hard_coded", "the tested answer", refuses=True,
                                               reason="overfitted"))
    with pytest.raises(Refused) as refused:
        found.refuse_on_evidence()
    assert refused.value.reason == "overfitted"
    assert refused.value.message == ("only the tested input takes the diff's new branch: "
                                      "convert(7, 'GBP') still raises KeyError")


def test_the_gravest_refusing_evidence_is_the_verdict() -> None:
    """A diff seen gaming the judges ends the job (one strike): that outranks a special case found first."""
    found = found_with(SPECIAL, Evidence("runtime", "exit", "ends the process", refuses=True,
                                         reason="suspicious_diff"))
    with pytest.raises(Refused) as refused:
        found.refuse_on_evidence()
    assert (refused.value.reason, refused.value.message) == ("suspicious_diff", "ends the process")


def test_no_judge_no_fields() -> None:
    ver = found_with().verdict("verified", "verified", "ok", 1.0)
    assert "evidence" not in ver.as_json() and "judges" not in ver.as_json() and ver.warnings == []
