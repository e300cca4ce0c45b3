"""`patcher gate`: a merge gate over a signed verification record, checked against the repository it runs in.

Exit 0 only when the signature is valid, the result passed (an `unjudged` one only with --accept-unjudged), the
record was proved on this repository's
base (its tree, and its commit unless the record's tree was dirty), the change is the verified one, the
suite is the expected one, and (with --require-approval) someone other than the submitter approved.
1 with one line naming the failed check; 2 when a file is unreadable or malformed.

    --patch FILE        the diff (digest as signed); it must turn the base (--base, default HEAD) into
                        the verified result tree
    --base REF --head REF   for a pull request: the merge base of the two must be the verified base and
                        the head's tree the verified result (diff text is not compared, so git versions and
                        `index` line abbreviations do not matter)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patcher.config import DEFAULT_SUITE
from patcher.errors import BadInput
from patcher.intake import GitFailed, host_git
from patcher.review.attestation import check, parse_envelope, statement_of
from patcher.review.provenance import applied_tree


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise BadInput(f"cannot read {what} {path}: {e.strerror}") from e


def run_gate(patch: Path | None, attestation: Path, public_key: Path, require_approval: bool = False, *,
             base: str | None = None, head: str | None = None, repo: Path = Path("."),
             suite: str = DEFAULT_SUITE, accept_unjudged: bool = False) -> tuple[int, str]:
    """(exit code, one line) for the gate over these files and the repository at `repo`."""
    try:
        if (patch is None) == (head is None):
            raise BadInput("give either --patch FILE or --base REF --head REF")
        patch_bytes = _read(patch, "patch") if patch is not None else None
        envelope = parse_envelope(_read(attestation, "attestation"))
        ok, reason = check(patch_bytes, envelope, _read(public_key, "public key"), require_approval, accept_unjudged)
        if ok:
            ext = statement_of(envelope)["predicate"].get("patcher") or {}
            problem = _against_repo(ext, repo, patch_bytes, base, head) or _suite(ext, suite)
            ok, reason = (False, problem) if problem else (True, reason + _proved(ext))
    except BadInput as e:
        return 2, f"gate: bad input: {e}"
    return (0, f"gate: {reason}") if ok else (1, f"gate: refused: {reason}")


def _against_repo(ext: dict[str, Any], repo: Path, patch: bytes | None, base: str | None, head: str | None
                  ) -> str | None:
    if not ext.get("tree") or not ext.get("result_tree"):
        return "record: it does not say which tree it was proved on (made by an older patcher); verify again"
    base_commit = _rev(repo, f"{base or 'HEAD'}^{{commit}}")
    if head is not None:
        base_commit = _merge_base(repo, base_commit, _rev(repo, f"{head}^{{commit}}"))
    if _rev(repo, f"{base_commit}^{{tree}}") != ext["tree"]:
        return f"base: the tree of {base_commit[:12]} is not the tree the patch was verified on ({ext['tree'][:12]})"
    if not ext.get("dirty") and ext.get("source_commit") not in (None, base_commit):
        return f"base: the record was proved on commit {str(ext['source_commit'])[:12]}, not {base_commit[:12]}"
    if head is not None:
        result = _rev(repo, f"{head}^{{tree}}")
    else:
        assert patch is not None
        try:
            result = applied_tree(repo, base_commit, patch.decode("utf-8", "surrogateescape"))
        except GitFailed:
            return f"patch: it does not apply to {base_commit[:12]}"
    if result != ext["result_tree"]:
        return "change: the result is not the base plus the verified patch (the trees differ)"
    return None


def _suite(ext: dict[str, Any], suite: str) -> str | None:
    recorded = (ext.get("commands") or {}).get("suite")
    return None if recorded == suite else f"suite: the record ran `{recorded}`, not `{suite}` (--suite)"


def _proved(ext: dict[str, Any]) -> str:
    repro = ext.get("reproduction") or {}
    return f"; reproduction from {repro.get('source')}: `{(ext.get('commands') or {}).get('reproduction')}`"


def _rev(repo: Path, spec: str) -> str:
    try:
        return host_git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", spec)
    except GitFailed as e:
        raise BadInput(f"{spec.split('^')[0]} is not a commit in {repo}") from e


def _merge_base(repo: Path, a: str, b: str) -> str:
    try:
        return host_git(repo, "merge-base", a, b)
    except GitFailed as e:
        raise BadInput(f"{a[:12]} and {b[:12]} have no merge base in {repo} (fetch the whole history)") from e
