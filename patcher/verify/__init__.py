"""What "verified" means, and the test runs behind it: the baseline on the untouched repo, the diff's
policy, the patched reproduction and suite in fresh boxes, flaky reruns, the signed evidence of each run.
"""

from patcher.verify.check import apply_diff, run_baseline, verify
from patcher.verify.records import Baseline, Verification
from patcher.verify.testruns import TestRun, command_kind, run_tests

__all__ = ["Baseline", "TestRun", "Verification", "apply_diff", "command_kind", "run_baseline", "run_tests", "verify"]
