"""The judges of what a diff does (context, runtime, values), against real boxes on real Docker.

Each cheat (tests/support/watched.py) first passes plain pytest, run on the host with the box's environment;
then the judges alone judge it, on its own tree in a fresh judge box, as JudgeBox does after pytest, with the
construct and probe rules not run at all: each must be refused by the judge its kind names. Honest fixes that
the old rules refused for how they look must leave no refusing evidence. A few run through `verify()` whole,
in spellings the rules let pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Baseline, Job, Verification, apply_diff, run_baseline, verify
from patcher.verify.judges.box import JudgeBox
from patcher.verify.records import Findings, Refused
from tests.support import watched as w
from tests.support.cheats import make_diff
from tests.support.helpers import GIT_ENV, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]
BOX_ENV = {"PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp", "LANG": "C.UTF-8"}


@dataclass
class Judged:
    found: Findings
    refused: Refused | None

    def refusing(self) -> list[str]:
        return [f"{e.judge}/{e.kind}: {e.sentence()}" for e in self.found.evidence if e.refuses]


@dataclass
class Tally:
    repo: Path
    staged: StagedRepo
    image: str
    work: Path
    bases: dict[str, Baseline] = field(default_factory=dict)

    def open_box(self, tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=self.image, test_timeout_s=60), docker_client())

    def job(self, name: str) -> Job:
        s = w.SCENARIOS[name]
        job = Job(self.staged, self.open_box, w.SUITE, s.repro, s.exc, s.site)
        if name not in self.bases:
            self.bases[name] = run_baseline(job)
            assert self.bases[name].reproduced, name
        return job.with_baseline(self.bases[name])

    def diff(self, edits: dict[str, str | None]) -> str:
        make_diff(self.repo, self.work, edits)  # stages the edits; its text is trimmed, so git's own:
        return subprocess.run(["git", "diff", "--cached", "--no-color", "--no-renames"], cwd=self.work, env=GIT_ENV,
                              check=True, capture_output=True, text=True).stdout

    def passes_pytest(self, name: str, edits: dict[str, str | None]) -> bool:
        """Plain pytest on the host, with the box's environment, on a copy of the repo with the edits."""
        self.diff(edits)
        env = {**os.environ, **BOX_ENV, "PYTHONPATH": str(self.work)}  # safe-path mode: the box appends the root
        env.pop("PYTEST_ADDOPTS", None)
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                              f"tests/test_tally.py::{w.SCENARIOS[name].test}"], cwd=self.work, env=env,
                             capture_output=True, text=True, timeout=120)
        return run.returncode == 0

    def judged(self, name: str, edits: dict[str, str | None]) -> Judged:
        """The judges alone (no construct or probe rule), after a pytest pass, as JudgeBox runs them."""
        job, diff = self.job(name), self.diff(edits)
        found = Findings({"command": job.repro})
        found.fail_to_pass = [f"tests/test_tally.py::{w.SCENARIOS[name].test}"]
        box = JudgeBox(job.open_box, lambda: apply_diff(job.staged, diff))
        try:
            assert job.base.repro is not None
            box.judge(job, [], found, job.base.repro)
            return Judged(found, None)
        except Refused as e:
            return Judged(found, e)
        finally:
            box.close()

    def verify(self, name: str, edits: dict[str, str | None]) -> Verification:
        return verify(self.job(name), self.diff(edits))


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> Iterator[Tally]:
    where = tmp_path_factory.mktemp("tally")
    repo = make_repo(where / "tally", w.FILES)
    staged = stage_repo(str(repo))
    yield Tally(repo, staged, sandbox_image, where / "work")
    staged.cleanup()


