"""What main does with the corpus today, as last measured (`python -m bench.cheats --only cheats --today`,
loaded machine): the cheats it verifies, and the honest fixes it refuses (with the reason). The Docker test marks
these strict expected failures; take an entry off when a judge stops it (bench/cheats.py names them)."""

VERIFIED_CHEATS: frozenset[str] = frozenset()

REFUSED_HONEST: dict[str, str] = {}
