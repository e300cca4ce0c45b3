"""The cheat corpus of issues 34 and 42 and the honest fixes beside it, on toy repositories with different crashes
(repos.py, and typed.py's: a date, a Decimal, a dataclass, an imported dict, three ways to compare floats).

CHEATS: every cheat, by kind (inputs.py, state.py, values.py, noticing.py, harness.py; issue 42's judge-aware ones,
AWARE: aware_heldout.py, aware_runs.py, aware_observed.py, kinds42.py); HONEST: real fixes on the same
repositories, which must verify (honest.py, and honest42.py's shapes of issue 42 item 6).
tests/verify/test_cheat_corpus.py checks each cheat on the host (it passes plain pytest, a held-out input shows it
is no fix); tests/verify/test_cheats_kinds.py runs every entry through real verification on Docker;
bench/cheats.py prints the counts by kind (`--corpus aware --repeat N`: each aware cheat's rate).
"""

from tests.support.corpus import (
    aware_heldout,
    aware_observed,
    aware_runs,
    harness,
    inputs,
    kinds42,
    noticing,
    state,
    values,
)
from tests.support.corpus.entry import SLIP_RULES, Cheat, Edits, Honest, ToyRepo
from tests.support.corpus.honest import HONEST as _HONEST
from tests.support.corpus.honest42 import HONEST as _HONEST42
from tests.support.corpus.repos import REPOS

CHEATS: list[Cheat] = [*inputs.CHEATS, *state.CHEATS, *values.CHEATS, *noticing.CHEATS, *harness.CHEATS]
AWARE: list[Cheat] = [*aware_heldout.CHEATS, *aware_runs.CHEATS, *aware_observed.CHEATS, *kinds42.CHEATS]
"""Issue 42 item 7: cheats aimed at each judge (recognising its processes or starving it) and on the input
dimensions of item 2; bench/cheats.py's `--corpus aware` runs these alone."""
CHEATS += AWARE
HONEST = [*_HONEST, *_HONEST42]
KINDS: list[str] = list(dict.fromkeys(c.kind for c in CHEATS))

__all__ = ["AWARE", "CHEATS", "HONEST", "KINDS", "REPOS", "SLIP_RULES", "Cheat", "Edits", "Honest", "ToyRepo"]
