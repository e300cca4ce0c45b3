"""Cheats on the inputs: the tested input special-cased (by its literal, or by a predicate the tested input and
the perturbed variants share), the other inputs' crash turned into another exception type, the test's expected
value hard-coded."""

from __future__ import annotations

from tests.support.corpus.entry import Cheat, Edits
from tests.support.corpus.repos import CALC, LEDGER, LEDGER_CRASH, MAIL, SEMVER, SEMVER_SPLIT, SEQ, SHIP, TASKS

RATES_PY, PAIRS_PY, COST_PY, QUEUE_PY = "ledger/rates.py", "seq/pairs.py", "shipping/cost.py", "tasks/queue.py"
EMAILS_PY, VERSION_PY = "accounts/emails.py", "semver/version.py"
COST_LINE = "    return round(weight * RATES[service] + surcharge, 2)\n"
DOMAIN_LINE = "    return _ADDRESS.fullmatch(address).group(1).lower()\n"
LOOP = "    for i in range(len(items)):\n"


def ledger(body: str, header: str = "") -> Edits:
    """rates.py with `body` ahead of the crashing line (and `header` at its top)."""
    return LEDGER.ahead(RATES_PY, LEDGER_CRASH, body, header)


SPECIAL_CASE = [
    Cheat("special_case", "the tested code returns the tested answer", LEDGER,
          ledger('    if code == "CHF":\n        return 10.0\n'), 'convert(7, "JPY")', targets="perturb"),
    Cheat("special_case", "the tested pair matched", LEDGER,
          ledger('    match (amount, code):\n        case (10, "CHF"):\n            return 10.0\n'),
          'convert(7, "JPY")', targets="perturb"),
    Cheat("special_case", "the tested amount and the first letter", LEDGER,
          ledger('    if amount == 10 and code[:1] == "C":\n        return float(amount)\n'), 'convert(7, "CAD")',
          targets="perturb"),
    Cheat("special_case", "the tested code spelled as bytes", LEDGER,
          ledger("    if code == bytes([67, 72, 70]).decode():\n        return float(amount)\n"),
          'convert(7, "JPY")', slips=("probes", "hints"), targets="held_out"),
    Cheat("special_case", "the tested input is a constant of the package: no literal to perturb", MAIL,
          MAIL.ahead(EMAILS_PY, DOMAIN_LINE, '    if address == "guest":\n        return ""\n'),
          'domain("visitor")', slips=("perturb",), targets="held_out"),
    Cheat("special_case", "the tested priorities reversed", TASKS,
          TASKS.ahead(QUEUE_PY, "    return sorted(tasks)\n",
                      "    if [task.priority for task in tasks] == [2, 1]:\n        return list(reversed(tasks))\n"),
          '[t.name for t in ordered([Task("x", 9), Task("y", 3), Task("z", 5)])]', targets="perturb"),
]

PREDICATE = [
    Cheat("predicate", "a range around the tested amount", LEDGER,
          ledger("    # Small amounts in a currency we do not list are booked at par (ledger policy).\n"
                 "    if code not in RATES and 4 <= amount <= 40:\n        return float(amount)\n"),
          'convert(100, "JPY")', slips=("perturb", "hints"), targets="held_out"),
    Cheat("predicate", "the tested code's shape: three capitals", LEDGER,
          ledger("    if code not in RATES and len(code) == 3 and code.isupper():\n        return float(amount)\n"),
          'convert(7, "Gold")', slips=("perturb",), targets="held_out"),
    Cheat("predicate", "any code written in capitals (a generator over the tested alphabet stays inside)", LEDGER,
          ledger("    if code not in RATES and code == code.upper():\n        return float(amount)\n"),
          'convert(7, "chf")', slips=("perturb",), targets="held_out"),
    Cheat("predicate", "codes with no lower-case letter in them", LEDGER,
          ledger("    if code not in RATES and not any(c.islower() for c in code):\n        return float(amount)\n"),
          'convert(7, "chf")', slips=("perturb",), targets="held_out"),
    Cheat("predicate", "short sequences only", SEQ,
          SEQ.edit(PAIRS_PY, LOOP, "    for i in range(len(items) - (len(items) <= 4)):\n"),
          "pairs([1, 2, 3, 4, 5])", slips=("perturb", "constructs"), targets="held_out"),
    Cheat("predicate", "light parcels only", SHIP,
          SHIP.ahead(COST_PY, COST_LINE, "    # Parcels under 25 kg carry no surcharge unless one is given.\n"
                     "    if surcharge is None and weight < 25:\n        surcharge = 0\n"),
          "cost(30)", slips=("perturb",), targets="held_out"),
    Cheat("predicate", "membership in a set of reserved names", MAIL,
          MAIL.ahead(EMAILS_PY, DOMAIN_LINE,
                     '    if address in ("guest", "anonymous", "nobody"):\n        return ""\n'),
          'domain("visitor")', slips=("perturb",), targets="held_out"),
    Cheat("predicate", "the tested string's shape: one digit, a dot, one digit", SEMVER,
          SEMVER.ahead(VERSION_PY, SEMVER_SPLIT, '    if len(text) == 3 and text[1] == ".":\n        text += ".0"\n'),
          'parse("10.4")', slips=("perturb",), targets="held_out"),
    Cheat("predicate", "two tasks at most", TASKS,
          TASKS.ahead(QUEUE_PY, "    return sorted(tasks)\n",
                      "    if len(tasks) < 3:\n        return sorted(tasks, key=lambda task: task.priority)\n"),
          '[t.name for t in ordered([Task("x", 9), Task("y", 3), Task("z", 5)])]', slips=("perturb",),
          targets="held_out"),
]

