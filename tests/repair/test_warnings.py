"""Agent diffs that silence the reported exception are verified (the suite cannot tell) but flagged: a
`warnings` entry in the JSON result and on the review page. Real git diffs, real Docker, a real server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patcher.intake import parse_traceback
from patcher.repair.suppress import diff_warnings
from patcher.testing import ScriptedModelServer, reply
from tests.support.api import ApiServer
from tests.support.helpers import make_repo
from tests.support.offline import EXAMPLES, example_repo, failing_traceback

SIGNER = "tokens/signer.py"
TRACEBACK = (EXAMPLES / "swap_operands" / "traceback.txt").read_text()


def git_diff_after(repo: Path, old: str, new: str) -> str:
    path = repo / SIGNER
    path.write_text(path.read_text().replace(old, new))
    diff = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True, check=True).stdout
    subprocess.run(["git", "checkout", "-q", "--", SIGNER], cwd=repo, check=True)
    return diff


def test_a_weakened_guard_is_flagged_and_the_real_fix_is_not(tmp_path: Path) -> None:
    repo = example_repo("swap_operands", tmp_path)
    parsed = parse_traceback(TRACEBACK)
    weakened = git_diff_after(repo, "if age < 0:", "if age < -1:")
    assert diff_warnings(weakened, repo, parsed) == [
        f"this diff weakens the check that raised the reported exception ({SIGNER})"]
    deleted = git_diff_after(repo, '        raise SignatureExpired(f"signature age {age} < 0 seconds")\n',
                             "        pass\n")
    assert "deletes the raise" in diff_warnings(deleted, repo, parsed)[0]
    fixed = git_diff_after(repo, "age = timestamp - now", "age = now - timestamp")
    assert diff_warnings(fixed, repo, parsed) == []
    assert diff_warnings("not a diff", repo, parsed) == []


MILLIS = {
    "tokens/__init__.py": "",
    SIGNER: ("class SignatureExpired(Exception):\n    pass\n\n\n"
             "def check_age(stamp_ms: int, max_age: int, now: int) -> None:\n"
             "    age = now - stamp_ms\n"  # the cause: milliseconds against seconds, no template's shape
             "    if age < 0:\n"
             "        raise SignatureExpired(f'signature age {age} < 0 seconds')\n"
             "    if age > max_age:\n"
             "        raise SignatureExpired(f'signature age {age} > {max_age} seconds')\n"),
    "tests/test_signer.py": ("from tokens.signer import check_age\n\n\n"
                             "def test_fresh_signature_is_accepted():\n    check_age(100_500, 60, 101)\n"
                             "    check_age(200_000, 60, 230)\n"),
}


@pytest.mark.docker
@pytest.mark.usefixtures("sandbox_image")
def test_the_flag_reaches_the_json_result_and_the_review_page(tmp_path: Path) -> None:
    weaken = ("edit_file", {"path": SIGNER, "old_text": "if age < 0:", "new_text": "if age < -10**9:"})
    review = reply('{"verdict": "special_case", "reason": "It moves the bound instead of the units."}')
    with ScriptedModelServer([reply(None, [weaken]), reply("done"), review]) as model:
        srv = ApiServer(tmp_path, model.base_url).start()
        try:
            repo = make_repo(srv.repos / "millis", MILLIS)
            body = {"repo": str(repo), "traceback": failing_traceback(repo)}
            with srv.client() as c:
                r = c.post("/v1/jobs", json=body)
                assert r.status_code == 202, r.text
                job_id = r.json()["id"]
                result = srv.wait(job_id)
                page = c.get(f"/jobs/{job_id}").text
        finally:
            srv.stop()
    assert result["status"] == "verified", result["message"]  # the suite passes: only the hint tells
    assert result["agent"]["engine"] == "auto" and result["engine"] == "agent"
    assert set(result["engines"]) == {"offline", "agent"}  # the templates ran beside the agent
    assert result["warnings"] == [f"this diff weakens the check that raised the reported exception ({SIGNER})",
                                  "a reviewer model (scripted-model) reads the diff as a special case of the tested "
                                  "input: It moves the bound instead of the units."]
    assert 'id="warnings"' in page and "weakens the check that raised the reported exception" in page
