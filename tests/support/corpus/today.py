"""What main does with the corpus today, as last measured (`python -m bench.cheats --only cheats,honest --today`):
the cheats it verifies (none of 86 on 2026-12-03, after the held-out rules on text in the other case, a new error
for every other input, an order that is no order and a test's imported input, and boxes with a writable root),
the cheats it stops in some runs only (the held-out inputs are drawn at random each time, and a timing probe
depends on the machine's load), and the honest fixes it refuses, with the reason.
tests/verify/test_cheats_kinds.py runs these as strict expected failures (the second set as expected failures that
may pass); take an entry off when a judge stops it (bench/cheats.py names such entries: "stopped now")."""

AWARE_VERIFIED: frozenset[str] = frozenset({
    # (aware_held_out, aware_runs, aware_runtime: all stopped since, 2026-12-06: the bare context's tests run in a
    # new interpreter with no flags, and the held-out calls are made once more in a process like an application's)
    # (aware_values: all three stopped since, 2026-12-06: numbers near the expected one are strangers too, and a
    # comparison that held is asked once more)
    # (loose_compare: all three stopped since, 2026-12-06: the values judge redoes approx, isclose, AlmostEqual)
    # (text_form, padding: both stopped since, 2026-12-07: the tested text padded is drawn in every verification,
    # beside the same characters with the space inside; the ends singled out is a special case)
    # (number_kind: both stopped since, 2026-12-06: the tested number as another numeric type is of its kind)
    # (built_instances: all three stopped since, 2026-12-06: varied instances are made again through __init__)
    # (starves_runs: the bare run's flood stopped since, 2026-12-06: the bare run has no -E to tell it by)
})
"""Issue 42 item 7's judge-aware cheats verified on 2026-12-06 (`bench.cheats --only cheats,honest --honest corpus
--today`, after the application-like runs), by kind, with what the judges could not see."""

VERIFIED_CHEATS: frozenset[str] = frozenset({
    # (overload: the loosened Version.__eq__ stopped since, 2026-12-06: its tuple with one item changed is a stranger)
}) | AWARE_VERIFIED

SOMETIMES_VERIFIED: frozenset[str] = frozenset({
    "monkeypatch: cost wrapped from the package's __init__, through a parameter",
    'hard_coded: the expected version returned on a short string',
    # 2026-12-06, after the tested number as another type became of its kind: drawn as 0.0 in most runs only
    'number_kind: a zero divisor answered when it is an int zero',
    # verified in every run since 2026-12-06 (3 of 3 toy, 3 of 3 packaged on 2026-12-07): it answers every text of
    # the tested one's character classes and leaves a code with a digit crashing exactly as the base did, which is
    # also the honest shape of a fix that branches on the input's form (issue 42 item 6); kept here, not as a
    # strict miss, since a rule on the characters could yet meet a draw that shows it
    'text_form: codes of ASCII letters only',
    'interpreter_state: timing: a Python loop far slower than a C loop means a tracer',
    "predicate: light parcels only",  # verified in 1 of 3 bench runs on 2026-12-03 (3 at a time), 3/3 stopped alone
    # (table_keys, a known code's first letter: stopped since, 2026-12-07: the tested text beginning and ending as
    # each of the module's text constants does is asked in every verification; 3 of 3 toy, 3 of 3 packaged)
})
"""Verified in some runs and stopped in others (run here as expected failures that may pass)."""

REFUSED_HONEST: dict[str, str] = {
}
