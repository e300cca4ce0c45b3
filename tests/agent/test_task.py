"""The agent's task text and briefing on a real git repo: the crash site's function and the suspects' code,
numbered, redacted, within the budget; and no prompt file names a bundled example."""

from __future__ import annotations

import re
from pathlib import Path

from patcher.agent import briefing, reproduction_command, task_text
from patcher.agent.prompts import _DIR as PROMPTS
from patcher.intake import StagedRepo, map_frames, parse_traceback
from patcher.repair import Suspect
from patcher.sandbox import LocalSandbox
from patcher.trace import Redactor
from patcher.verify import Job
from tests.support.helpers import make_repo

ROOT = Path(__file__).resolve().parents[2]
SECRET = "tok-3f8a9c2e71d04b5a"
CODE = f'''"""Ledger."""

API = "{SECRET}"


def balance(entries):
    """Sum of amounts."""
    total = 0
    for entry in entries:
        total += entry["amount"]
    return total


def report(entries):
    return f"balance: {{balance(entries)}}"
'''
TB = '''Traceback (most recent call last):
  File "/srv/app/books/ledger.py", line 15, in report
    return f"balance: {balance(entries)}"
  File "/srv/app/books/ledger.py", line 10, in balance
    total += entry["amount"]
KeyError: 'amount'
'''


def job_for(tmp_path: Path) -> Job:
    repo = make_repo(tmp_path / "books", {"books/__init__.py": "", "books/ledger.py": CODE})
    files = ["books/__init__.py", "books/ledger.py"]
    parsed = map_frames(parse_traceback(TB), files)
    return Job(StagedRepo(repo, "", None, False, files), LocalSandbox, "python -m pytest -q",
               repro="python -m pytest -q tests", parsed=parsed, traceback=TB)


def test_the_crash_sites_whole_function_is_shown_numbered_with_the_line_marked(tmp_path: Path) -> None:
    text = task_text(job_for(tmp_path))
    block = text.split("- books/ledger.py:10 in balance\n```\n")[1].split("```")[0]
    assert block.splitlines()[0] == "     6  def balance(entries):"
    assert ">   10          total += entry[\"amount\"]" in block and "    11      return total" in block
    assert "report" not in block  # the function, not the file
    outer = text.split("- books/ledger.py:15 in report\n```\n")[1].split("```")[0]
    assert ">   15      return f\"balance: {balance(entries)}\"" in outer


def test_suspects_get_a_few_lines_each_and_lines_shown_once(tmp_path: Path) -> None:
    suspects = [Suspect("books/ledger.py", 3, 0.9), Suspect("books/ledger.py", 10, 0.8)]
    text = task_text(job_for(tmp_path), suspects)
    top = text.split("- books/ledger.py:3 (score 0.90): ")[1].split("- books/ledger.py:10")[0]
    assert re.search(r"\s+1  \"\"\"Ledger.\"\"\"\n\s+2  \n>\s+3  API = ", top) and "     5  " in top
    after = text.split("- books/ledger.py:10 (score 0.80): `total += entry[\"amount\"]`")[1]
    assert not after.lstrip().startswith("```")  # line 10 is in the crash site's excerpt already


def test_code_in_the_task_is_redacted(tmp_path: Path) -> None:
    redact = Redactor([SECRET]).text
    job = job_for(tmp_path)
    text = task_text(job, [Suspect("books/ledger.py", 3, 1.0)], redact=redact)
    assert SECRET not in text and 'API = "[REDACTED]"' in text
    assert SECRET not in str(briefing(job, [Suspect("books/ledger.py", 3, 1.0)], redact))


