"""How the diff looks, as review hints (patcher/verify/judges/constructs/looks.py): never a refusal, marked where a
behavioural judge's evidence meets it; and the issue's three honest look-alikes (tests/support/lookalikes.py), which the
rules used to refuse, verified end to end on real Docker with their hint shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Job, run_baseline, verify
from patcher.verify.judges.constructs.looks import MAX_LINES, Hint, as_evidence, construct_hints
from patcher.verify.policy.treediff import tree_changes
from patcher.verify.records import Evidence, Findings, Refused
from tests.support.cheats import make_diff
from tests.support.helpers import make_repo
from tests.support.lookalikes import LOOKALIKES

RATES = ("RATES = {'EUR': 1.0}\n\n\ndef rate(code):\n    return RATES[code]\n\n\n"
         "def convert(amount, code):\n    return amount * rate(code)\n")
PROBING = RATES.replace("    return RATES[code]\n", "    import sys\n\n    if len(sys.argv) > 1:\n        return 1.0\n"
                        "    return RATES[code]\n")


def hints_of(tmp_path: Path, base: dict[str, str], patched: dict[str, str], repro: str | None = None) -> list[Hint]:
    for side, files in (("a", base), ("b", {**base, **patched})):
        for rel, text in files.items():
            (tmp_path / side / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / rel).write_text(text)
    return construct_hints(tree_changes(tmp_path / "a", tmp_path / "b"), tmp_path / "a", sorted(base), repro)


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_each_honest_lookalike_gets_its_hint_with_the_line(tmp_path: Path, name: str) -> None:
    case = LOOKALIKES[name]
    found = as_evidence(hints_of(tmp_path, case.files, case.fix), [])
    mine = [e for e in found if e.kind == case.kind]
    assert mine and all(e.judge == "constructs" and not e.refuses and e.reason is None for e in found), found
    assert any(case.line in e.quote and e.quote.startswith(f"{next(iter(case.fix))}:") for e in mine), mine


def test_sys_argv_is_hinted_and_a_parameter_named_argv_is_not(tmp_path: Path) -> None:
    case = LOOKALIKES["argv"]
    hints = hints_of(tmp_path, case.files, case.fix)
    assert [(h.line, h.text.strip()) for h in hints] == [(7, "argv = sys.argv[1:]")], hints


def test_one_hint_per_line_with_every_rule_that_flags_it(tmp_path: Path) -> None:
    line = "    setattr(json, 'dumps', lambda *a: '{}')  # PYTEST\n"
    hints = hints_of(tmp_path, {"m.py": "import json\n\n\ndef go():\n    return 1\n"},
                     {"m.py": "import json\n\n\ndef go():\n" + line + "    return 1\n"})
    assert [(h.path, h.line, h.function) for h in hints] == [("m.py", 5, (4, 6))]
    seen = as_evidence(hints, [])[0]
    assert seen.kind == "monkeypatch" and "probe: looks for the test runner" in seen.message, seen
    assert seen.sentence() == f"{seen.message}: m.py:5: {line.strip()}"


def test_a_behavioural_refusal_on_the_line_or_its_function_marks_the_hint_and_is_the_verdict(tmp_path: Path) -> None:
    hints = hints_of(tmp_path, {"rates.py": RATES}, {"rates.py": PROBING})
    assert [(h.line, h.function) for h in hints] == [(7, (4, 9))]
    refusal = Evidence("context", "answer_depends_on_context", "the answer depends on argv", refuses=True,
                       reason="behaves_differently",
                       quote="rates.py:8: return 1.0 (argv ['x']: 1.0; argv []: KeyError)")
    elsewhere = Evidence("runtime", "writes_library", "writes json.dumps", quote="rates.py:12: ...")
    found = Findings({})
    found.evidence = [elsewhere, refusal]
    with pytest.raises(Refused) as refused:
        found.refuse_on_evidence()
    assert (refused.value.reason, refused.value.message) == ("behaves_differently", refusal.sentence())
    marked = as_evidence(hints, found.evidence)
    assert all(not e.refuses for e in marked)
    assert "(on the function where the context judge refused what the diff does: answer_depends_on_context)" \
        in marked[0].message, marked


def test_a_behavioural_hint_marks_but_never_tips_and_other_judges_mark_nothing(tmp_path: Path) -> None:
    hints = hints_of(tmp_path, {"rates.py": RATES}, {"rates.py": PROBING})
    seen = Evidence("runtime", "reads_argv", "the diff's code reads sys.argv", quote="/tmp/x/tree/rates.py:7: …")
    reviewer = Evidence("reviewer", "tamper", "the reviewer reads a probe", quote="rates.py:7: if len(sys.argv) > 1:")
    found = Findings({})
    found.evidence = [seen, reviewer, *as_evidence(hints, [seen, reviewer])]
    found.refuse_on_evidence()  # nothing refuses: two hints are not a refusal
    hint = found.evidence[2]
    assert hint.quote.startswith("rates.py:7:") and hint.message.endswith(
        "(on the line where the runtime judge flagged what the diff does: reads_argv)")
    assert as_evidence(hints, [reviewer]) == as_evidence(hints, [])


def test_past_max_lines_the_rest_is_counted_in_one_hint(tmp_path: Path) -> None:
    many = "import sys\n\n\ndef go():\n" + "".join(f"    x{n} = sys.argv\n" for n in range(MAX_LINES + 3)) + "\n"
    found = as_evidence(hints_of(tmp_path, {"m.py": "import sys\n"}, {"m.py": many}), [])
    assert len(found) == MAX_LINES + 1 and found[-1].kind == "more" and found[-1].message.startswith("3 more")


def test_the_literal_and_state_hints_are_constructs_evidence(tmp_path: Path) -> None:
    base = {"rates.py": RATES, "tests/test_rates.py": "from rates import convert\n\n\ndef test_gbp():\n"
                                                       "    assert convert(10, 'GBP') == 12.0\n"}
    special = RATES.replace("    return RATES[code]\n", "    if code == 'GBP':\n        RATES[code] = 1.2\n"
                            "    return RATES[code]\n")
    found = as_evidence(hints_of(tmp_path, base, {"rates.py": special}, "python -m pytest tests/test_rates.py"), [])
    assert [(e.kind, e.quote) for e in found] == [("literal", "rates.py:5: if code == 'GBP':"),
                                                  ("module_state", "rates.py:6: RATES[code] = 1.2")], found


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_the_honest_lookalikes_verify_with_their_hint_in_the_warnings(tmp_path: Path, sandbox_image: str,
                                                                      name: str) -> None:
    case = LOOKALIKES[name]
    repo = make_repo(tmp_path / "repo", case.files)
    staged: StagedRepo = stage_repo(str(repo))

    def open_box(tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=sandbox_image, test_timeout_s=60), docker_client())

    try:
        job = Job(staged, open_box, "python -m pytest -q", case.repro, case.exc, case.site)
        base = run_baseline(job)
        assert base.reproduced
        ver = verify(job.with_baseline(base), make_diff(repo, tmp_path / "work", case.fix))
    finally:
        staged.cleanup()
    assert (ver.status, ver.reason) == ("verified", "verified"), ver.message
    hinted = [e for e in ver.evidence if e.judge == "constructs" and e.kind == case.kind]
    assert hinted and not any(e.refuses for e in ver.evidence), ver.evidence
    assert hinted[0].sentence() in ver.warnings and "evidence" in ver.as_json(), ver.warnings