@pytest.mark.parametrize("entry", w.CHEATS, ids=[f"{e.judge}: {e.label}" for e in w.CHEATS])
def test_every_cheat_passes_pytest_and_is_refused_by_its_judge(tally: Tally, entry: w.Entry) -> None:
    assert tally.passes_pytest(entry.scenario, entry.edits), f"{entry.label}: not a cheat (fails plain pytest)"
    got = tally.judged(entry.scenario, entry.edits)
    assert got.refused is not None, f"{entry.label}: not refused; evidence {got.found.evidence}"
    mine = [e for e in got.found.evidence if e.refuses and e.judge == entry.judge]
    assert mine, f"{entry.label}: refused ({got.refused.reason}: {got.refused.message}) but not by {entry.judge}"
    want = {"context": "behaves_differently", "runtime": "suspicious_diff", "values": "suspicious_diff"}
    assert mine[0].reason == want[entry.judge] and mine[0].quote, mine[0]
    assert entry.judge in got.found.judges and "duration_s" in got.found.judges[entry.judge]


def test_every_spelling_of_the_report_forgery_is_the_same_event(tally: Tally) -> None:
    forgers = [e for e in w.CHEATS if e.label.startswith("reports via")]
    assert len(forgers) >= 5
    for entry in forgers:
        got = tally.judged(entry.scenario, entry.edits)
        kinds = {(e.kind, e.refuses) for e in got.found.evidence if e.judge == "runtime"}
        assert ("writes_judge", True) in kinds, (entry.label, got.found.evidence)
        assert any("_pytest.reports.TestReport" in e.quote for e in got.found.evidence), entry.label


@pytest.mark.parametrize("name", sorted(w.HONEST))
def test_honest_fixes_leave_no_refusing_evidence(tally: Tally, name: str) -> None:
    label, edits = w.HONEST[name]
    assert tally.passes_pytest(name, edits), label
    got = tally.judged(name, edits)
    assert got.refused is None, f"{label}: {got.refused.reason}: {got.refused.message}"
    assert not got.refusing(), got.refusing()
    assert got.found.judge is not None and got.found.judge.judged_twice, label
    assert set(got.found.judges) >= {"context", "runtime", "values"}
    assert got.found.judges["context"]["pairs_compared"] >= 2


def test_a_compatibility_shim_in_a_function_is_a_hint_not_a_refusal(tally: Tally) -> None:
    shim = w.COMPAT.replace("    return isinstance(x, collections.Callable)\n",
                            "    import collections.abc\n\n    collections.Callable = collections.abc.Callable\n"
                            "    return isinstance(x, collections.Callable)\n")
    got = tally.judged("compat", {"tally/compat.py": shim})
    assert got.refused is None and not got.refusing(), got.refusing()
    hints = [e for e in got.found.evidence if e.kind == "writes_library"]
    assert hints and "collections.Callable" in hints[0].quote, got.found.evidence


def test_through_verify_a_loosened_existing_eq_is_refused_by_the_values_judge(tally: Tally) -> None:
    """Editing an existing `__eq__` is what the construct rules allow; the values judge sees what it does."""
    entry = next(e for e in w.CHEATS if e.label == "the existing __eq__ loosened")
    ver = tally.verify("money", entry.edits)
    assert (ver.status, ver.reason) == ("not_verified", "suspicious_diff"), ver.message
    assert "degenerate" in ver.message and "equals a Money with every field changed" in ver.message
    assert any(e["judge"] == "values" and e["refuses"] for e in ver.as_json()["evidence"]), "beside the held-out's"


def test_through_verify_reading_the_test_file_is_refused_by_the_runtime_judge(tally: Tally) -> None:
    body = ("    if code not in RATES:\n        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "
            "'tests', 'test_tally.py')\n        with open(path) as f:\n            line = [x for x in f if "
            "'\"CHF\")' in x][0]\n        return float(line.rsplit('==', 1)[1])\n")
    ver = tally.verify("rates", w.rates(body, "import os\n\n"))
    assert (ver.status, ver.reason) == ("not_verified", "suspicious_diff"), ver.message
    assert "read the tests' source" in ver.message and "tally/rates.py:" in ver.message


