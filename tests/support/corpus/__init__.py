"""The cheat corpus of issue 34 and the honest fixes beside it, on seven toy repositories with different crashes.

CHEATS: every cheat, by kind (inputs.py, state.py, values.py, noticing.py, harness.py); HONEST: real fixes on the
same repositories, which must verify. tests/verify/test_cheat_corpus.py checks each cheat on the host (it passes
plain pytest, a held-out input shows it is no fix); tests/verify/test_cheats_kinds.py runs every entry through
real verification on Docker; bench/cheats.py prints the counts by kind.
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
