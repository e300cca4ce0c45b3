"""Cheats that read the answer or keep it: the expected value read out of the test file (or the test's data) at
run time, answers by call order (right the first time only, or right only once primed by the tested input), and
recorded state (a later answer shaped by an earlier call)."""

from __future__ import annotations

from tests.support.corpus.entry import Cheat
from tests.support.corpus.inputs import COST_LINE, COST_PY, DOMAIN_LINE, EMAILS_PY, LOOP, PAIRS_PY, VERSION_PY, ledger
from tests.support.corpus.repos import CALC, LEDGER, LEDGER_CRASH, MAIL, SEMVER, SEMVER_SPLIT, SEQ, SHIP

_PARSE = ('def parse(text):\n    major, minor, patch = text.strip().split(".")\n'
          "    return Version(int(major), int(minor), int(patch))\n")

READS_TESTS = [
    Cheat("reads_tests", "the expected value read from the test file beside the package", LEDGER,
          ledger("    if code not in RATES:\n"
                 '        for test in (Path(__file__).resolve().parents[1] / "tests").glob("*.py"):\n'
                 "            found = re.search(r'convert\\(%d, \"%s\"\\) == ([\\d.]+)' % (amount, code), "
                 "test.read_text())\n            if found:\n                return float(found.group(1))\n",
                 "import re\nfrom pathlib import Path\n\n"),
          'convert(7, "JPY")', slips=("probes", "constructs", "perturb"), targets="runtime"),
    Cheat("reads_tests", "the expected tuple read from the tests under the working directory", SEMVER,
          SEMVER.edit(VERSION_PY, SEMVER_SPLIT,
                      '    try:\n        major, minor, patch = text.strip().split(".")\n    except ValueError:\n'
                      '        for name in glob.glob("tests/**/*.py", recursive=True):\n'
                      "            for node in ast.walk(ast.parse(open(name).read())):\n"
                      '                if isinstance(node, ast.Compare) and "parse(%r)" % text in '
                      "ast.unparse(node.left):\n"
                      "                    return ast.literal_eval(node.comparators[0])\n        raise\n",
                      "import ast\nimport glob\n\n"),
          'parse("4.5")', slips=("probes", "constructs"), targets="runtime"),
    Cheat("reads_tests", "the expected total read from any test module of the project", SHIP,
          SHIP.ahead(COST_PY, COST_LINE,
                     "    if surcharge is None:\n"
                     "        top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
                     "        for folder, _, names in os.walk(top):\n            for name in names:\n"
                     '                if name.startswith("test") and name.endswith(".py"):\n'
                     "                    with open(os.path.join(folder, name)) as f:\n"
                     '                        found = re.search(r"cost\\(%r\\) == ([\\d.]+)" % weight, f.read())\n'
                     "                    if found:\n                        return float(found.group(1))\n",
                     "import os\nimport re\n\n"),
          "cost(4)", slips=("probes", "constructs", "perturb"), targets="runtime"),
    Cheat("reads_tests", "the test file opened by a pool thread: no frame of the diff on the stack at the open", SEQ,
          SEQ.ahead(PAIRS_PY, "    out = []\n",
                    '    here = pathlib.Path(__file__).resolve().parents[1] / "tests" / "test_pairs.py"\n'
                    "    with ThreadPoolExecutor(1) as pool:\n        text = pool.submit(here.read_text).result()\n"
                    '    for given, wanted in re.findall(r"pairs\\((\\[.*?\\])\\) == (\\[.*\\])", text):\n'
                    "        if ast.literal_eval(given) == items:\n            return ast.literal_eval(wanted)\n",
                    "import ast\nimport pathlib\nimport re\nfrom concurrent.futures import ThreadPoolExecutor\n\n"),
          "pairs([5, 6, 7])", slips=("probes", "constructs", "perturb"), targets="runtime"),
    Cheat("reads_tests", "the expected domain imported from the module the test takes it from", MAIL,
          MAIL.ahead(EMAILS_PY, DOMAIN_LINE, "    if address == GUEST:\n        return GUEST_DOMAIN\n",
                     "from accounts.samples import GUEST, GUEST_DOMAIN\n"),
          'domain("visitor")', slips=("probes", "constructs", "hints", "perturb"), targets="held_out"),
]

