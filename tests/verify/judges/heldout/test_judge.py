"""The held-out judge against the real verifier on real Docker: inputs drawn after the engine is done from the
crash's own argument values, the patched code judged against the base on them.

A toy repository with one bug a module (tests/support/heldout_toys.py). Each cheat is a real diff handed to
`verify()` as the pipeline does; the held-out judge must refuse it with the evidence kind named (whatever other
judge also refuses it). Each honest fix must draw no refusing held-out evidence, with inputs really judged; the
ones no older judge refuses must be verified.
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
from tests.support import cheats as c
from tests.support import heldout_toys as toys
from tests.support.helpers import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]
SUITE = "python -m pytest -q"


@dataclass
class Toys:
    repo: Path
    staged: StagedRepo
    image: str
    work: Path
    bases: dict[str, Baseline]

    def open_box(self, tree: StagedRepo) -> DockerSandbox:
        return DockerSandbox(tree, SandboxConfig(image=self.image, test_timeout_s=60), docker_client())

    def check(self, bug: str, edits: dict[str, str | None]) -> Verification:
        b = toys.BUGS[bug]
        if bug not in self.bases:
            self.bases[bug] = run_baseline(Job(self.staged, self.open_box, SUITE, b.repro, b.exc, b.site))
            assert self.bases[bug].reproduced, bug
        diff = c.make_diff(self.repo, self.work, edits)
        return verify(Job(self.staged, self.open_box, SUITE, b.repro, b.exc, b.site, baseline=self.bases[bug]), diff)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory, sandbox_image: str) -> Iterator[Toys]:
    where = tmp_path_factory.mktemp("heldout")
    repo = make_repo(where / "toys", toys.FILES)
    staged = stage_repo(str(repo))
    yield Toys(repo, staged, sandbox_image, where / "work", {})
    staged.cleanup()


def held_out(ver: Verification) -> tuple[dict[str, object], list[str]]:
    """The judge's summary and the kinds of its refusing evidence."""
    return ver.judges.get("held_out", {}), [e.kind for e in ver.evidence if e.judge == "held_out" and e.refuses]


@pytest.mark.parametrize("name", list(toys.CHEATS))
def test_a_cheat_is_refused_on_inputs_it_never_saw(toy: Toys, name: str) -> None:
    bug, edits, kind = toys.CHEATS[name]
    ver = toy.check(bug, edits)
    summary, refusing = held_out(ver)
    assert ver.status == "not_verified", (name, ver.message)
    assert kind in refusing, (name, summary, ver.evidence)
    quoted = next(e for e in ver.evidence if e.judge == "held_out" and e.kind == kind)
    assert quoted.quote and quoted.quote in summary["counterexamples"], summary
    assert int(summary["inputs"]) >= 10 and float(summary["duration_s"]) < 30, summary  # type: ignore[call-overload]


@pytest.mark.parametrize("name", list(toys.HONEST))
def test_an_honest_fix_draws_no_refusal(toy: Toys, name: str) -> None:
    bug, edits = toys.HONEST[name]
    ver = toy.check(bug, edits)
    summary, refusing = held_out(ver)
    assert not refusing, (name, ver.evidence)
    assert int(summary.get("inputs") or 0) >= 10 and not summary.get("note"), summary  # type: ignore[call-overload]
    assert (ver.status, ver.reason) == ("verified", "verified"), (name, ver.message)  # a table entry is data too


def test_the_summary_says_what_was_called_and_how_the_inputs_fell(toy: Toys) -> None:
    ver = toy.check("rates", toys.HONEST["a default for unknown codes"][1])
    summary, _ = held_out(ver)
    assert summary["target"] == "rates.convert" and summary["tested"] == "convert(100, 'GBP')", summary
    assert int(summary["crash_alike"]) >= int(summary["same_crash"]) > 0, summary  # type: ignore[call-overload]
    assert int(summary["base_working"]) > 0 and summary["counterexamples"] == [], summary  # type: ignore[call-overload]
    assert len(summary["sample"]) == 3 and float(summary["alongside_s"]) > 0, summary  # type: ignore[arg-type]
    assert "held_out" in ver.as_json()["judges"]


def test_a_call_of_live_objects_only_is_judged_on_an_equal_copy_made_through_their_class(toy: Toys) -> None:
    ver = toy.check("last", toys.LAST_FIX)  # last(<the test's local class's instance>): nothing else to draw
    summary, refusing = held_out(ver)
    assert not refusing and (ver.status, ver.reason) == ("verified", "verified"), (ver.message, summary)
    assert summary["inputs"] == summary["compared"] == 2, summary
    assert any("(an equal copy)" in str(s) for s in summary["sample"]), summary  # type: ignore[attr-defined]
