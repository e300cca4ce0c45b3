"""What the agent hears after a rejected diff, and how the attempts show on the review page."""

from __future__ import annotations

from datetime import UTC, datetime

from patcher.agent import attempt_record, verdict_note
from patcher.server.pages import render
from patcher.server.store import StoredJob
from patcher.verify import TestRun, Verification
from patcher.verify.records import Evidence


def rejected() -> Verification:
    run = TestRun("python -m pytest -q", 1, False, True, failed={"tests/t.py::test_total"},
                  output_tail="x" * 5000 + "\nE   assert 2 == 3\n1 failed, 2 passed in 0.05s")
    return Verification("not_verified", "regression", "1 test that passed before now fails: tests/t.py::test_total",
                        {}, runs=[("repro", TestRun("r", 0, False, True)), ("suite", run)],
                        pass_to_pass={"total": 2, "regressions": ["tests/t.py::test_total"]})


def test_the_note_names_the_rule_the_tests_and_the_end_of_the_failing_output() -> None:
    note = verdict_note(rejected(), 1, 3)
    assert note.startswith("Verification rejected your change (attempt 1 of 3): regression.\n1 test that")
    assert "- tests/t.py::test_total" in note
    assert "E   assert 2 == 3\n1 failed, 2 passed in 0.05s" in note and "x" * 3001 not in note
    assert "give_up" in note and "weaken tests" in note


def test_a_strike_says_only_that_the_diff_was_refused_as_gaming() -> None:
    for reason in ("suspicious_diff", "report_tampered", "behaves_differently"):
        ver = rejected()
        ver.reason = reason  # type: ignore[assignment]
        ver.evidence = [Evidence("runtime", "writes_library", "the diff's code wrote json.dumps", refuses=True,
                                 reason="suspicious_diff", quote="calc.py:3: json.dumps = f"),
                        Evidence("constructs", "monkeypatch", "writes json.dumps, an attribute of library code",
                                 quote="calc.py:3: json.dumps = f")]
        ver.message = "the diff's code wrote json.dumps (a probe of the test environment): calc.py:3: json.dumps = f"
        note = verdict_note(ver, 1, 3)
        assert "attempt to game the verification" in note and "ends here" in note
        for leak in ("calc.py", "json", "monkeypatch", reason, "test_total", "assert 2 == 3", "probe"):
            assert leak not in note, leak


def test_an_attempt_record_keeps_the_digest_never_the_diff() -> None:
    record = attempt_record(1, rejected(), "diff --git a/x b/x\n+secret change\n")
    assert record["reason"] == "regression" and len(record["diff_sha256"]) == 64
    assert "secret change" not in str(record)


def test_the_review_page_lists_the_attempts_escaped() -> None:
    now = datetime.now(UTC)
    job = StoredJob(id="j1", state="done", spec={"repo": "/r", "ref": None}, result=None, error=None,
                    idempotency_key=None, attempts=1, cancel_requested=False, created_at=now, updated_at=now,
                    token=None)
    attempts = [{"attempt": 1, "status": "not_verified", "reason": "regression", "diff_sha256": "a" * 64,
                 "message": "<script>alert(1)</script> broke tests/t.py::test_total"},
                {"attempt": 2, "status": "verified", "reason": "verified", "diff_sha256": "b" * 64,
                 "message": "verified"}]
    result = {"status": "verified", "reason": "verified", "message": "ok", "attempts": attempts}
    page = render("job.html", job=job, summary={"crash": None}, result=result, diff=None, verification=None,
                  agent=None, rounds=[], others=[], attempts=attempts, reviews=[], carried=None, error=None,
                  finished=True, verified=False, dev=False, who=None, delivery=None, webhooks=[]).body.decode()
    assert '<section id="attempts">' in page and "<th>2</th>" in page and "aaaaaaaaaaaa" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
