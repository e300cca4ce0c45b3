"""What "verified" means, and the test runs behind it: the job record every stage after intake receives
(`Job`, with its baseline), the baseline on the untouched repo, the diff's
policy, the patched reproduction and suite in fresh boxes, flaky reruns, the signed evidence of each run.
"""

from patcher.verify.check import apply_diff, run_baseline, verify
from patcher.verify.contain import narrowed
from patcher.verify.diagnose import not_reproduced, why_not_run
from patcher.verify.job import Job
from patcher.verify.policy.rules import is_config_path, is_test_or_config, is_test_path
from patcher.verify.records import Baseline, Evidence, Verification
from patcher.verify.testruns import TestRun, command_kind, run_tests

__all__ = ["Baseline", "Evidence", "Job", "TestRun", "Verification", "apply_diff", "command_kind", "is_config_path",
           "is_test_or_config", "is_test_path", "narrowed", "not_reproduced", "run_baseline", "run_tests", "verify",
           "why_not_run"]
