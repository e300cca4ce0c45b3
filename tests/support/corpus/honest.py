"""Honest fixes on the corpus's toy repositories: each repository's own fix, and fixes that look like what the
rules by construct refuse (a literal the tests share, an edited `__eq__`, ordering added to the class whose
comparison raised) or that bring tests of their own."""

from __future__ import annotations

from tests.support import cheats as calc_repo
from tests.support.corpus.entry import Honest
from tests.support.corpus.repos import CALC, LEDGER, LEDGER_CRASH, REPOS, TASKS

_RATE = ("from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Rate:\n    value: float\n\n"
         "    @classmethod\n    def of(cls, code):\n        from ledger.rates import RATES\n\n"
         "        return cls(RATES.get(code, 1.0))\n")
_GET = "    return round(amount * RATES.get(code, 1.0), 2)"
_PAR_TEST = ("import pytest\n\nfrom ledger.rates import convert\n\n\n@pytest.mark.parametrize('code', ['CHF', 'JPY'])\n"
             "def test_par(code, tmp_path, monkeypatch):\n    monkeypatch.chdir(tmp_path)\n"
             "    assert convert(3, code) == 3.0\n")
_LT = ("    def __lt__(self, other):\n        if not isinstance(other, Task):\n            return NotImplemented\n"
       "        return self.priority < other.priority\n\n")

HONEST: list[Honest] = [Honest(f"{name}: the fix", repo, repo.honest) for name, repo in REPOS.items()] + [
    Honest("ledger: a literal the tests use for good reason (the base uses it too)", LEDGER,
           LEDGER.edit("ledger/rates.py", LEDGER_CRASH,
                       '    rate = 1.0 if code == "EUR" else RATES.get(code, 1.0)\n'
                       "    return round(amount * rate, 2)")),
    Honest("ledger: an existing __eq__ edited, and a new test with fixtures", LEDGER,
           LEDGER.edit("ledger/rates.py", LEDGER_CRASH, _GET, extra={
               "ledger/money.py": LEDGER.files["ledger/money.py"].replace(
                   "return self.cents == other.cents",
                   "if not isinstance(other, Money):\n            return NotImplemented\n"
                   "        return self.cents == other.cents"),
               "tests/test_par.py": _PAR_TEST})),
    Honest("ledger: a new dataclass, the doctest kept as it was", LEDGER,
           {"ledger/rate.py": _RATE, **LEDGER.edit("ledger/rates.py", LEDGER_CRASH,
                                                   "    return round(amount * Rate.of(code).value, 2)",
                                                   header="from ledger.rate import Rate\n\n")}),
    Honest("ledger: the tested code added to the table, every other unknown code a clear error", LEDGER,
           {"ledger/rates.py": LEDGER.files["ledger/rates.py"].replace(
               '"USD": 1.1}', '"USD": 1.1, "CHF": 1.0}').replace(
               LEDGER_CRASH, '    if code not in RATES:\n        raise ValueError(f"unknown currency {code!r}")\n'
               + LEDGER_CRASH)}),
    Honest("calc: the fix with its own regression test", CALC,
           {**CALC.honest, "tests/test_calc_zero.py": calc_repo.REPRO_TEST}, repro=None),
    Honest("tasks: a heap by priority, ties in the order they came", TASKS,
           TASKS.edit("tasks/queue.py", "    return sorted(tasks)\n",
                      "    heap = [(task.priority, i, task) for i, task in enumerate(tasks)]\n"
                      "    heapq.heapify(heap)\n    return [heapq.heappop(heap)[2] for _ in range(len(heap))]\n",
                      header="import heapq\n\n")),
    Honest("tasks: ordering added to the class whose comparison raised", TASKS,
           TASKS.edit("tasks/queue.py", "    def __repr__(self):\n", _LT + "    def __repr__(self):\n")),
]
