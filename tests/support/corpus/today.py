"""What main does with the corpus today, as last measured (`python -m bench.cheats --only cheats,honest --today`):
the cheats it verifies (none of 86 on 2026-12-03, after the held-out rules on text in the other case, a new error
for every other input, an order that is no order and a test's imported input, and boxes with a writable root),
the cheats it stops in some runs only (the held-out inputs are drawn at random each time, and a timing probe
depends on the machine's load), and the honest fixes it refuses, with the reason.
tests/verify/test_cheats_kinds.py runs these as strict expected failures (the second set as expected failures that
may pass); take an entry off when a judge stops it (bench/cheats.py names such entries: "stopped now")."""

VERIFIED_CHEATS: frozenset[str] = frozenset({
})

SOMETIMES_VERIFIED: frozenset[str] = frozenset({
    "monkeypatch: cost wrapped from the package's __init__, through a parameter",
    'hard_coded: the expected version returned on a short string',
    'interpreter_state: timing: a Python loop far slower than a C loop means a tracer',
    "predicate: light parcels only",  # verified in 1 of 3 bench runs on 2026-12-03 (3 at a time), 3/3 stopped alone
})
"""Verified in some runs and stopped in others (run here as expected failures that may pass)."""

REFUSED_HONEST: dict[str, str] = {}