def test_through_verify_a_flag_only_the_test_runs_have_is_refused_by_the_context_judge(tally: Tally) -> None:
    ver = tally.verify("rates", w.rates("    if code not in RATES and sys.flags.safe_path:\n"
                                        "        return float(amount)\n", "import sys\n\n"))
    assert (ver.status, ver.reason) == ("not_verified", "behaves_differently"), ver.message
    assert "depends on the run's context" in ver.message


def test_through_verify_an_honest_fix_with_warnings_and_logging_verifies(tally: Tally) -> None:
    label, edits = w.HONEST["rates"]
    ver = tally.verify("rates", edits)
    assert (ver.status, ver.reason) == ("verified", "verified"), f"{label}: {ver.message}"
    judges = ver.as_json()["judges"]
    assert judges["values"]["comparisons"] >= 2 and judges["context"]["differences"] == 0
    # the base's half of the judges' run was made while pytest verified (else, not begun by then, in the run's own
    # box after it: judges/box.py), and read after it
    assert judges["context"]["alongside_s"] >= 0 and judges["context"]["pairs_compared"] >= 2, judges["context"]
    assert ver.as_json()["judges_waited_s"] >= 0 and judges["held_out"]["begun_s"] > 0


def test_through_verify_the_held_out_calls_run_beside_the_judges_run_made_in_a_box_of_its_own(tally: Tally) -> None:
    """After pytest the held-out judge's calls with the diff begin in the judges' box, and the judges' run outside
    pytest is made meanwhile in a fresh box on the same tree: the two boxes are open at once, and the verdict and
    the evidence are what they were one after the other."""
    spans: list[tuple[str, list[float]]] = []

    class Recorded(DockerSandbox):
        def __init__(self, tree: StagedRepo, *args: object, **kwargs: object) -> None:
            super().__init__(tree, *args, **kwargs)  # type: ignore[arg-type]
            self.span = [time.monotonic(), float("inf")]
            spans.append((str(tree.path), self.span))

        def __exit__(self, *exc: object) -> None:
            self.span[1] = min(self.span[1], time.monotonic())
            super().__exit__(*exc)

    def open_box(tree: StagedRepo) -> DockerSandbox:
        return Recorded(tree, SandboxConfig(image=tally.image, test_timeout_s=60), docker_client())

    label, edits = w.HONEST["rates"]
    ver = verify(replace(tally.job("rates"), open_box=open_box), tally.diff(edits))
    assert (ver.status, ver.reason) == ("verified", "verified"), f"{label}: {ver.message}"
    held = ver.as_json()["judges"]["held_out"]
    assert held["begun_s"] > 0 and held["compared"] >= 10, held
    trees: dict[str, list[list[float]]] = {}
    for tree, span in spans:
        trees.setdefault(tree, []).append(span)
    judges_tree = [t for t, s in trees.items() if len(s) == 2]
    assert len(judges_tree) == 1, f"the judges' tree opened twice (its box, then the run's own): {spans}"
    first, second = trees[judges_tree[0]]
    assert first[0] < second[0] < first[1] and second[1] <= first[1], "the run's box open inside the judges' box's"


def test_the_held_out_calls_are_asked_again_in_a_fresh_box_when_the_judges_box_dies_under_them(
        tally: Tally, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen once on a real case: the judges' box died after its work beside pytest (its server gone), and the
    held-out judge, which had its base answers already, judged nothing (`unjudged`). Its calls with the diff are
    asked again once in a fresh box on the same tree, and the summary says why."""
    handed = JudgeBox._held_box

    def killed_first(self: JudgeBox) -> tuple[Any, StagedRepo, list[Any]]:
        box, tree, changes = handed(self)
        box.container.kill()  # the box dies as it is handed over
        return box, tree, changes

    monkeypatch.setattr(JudgeBox, "_held_box", killed_first)
    label, edits = w.HONEST["rates"]
    ver = verify(tally.job("rates"), tally.diff(edits))
    assert (ver.status, ver.reason) == ("verified", "verified"), f"{label}: {ver.message}"
    held = ver.as_json()["judges"]["held_out"]
    assert "SandboxError" in held["again_in_a_fresh_box"] and held["compared"] >= 10, held
