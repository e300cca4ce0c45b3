"""Re-verification on a new base: a verified job's diff, applied to another ref and proved again from scratch.

`POST /v1/jobs/{id}/reverify {ref}` queues a job of its own (kind `reverify`) that no engine runs: the
stored diff goes through `patcher verify`'s path (pipeline.verify_patch: the baseline on the new base, the
reproduction, the suite, every integrity rule), so its result is verified, or an honest refusal (the patch
does not apply: bad_input; the tests fail: tests_failed, regression, …). Its signed record names the same
diff digest on the new base.

An approval carries over: a reviewer approved that diff, not that base, so the newest decision on the job it
re-verifies (or, for a chain, on the job that one re-verified) is bound into the new record with
`carried_from` naming where it was given; only while the digests are equal, so a decision can never move
onto another diff. The record's submitter is the first job's, so the submitter still cannot approve their
own change by asking for a re-verification.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from patcher.review import Approval

if TYPE_CHECKING:
    from patcher.server.store import Store, StoredJob

KIND = "reverify"
MAX_CHAIN = 20
"""Re-verifications of re-verifications followed back to find an approval (each is one more job)."""


class ReverifyRequest(BaseModel):
    """Where to prove a verified job's diff again."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra={"examples": [{"ref": "main"}]})

    ref: str = Field(min_length=1, max_length=255, pattern=r"^[^\s\x00-\x1f-][^\s\x00-\x1f]*$")
    """The new base: a commit, branch or tag of the job's repository."""


def is_reverify(spec: dict[str, Any]) -> bool:
    return spec.get("kind") == KIND


def reverify_spec(original: StoredJob, ref: str) -> dict[str, Any]:
    """The stored spec of a re-verification of `original` (a verified job) on `ref`."""
    assert original.result is not None
    spec = original.spec
    return {"kind": KIND, "of": original.id, "repo": spec["repo"], "ref": ref, "diff": original.result["diff"],
            "diff_sha256": original.result["diff_sha256"], "traceback": spec.get("traceback"),
            "test_command": spec.get("test_command"), "suite_command": spec.get("suite_command"),
            "setup": spec.get("setup"), "python": spec.get("python"), "submitter": first_submitter(original)}


def first_submitter(job: StoredJob) -> str | None:
    """Who submitted the change: the first job's submitter, also for a re-verification of it."""
    return job.spec.get("submitter") if is_reverify(job.spec) else job.submitter


def carried_approval(store: Store, job: StoredJob) -> Approval | None:
    """The newest decision on the job this one re-verifies (followed back), while the diff's digest is
    the same all the way; None when there is none to carry."""
    digest = (job.result or {}).get("diff_sha256")
    current = job
    for _ in range(MAX_CHAIN):
        if not digest or not is_reverify(current.spec) or current.spec.get("diff_sha256") != digest:
            return None
        earlier = store.get(str(current.spec.get("of")))
        if earlier is None or (earlier.result or {}).get("diff_sha256") != digest:
            return None
        reviews = store.reviews(earlier.id)
        if reviews:
            last = reviews[-1]
            return Approval(decision=last.decision, who=last.who, when=last.when,  # type: ignore[arg-type]
                            comment=last.comment, carried_from=earlier.id)
        current = earlier
    return None


def with_origin(result: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The result with `reverified` saying what was proved again where (a field of the job's JSON)."""
    return {**result, "reverified": {"of": spec["of"], "ref": spec["ref"], "diff_sha256": spec["diff_sha256"]}}