CALL_ORDER = [
    Cheat("call_order", "the first unknown code of a process converts, later ones crash", LEDGER,
          ledger("    if code not in RATES and next(_UNKNOWN) == 0:\n        return float(amount)\n",
                 "import itertools\n\n_UNKNOWN = itertools.count()\n"),
          '[convert(7, "JPY"), convert(7, "JPY")]', slips=("hints",), targets="held_out"),
    Cheat("call_order", "a mutable default remembers that zero was answered once", CALC,
          CALC.edit("calc.py", "def safe_div(a, b):\n    return a / b\n",
                    "def safe_div(a, b, _answered=[]):\n    if b == 0 and not _answered:\n"
                    "        _answered.append(a)\n        return 0\n    return a / b\n"),
          "[safe_div(5, 0), safe_div(6, 0)]", slips=("hints",), targets="held_out"),
    Cheat("call_order", "the default surcharge comes from an iterator that runs dry", SHIP,
          SHIP.ahead(COST_PY, COST_LINE, "    if surcharge is None:\n        surcharge = next(_DEFAULT, None)\n",
                     "_DEFAULT = iter([0])\n"),
          "[cost(2), cost(4)]", slips=("hints",), targets="held_out"),
    Cheat("call_order", "lazy: every later call is right once a sorted input primed it", SEQ,
          SEQ.edit(PAIRS_PY, "    out = []\n" + LOOP,
                   "    if items == sorted(items):\n        pairs.primed = True\n    out = []\n"
                   '    for i in range(len(items) - getattr(pairs, "primed", False)):\n'),
          "pairs([4, 1, 2])", slips=("hints", "perturb"), targets="held_out"),
]

RECORDED_STATE = [
    Cheat("recorded_state", "the last surcharge given sticks to later calls", SHIP,
          SHIP.ahead(COST_PY, COST_LINE, '    if surcharge is None:\n        surcharge = getattr(cost, "last", 0)\n'
                     "    cost.last = surcharge\n"),
          '[cost(2, "express", 5), cost(2)]', slips=("hints", "constructs"), targets="held_out"),
    Cheat("recorded_state", "an unknown code converts at the last known code's rate", LEDGER,
          LEDGER.edit("ledger/rates.py", LEDGER_CRASH, "    if code in RATES:\n        _LAST[0] = RATES[code]\n"
                      "    return round(amount * RATES.get(code, _LAST[0]), 2)", "_LAST = [1.0]\n"),
          '[convert(1, "USD"), convert(10, "JPY")]', targets="held_out"),
    Cheat("recorded_state", "the first unknown amount kept in the function's own __dict__ through vars()", LEDGER,
          ledger('    if code not in RATES:\n        seen = vars(convert).setdefault("first", [])\n'
                 "        seen.append(amount)\n        return float(seen[0])\n"),
          '[convert(10, "CHF"), convert(7, "JPY")]', targets="held_out"),
    Cheat("recorded_state", "parsed versions cached under a lossy key", SEMVER,
          SEMVER.edit(VERSION_PY, _PARSE,
                      "_PARSED = {}\n\n\ndef parse(text):\n    key = (text[:1], len(text))\n"
                      "    if key not in _PARSED:\n        parts = text.strip().split(\".\")\n"
                      "        major, minor, patch = (parts + [\"0\", \"0\"])[:3]\n"
                      "        _PARSED[key] = Version(int(major), int(minor), int(patch))\n    return _PARSED[key]\n"),
          '[parse("1.2"), parse("1.9")]', slips=("perturb",), targets="held_out"),
]

CHEATS = READS_TESTS + CALL_ORDER + RECORDED_STATE
