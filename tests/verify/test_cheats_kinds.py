"""The cheat corpus of issues 34 and 42 (tests/support/corpus: 30 kinds on fourteen toy repositories) against the
real verifier on real Docker: every cheat ends not verified, for a reason that judges the diff; every honest fix on
the same repositories verifies.

Main lets some cheats through today, and refuses some honest fixes: those are listed in
tests/support/corpus/today.py and run here as strict expected failures, so this module is green on main and an
entry flips (XPASS, a failure) when a judge stops it; remove it from today.py then. `python -m bench.cheats`
prints the same verdicts by kind. The verdicts are computed once for the selected entries, a few at a time, with
one baseline per toy repository and reproduction.
"""

from __future__ import annotations

from typing import Any

import pytest

from patcher.verify import Verification
from tests.support.corpus import CHEATS, HONEST, Cheat, Honest
from tests.support.corpus.today import REFUSED_HONEST, SOMETIMES_VERIFIED, VERIFIED_CHEATS
from tests.support.corpus.verifier import Verifier

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image"),
              pytest.mark.timeout(1800)]  # the first test's setup verifies every selected entry (minutes)
NOT_JUDGED = frozenset({"sandbox_error", "bad_input", "not_reproduced", "setup_failed", "cancelled", "timeout"})
"""Reasons that say nothing about the diff: a cheat stopped for one of these was never judged."""


def _key(entry: Cheat | Honest) -> str:
    return entry.id if isinstance(entry, Cheat) else entry.label


@pytest.fixture(scope="module")
def verdicts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             sandbox_image: str) -> dict[str, Verification]:
    """The verdict on every entry this session selected (by `_key`)."""
    here = request.node.path
    wanted: list[Any] = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.path == here and spec is not None and "entry" in spec.params:
            wanted.append(spec.params["entry"])
    if not any(c.label == _FLAGGED for c in wanted if isinstance(c, Cheat)):
        wanted.append(next(c for c in CHEATS if c.label == _FLAGGED))
    verifier = Verifier(tmp_path_factory.mktemp("corpus"), sandbox_image)
    try:
        got = verifier.check_all(wanted)
    finally:
        verifier.close()
    return {_key(e): v for e, v in zip(wanted, got, strict=True)}


def _cheat(c: Cheat) -> Any:
    if c.id in VERIFIED_CHEATS:
        marks = [pytest.mark.xfail(strict=True, reason=f"verified on main ({c.kind}); a judge should stop it")]
    elif c.id in SOMETIMES_VERIFIED:
        marks = [pytest.mark.xfail(strict=False, reason=f"verified on main in some runs ({c.kind})")]
    else:
        marks = []
    return pytest.param(c, id=c.id, marks=marks)


def _honest(h: Honest) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=f"refused on main: {REFUSED_HONEST[h.label]}")
             ] if h.label in REFUSED_HONEST else []
    return pytest.param(h, id=h.label, marks=marks)


@pytest.mark.parametrize("entry", [_cheat(c) for c in CHEATS])
def test_every_cheat_ends_not_verified(verdicts: dict[str, Verification], entry: Cheat) -> None:
    ver = verdicts[entry.id]  # refused, or at the lower status (a judge could not judge it: the gate refuses it)
    assert ver.status in ("not_verified", "unjudged"), f"{entry.id}: verified ({ver.message}); warnings: {ver.warnings}"
    assert ver.reason not in NOT_JUDGED, f"{entry.id}: {ver.reason} ({ver.message})"


@pytest.mark.parametrize("entry", [_honest(h) for h in HONEST])
def test_every_honest_fix_verifies(verdicts: dict[str, Verification], entry: Honest) -> None:
    ver = verdicts[entry.label]
    assert (ver.status, ver.reason) == ("verified", "verified"), f"{entry.label}: {ver.message}"


_FLAGGED = "the tested code returns the tested answer"


def test_special_casing_the_tested_input_is_flagged_in_the_warnings(verdicts: dict[str, Verification]) -> None:
    ver = verdicts[next(c.id for c in CHEATS if c.label == _FLAGGED)]
    assert any("'CHF'" in w and "special-casing" in w for w in ver.warnings), (ver.reason, ver.warnings)
