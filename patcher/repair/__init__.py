"""Repair without a model: fix templates tried on the traceback's frames and the lines coverage ranks.

    candidates(parsed, repo)        candidates.py: one-statement fix candidates, best first, never one that
                                    edits a test or silences the exception (suppress.py, dead.py)
    search_templates(job, box, …)   search.py: the candidates checked in one box, within a budget
    Checker(box, warm)              checks.py: one candidate's test run, forked warm for pytest, else cold
    coverage_ranking(box, …)        localize.py: the lines the failing tests ran and few passing ones did
                                    (ochiai over the per-test records, rank_of a line in the ranking)
    diff_warnings(diff, …)          suppress.py: review hints on a diff that weakens the check that raised
"""

from patcher.repair.candidates import TEMPLATES, Candidate, Stats, candidates
from patcher.repair.checks import Checker
from patcher.repair.localize import Suspect, coverage_ranking, ochiai, rank_of, suspects_for
from patcher.repair.search import TemplateSearch, search_templates
from patcher.repair.suppress import diff_warnings

__all__ = ["TEMPLATES", "Candidate", "Checker", "Stats", "Suspect", "TemplateSearch", "candidates",
           "coverage_ranking", "diff_warnings", "ochiai", "rank_of", "search_templates", "suspects_for"]
