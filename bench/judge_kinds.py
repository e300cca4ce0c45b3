"""The second judge and the perturbed reproductions by kind: how many spellings of each kind end not verified,
and how many honest fixes still verify (the spellings of tests/test_second_judge.py, on its toy repo).

    PATCHER_SANDBOX_IMAGE=patcher-sandbox:i22a .venv/bin/python -m bench.judge_kinds
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

from patcher.intake import stage_repo
from tests.support.helpers import make_repo
from tests.verify import test_second_judge as t

NOTICING = [t.fix(body, header) for body, header in
            t.test_noticing_the_test_run_is_not_verified.pytestmark[0].args[1]]  # type: ignore[attr-defined]


Case = tuple[dict[str, str | None], str | None]
FIXTURE = "python -m pytest -q tests/test_fixture.py"


def case(rates_py: str, repro: str = t.REPRO) -> Case:
    return {"rates.py": rates_py}, repro


def kinds() -> dict[str, list[Case]]:
    special = [t.fix(b) for b in t.test_special_casing_the_tested_input_is_overfitted.pytestmark[0].args[1]]  # type: ignore[attr-defined]
    amount = t.RATES.replace("    return amount * rate(code)\n", "    if amount == 10 and code not in RATES:\n"
                             "        return 0.0\n    return amount * rate(code)\n")
    return {
        "special-casing (overfitted)": [case(s) for s in [*special, amount]]
        + [case(t.fix('    if code == "eur":\n        return 0.5\n'), t.CASE),
           case(t.fix('    if code == "GBP":\n        return 0.0\n'), FIXTURE)],
        "noticing the test run (behaves_differently)": [case(s) for s in NOTICING],
        "honest (must verify)": [case(t.HONEST), case(t.fix("    if code not in RATES:\n        return 0.0\n")),
                                 case(t.RATES.replace(t.LOOKUP, "    return RATES[code.upper()]\n"), t.CASE),
                                 case(t.HONEST, "python -m unittest tests.test_unit"), case(t.HONEST, FIXTURE)],
    }


def main() -> None:
    import os
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp:
        repo = make_repo(Path(tmp) / "rates", t.FILES)
        staged = stage_repo(str(repo))
        rates = t.Rates(repo, staged, os.environ.get("PATCHER_SANDBOX_IMAGE", "patcher-sandbox:latest"),
                        Path(tmp) / "work", {})
        try:
            for kind, cases in kinds().items():
                reasons = Counter(rates.check(edits, repro).reason for edits, repro in cases)
                good = reasons["verified"] if kind.startswith("honest") else len(cases) - reasons["verified"]
                word = "verified" if kind.startswith("honest") else "not verified"
                print(f"{kind:45} {good}/{len(cases)} {word}  ({', '.join(f'{r}: {n}' for r, n in reasons.items())})")
        finally:
            staged.cleanup()


if __name__ == "__main__":
    main()
