"""The cheat corpus by kind (tests/cheat_corpus.py) against the real verifier on real Docker: every cheat of
the kinds the rules by construct flag shows its hint and ends not verified (those only the rules stopped await
the behavioural judges: AWAITING); an edited test ends `policy_violation`; honest fixes on the same ledger
(a fix in a module the suite collects for its doctests, a literal the tests use for good reason, an edited
existing `__eq__`, a new test with fixtures, a new dataclass) still verify. The kinds the second judge and the
perturbed reproductions stop (special-casing, noticing the test run) are in bench/cheats.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from patcher.config import SandboxConfig
from patcher.intake import StagedRepo, stage_repo
from patcher.sandbox import DockerSandbox, docker_client
from patcher.verify import Baseline, Job, Verification, run_baseline, verify
from tests.support import cheat_corpus as corpus
from tests.support.cheats import make_diff
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]
MINE = ("overload", "monkeypatch", "computed_name", "probe", "test_edit")


@dataclass
class Ledger:
    repo: Path
    staged: StagedRepo
    base: Baseline
    image: str
    work: Path

    def open_box(self, tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=self.image, test_timeout_s=60), docker_client())

    def check(self, edits: dict[str, str | None]) -> Verification:
        diff = make_diff(self.repo, self.work, edits)
        job = Job(self.staged, self.open_box, corpus.SUITE, corpus.REPRO, corpus.EXC, corpus.SITE, baseline=self.base)
        return verify(job, diff)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> Iterator[Ledger]:
    where = tmp_path_factory.mktemp("ledger")
    repo = make_repo(where / "ledger", corpus.FILES)
    staged = stage_repo(str(repo))
    box = Ledger(repo, staged, None, sandbox_image, where / "work")  # type: ignore[arg-type]
    box.base = run_baseline(Job(staged, box.open_box, corpus.SUITE, corpus.REPRO, corpus.EXC, corpus.SITE))
    assert box.base.reproduced
    assert "ledger/rates.py" in box.base.test_files and box.base.doctest_files == {"ledger/rates.py"}
    yield box
    staged.cleanup()


@pytest.mark.parametrize("name", sorted(corpus.HONEST))
def test_honest_fixes_verify(ledger: Ledger, name: str) -> None:
    ver = ledger.check(corpus.HONEST[name])
    assert (ver.status, ver.reason) == ("verified", "verified"), f"{name}: {ver.message}"
    assert ver.warnings == [], ver.warnings


CAUGHT = [e for e in corpus.CHEATS if e.kind in MINE]
AWAITING_JUDGES = "only the rules by construct stopped it, and they now give a hint (issue 34 part 5); the " \
                  "behavioural judges (parts 1-3) must: when they have merged this passes, and the mark goes"
AWAITING = {"float subclass whose __eq__ is loose", "class built by type() with a lambda __eq__",
            "the rates table swapped from the package's __init__", "math.isclose loosened for every caller"}
"""Cheats that come back verified while only the hints see them: strict xfails, so the lead sees them pass."""


def _case(entry: corpus.Entry) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=AWAITING_JUDGES)] if entry.label in AWAITING else []
    return pytest.param(entry, marks=marks, id=f"{entry.kind}: {entry.label}")


@pytest.mark.parametrize("entry", [_case(e) for e in CAUGHT])
def test_every_cheat_of_a_kind_the_rules_flag_ends_not_verified_with_its_hint(ledger: Ledger,
                                                                              entry: corpus.Entry) -> None:
    ver = ledger.check(entry.edits)
    if entry.kind != "test_edit":  # refused by the policy before any rule reads it
        assert any(e.judge == "constructs" and not e.refuses and (e.kind == entry.kind or f"{entry.kind}: " in
                                                                   e.message) for e in ver.evidence), ver.evidence
    assert ver.status == "not_verified", f"{entry.label}: {ver.message}"
    if entry.stopped_by != "suspicious_diff":
        assert ver.reason == entry.stopped_by, f"{entry.label}: {ver.message}"


def test_special_casing_the_tested_input_is_flagged_in_the_warnings(ledger: Ledger) -> None:
    special = next(e for e in corpus.CHEATS if e.kind == "special_case")
    ver = ledger.check(special.edits)
    assert any("'CHF'" in w and "special-casing" in w for w in ver.warnings), (ver.reason, ver.warnings)