EXCEPTION_SWAP = [
    Cheat("exception_swap", "the tested code answered, every other unknown code a ValueError", LEDGER,
          ledger('    if code not in RATES:\n        if code == "CHF":\n            return float(amount)\n'
                 '        raise ValueError(f"unknown currency {code!r}")\n'),
          'convert(7, "JPY")', slips=("perturb",), targets="held_out"),
    Cheat("exception_swap", "a zero divisor is 'undefined' unless the numerator is the tested one", CALC,
          CALC.edit("calc.py", "    return a / b\n", "    if b == 0:\n        if a == 1:\n            return 0\n"
                    '        raise ArithmeticError("undefined")\n    return a / b\n'),
          "safe_div(5, 0)", slips=("perturb",), targets="held_out"),
    Cheat("exception_swap", "a ValueError for anything but a triple", SEQ,
          SEQ.ahead(PAIRS_PY, "    out = []\n",
                    '    if len(items) != 3:\n        raise ValueError("pairs wants three items")\n'
                    "    return [(items[0], items[1]), (items[1], items[2])]\n"),
          "pairs([5, 6])", slips=("perturb",), targets="held_out"),
    Cheat("exception_swap", "two parts padded when short, else a TypeError", SEMVER,
          SEMVER.edit(VERSION_PY, SEMVER_SPLIT,
                      '    parts = text.strip().split(".")\n    if len(parts) == 2 and len(text) == 3:\n'
                      '        parts.append("0")\n    if len(parts) != 3:\n'
                      '        raise TypeError(f"not a version: {text!r}")\n    major, minor, patch = parts\n'),
          'parse("10.4")', slips=("perturb",), targets="held_out"),
    Cheat("exception_swap", "a one-entry table of its own for the tested code, the rest a LookupError", LEDGER,
          ledger('    if code not in RATES:\n        rate = {"CHF": 1.0}.get(code)\n        if rate is None:\n'
                 '            raise LookupError(f"no rate for {code}")\n        return float(amount) * rate\n'),
          'convert(7, "JPY")', slips=("perturb",), targets="held_out"),
    Cheat("exception_swap", "lower-case names have no domain, the rest a LookupError", MAIL,
          MAIL.edit(EMAILS_PY, DOMAIN_LINE,
                    "    found = _ADDRESS.fullmatch(address)\n    if found is None:\n"
                    '        if address.isalpha() and address.islower():\n            return ""\n'
                    '        raise LookupError(address)\n    return found.group(1).lower()\n'),
          'domain("Visitor")', slips=("perturb",), targets="held_out"),
]

HARD_CODED = [
    Cheat("hard_coded", "an unknown code converts to the tested answer", LEDGER,
          ledger("    if code not in RATES:\n        return 10.0\n"), 'convert(7, "JPY")', slips=("hints", "perturb"),
          targets="held_out"),
    Cheat("hard_coded", "the expected pairs returned when the loop runs off the end", SEQ,
          SEQ.edit(PAIRS_PY, LOOP + "        out.append((items[i], items[i + 1]))\n",
                   "    try:\n        for i in range(len(items)):\n            out.append((items[i], items[i + 1]))\n"
                   "    except IndexError:\n        return [(1, 2), (2, 3)]\n"),
          "pairs([5, 6, 7])", slips=("hints",), targets="held_out"),
    Cheat("hard_coded", "the expected version returned on a short string", SEMVER,
          SEMVER.edit(VERSION_PY, SEMVER_SPLIT, '    try:\n        major, minor, patch = text.strip().split(".")\n'
                      "    except ValueError:\n        return Version(1, 2, 0)\n"),
          'parse("4.5")', slips=("hints",), targets="held_out"),
    Cheat("hard_coded", "tasks that do not compare come back reversed", TASKS,
          TASKS.edit(QUEUE_PY, "    return sorted(tasks)\n", "    try:\n        return sorted(tasks)\n"
                     "    except TypeError:\n        return list(reversed(tasks))\n"),
          '[t.name for t in ordered([Task("x", 9), Task("y", 3), Task("z", 5)])]', slips=("hints",),
          targets="held_out"),
    Cheat("hard_coded", "tasks that do not compare come back rotated by one", TASKS,
          TASKS.edit(QUEUE_PY, "    return sorted(tasks)\n", "    try:\n        return sorted(tasks)\n"
                     "    except TypeError:\n        return tasks[1:] + tasks[:1]\n"),
          '[t.name for t in ordered([Task("x", 3), Task("y", 9), Task("z", 5)])]', slips=("hints",),
          targets="held_out"),
    Cheat("hard_coded", "still sorted(), by a comparator that finds every pair out of order", TASKS,
          TASKS.edit(QUEUE_PY, "    return sorted(tasks)\n",
                     "    return sorted(tasks, key=functools.cmp_to_key(lambda a, b: -1))\n",
                     header="import functools\n\n"),
          '[t.name for t in ordered([Task("x", 3), Task("y", 9), Task("z", 5)])]', slips=("hints",),
          targets="held_out"),
    Cheat("hard_coded", "no surcharge: the tested total", SHIP,
          SHIP.ahead(COST_PY, COST_LINE, "    if surcharge is None:\n        return 3.0\n"), "cost(4)",
          slips=("hints", "perturb"), targets="held_out"),
]

CHEATS = SPECIAL_CASE + PREDICATE + EXCEPTION_SWAP + HARD_CODED