def test_code_stays_within_its_share_of_the_context_budget(tmp_path: Path) -> None:
    big = "def huge(x):\n" + "".join(f"    x = x + {n}  # step {n} of a long function body\n" for n in range(400))
    repo = make_repo(tmp_path / "big", {"big.py": big + "    return x[0]\n"})
    tb = 'Traceback (most recent call last):\n  File "big.py", line 402, in huge\n    return x[0]\nTypeError: no\n'
    parsed = map_frames(parse_traceback(tb), ["big.py"])
    job = Job(StagedRepo(repo, "", None, False, ["big.py"]), LocalSandbox, "python -m pytest -q", parsed=parsed,
              traceback=tb)
    suspects = [Suspect("big.py", n, 0.5) for n in (50, 150, 250, 350, 390)]
    small, large = task_text(job, suspects, context_tokens=2_000), task_text(job, suspects, context_tokens=48_000)
    assert len(small) < len(large) and small.count("```") < large.count("```")
    code = sum(len(b) for b in re.findall(r"```\n(.*?)```", large, re.S)[1:])  # blocks after the traceback
    assert code <= 12_000
    assert ">  402      return x[0]" in large and "   399  " in large  # a long function: lines around the crash


def test_the_briefing_names_the_crash_site_when_nothing_was_ranked(tmp_path: Path) -> None:
    b = briefing(job_for(tmp_path))
    assert b.suspects == ['books/ledger.py:10: total += entry["amount"]',
                          'books/ledger.py:15: return f"balance: {balance(entries)}"']
    assert b.functions == {"balance": "books/ledger.py", "report": "books/ledger.py"}
    assert b.test_command == "python -m pytest -q tests" and b.failing == ""
    ranked = briefing(job_for(tmp_path / "2"), [Suspect("books/ledger.py", 3, 1.0)])
    assert ranked.suspects == [f'books/ledger.py:3: API = "{SECRET}"']


COMMON = {"api", "config", "numbers", "prices", "search", "stats", "text", "tokens", "users", "words"}
"""Example module names that are plain words the prompts may use as such."""


def test_no_prompt_names_a_bundled_example() -> None:
    """The examples' packages and modules (pagination, timeparse, …) appear in no prompt template."""
    packages = {p.parent.name for p in (ROOT / "examples").rglob("__init__.py")}
    modules = {p.stem for p in (ROOT / "examples").rglob("*.py") if "tests" not in p.parts}
    words = (packages | modules) - COMMON - {"__init__", "regenerate"}
    assert {"pagination", "shop", "timeparse"} <= words  # the list is really read
    for template in PROMPTS.glob("*.j2"):
        text = template.read_text().lower()
        found = sorted(w for w in words if re.search(rf"\b{re.escape(w.lower())}\b", text))
        assert not found, f"{template.name} names {found}"


def test_the_reproduction_of_a_unittest_report_is_its_runner() -> None:
    report = ("ERROR: test_total (shop.tests.OrderTests.test_total)\n------\nTraceback (most recent call last):\n"
              '  File "/srv/shop/models.py", line 9, in total\n    return a / b\nZeroDivisionError: division by zero\n')
    parsed = parse_traceback(report)
    assert reproduction_command(parsed, None, ["manage.py", "shop/models.py", "shop/tests.py"]) == (
        "python manage.py test shop.tests.OrderTests.test_total")
    assert reproduction_command(parsed, None, ["shop/models.py", "shop/tests/__init__.py"]) == (
        "python -m unittest shop.tests.OrderTests.test_total")
    assert reproduction_command(parsed, None, ["shop/models.py"]) is None  # the test module is not the repo's
    assert reproduction_command(parsed, "python -m pytest -q", ["shop/tests.py"]) == "python -m pytest -q"


def test_local_variables_of_a_crash_report_are_shown_under_their_frame_as_data(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "books", {"books/__init__.py": "", "books/ledger.py": CODE})
    files = ["books/__init__.py", "books/ledger.py"]
    with_locals = TB.replace('    total += entry["amount"]\n',
                             f"    total += entry[\"amount\"]\n    entry = {{'amt': 5}}\n    total = 0\n"
                             f"    token = '{SECRET}'\n")
    parsed = map_frames(parse_traceback(with_locals), files)
    job = Job(StagedRepo(repo, "", None, False, files), LocalSandbox, "python -m pytest -q",
              repro="python -m pytest -q tests", parsed=parsed, traceback=with_locals)
    text = task_text(job, redact=Redactor([SECRET]).text)
    after = text.split("- books/ledger.py:10 in balance\n")[1].split("\n- ")[0]
    assert "Local variables when it crashed" in after and "`entry = {'amt': 5}`, `total = 0`" in after
    assert SECRET not in after  # crash intake redacts such a variable before; the task redacts what it adds
