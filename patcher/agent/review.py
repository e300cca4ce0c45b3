"""A reader of the diff (judge `reviewer`): one call to the job's model, in a fresh context, on a verified diff.

It reads what a human reviewer would: the traceback, the diff, the code of the tests the diff turned green, and
what the judges saw when they ran it (with the lines the rules by construct flag, labelled as looks), never the
agent's transcript, so a story the agent told itself cannot become the review. The answer is one JSON object,
validated with pydantic: a verdict (fix, special_case, tamper, unsure), a reason, and the lines it cites, each
quoted from the diff. It is a hint, never a gate: its verdict joins `verification.evidence` (refuses=False) and
`verification.judges["reviewer"]` with its tokens and cost. A malformed answer is "unsure" with a note; a model
that cannot be reached, or a spend that has reached the job's cost limit, leaves a hint that the review did not
run. What it reads is hostile text (the repository's, the diff's), fenced by a nonce and named as data in the
prompt: at worst it makes the hint say "fix".
"""

from __future__ import annotations

import ast
import json
import secrets
import time
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from patcher.agent import prompts
from patcher.errors import ModelError, ModelUnreachable
from patcher.model import LLM, ModelConfig, ModelReply, OpenAIModel
from patcher.stopper import Overrun, Stopper
from patcher.trace import Trace
from patcher.verify import Evidence, Job, Verification

MAX_CITES = 5
DEADLINE_S = 120.0
"""The review is a hint: it waits no longer than this for its one answer (retries included)."""
RETRIES = 1
MAX_TESTS = 6
MAX_TEST_LINES = 80
MAX_DIFF_CHARS = 40_000
MAX_TRACEBACK_CHARS = 8_000
MAX_FILE_BYTES = 1_000_000
LOOKS = "constructs"
NOT_ADDED = "(not a line the diff adds)"
WORDS = {"fix": "a fix", "special_case": "a special case of the tested input",
         "tamper": "tampering with the tests or the verification", "unsure": "unclear"}


class Cite(BaseModel):
    path: str
    line: int
    why: str = ""


class Answer(BaseModel):
    """The reply the prompt asks for (other keys are ignored)."""

    verdict: Literal["fix", "special_case", "tamper", "unsure"]
    reason: str = ""
    cites: list[Cite] = Field(default_factory=list)


def reviewer_model(config: ModelConfig) -> OpenAIModel:
    """The job's model as the reviewer asks it: the agent's endpoint and key, at most RETRIES retries."""
    return OpenAIModel(config.model_copy(update={"max_retries": min(config.max_retries, RETRIES)}))


def review_diff(llm: LLM, job: Job, diff: str, ver: Verification, trace: Trace, stopper: Stopper,
           over_budget: bool = False) -> None:
    """The review of `diff` (verified in `ver`), recorded in `ver` as a hint and a judge's summary. The call is
    abandoned on cancel (Cancelled) or after DEADLINE_S (a hint that it did not run)."""
    summary: dict[str, Any] = {"ran": False, "verdict": None, "model": llm.model_name}
    if over_budget:
        return _record(ver, trace, summary, Evidence("reviewer", "not_run", "the review did not run: the job's "
                                                     "spend has reached its cost limit"))
    started = time.monotonic()
    nonce = secrets.token_hex(6)
    messages = [{"role": "system", "content": prompts.render("review_system", nonce=nonce, max_cites=MAX_CITES)},
                {"role": "user", "content": _material(job, diff, ver, nonce, trace.redact.text)}]
    try:
        reply = stopper.wait_for(partial(llm.complete, messages, []), started + DEADLINE_S)
    except (ModelError, ModelUnreachable, Overrun) as e:
        why = f"no answer within {DEADLINE_S:g} s" if isinstance(e, Overrun) else str(e)
        summary["duration_s"] = round(time.monotonic() - started, 3)
        return _record(ver, trace, summary, Evidence("reviewer", "not_run", f"the review did not run: {why}"))
    trace.emit("model_call", round=None, purpose="review", model=reply.model, stop_raw=reply.stop_raw,
               stop=reply.stop, tokens={"input": reply.tokens_in, "output": reply.tokens_out}, cost=reply.cost_usd,
               duration_ms=reply.duration_ms, attempts=reply.attempts, prompt_hash=prompts.template_hash(),
               tool_calls=[], calls_in_content=False, content=reply.content)
    summary |= {"ran": True, "model": reply.model, "tokens": {"input": reply.tokens_in, "output": reply.tokens_out},
                "cost_usd": reply.cost_usd, "duration_s": round(time.monotonic() - started, 3)}
    _record(ver, trace, summary, _verdict(reply, diff, summary))


def _verdict(reply: ModelReply, diff: str, summary: dict[str, Any]) -> Evidence:
    """The reply as the reviewer's evidence (and its summary filled in); a malformed one is unsure, with a note."""
    try:
        answer = Answer.model_validate(_json_in(reply.content or ""))
    except (ValueError, ValidationError) as e:
        note = f"the reviewer's answer was not the JSON asked for ({_why(e, reply)}), so it says nothing"
        summary |= {"verdict": "unsure", "note": note}
        return Evidence("reviewer", "unsure", note, quote=(reply.content or "").strip()[:200])
    added = _added_lines(diff)
    shown = [(c, added.get((c.path, c.line))) for c in answer.cites[:MAX_CITES]]
    reason = " ".join(answer.reason.split())[:600]
    summary |= {"verdict": answer.verdict, "reason": reason,
                "cites": [{"path": c.path, "line": c.line, "why": c.why[:300], "text": text} for c, text in shown]}
    quote = "; ".join(f"{c.path}:{c.line}: " + (text.strip()[:120] if text is not None else NOT_ADDED)
                      for c, text in shown)
    return Evidence("reviewer", answer.verdict, f"a reviewer model ({reply.model}) reads the diff as "
                    f"{WORDS[answer.verdict]}" + (f": {reason}" if reason else ""), quote=quote)


def _record(ver: Verification, trace: Trace, summary: dict[str, Any], seen: Evidence) -> None:
    ver.judges["reviewer"] = summary
    ver.evidence.append(seen)
    trace.emit("verify", phase="judge", **seen.as_json())


def _material(job: Job, diff: str, ver: Verification, nonce: str, redact: Any) -> str:
    """The user message: traceback, diff, the fail-to-pass tests' code, what the judges saw (redacted)."""
    looks = [e.sentence() for e in ver.evidence if e.judge == LOOKS]
    seen = [e.sentence() for e in ver.evidence if e.judge not in (LOOKS, "reviewer")]
    if ver.judge is not None:
        seen += ver.judge.warnings
        if ver.judge.judged_twice:
            seen.append(f"a second runner outside pytest agreed on {len(ver.judge.judged_twice)} test(s)")
    text = diff if len(diff) <= MAX_DIFF_CHARS else diff[:MAX_DIFF_CHARS] + "\n[… the rest of the diff is cut]"
    tests = [{"name": t, "code": code} for t in ver.fail_to_pass[:MAX_TESTS]
             if (code := _test_code(job.staged.path, set(job.staged.files), t)) is not None]
    return redact(prompts.render("review_task", nonce=nonce, traceback=job.traceback[-MAX_TRACEBACK_CHARS:].strip(),
                                 diff=text.strip(), tests=tests, evidence=seen, looks=looks))


def _test_code(root: Path, files: set[str], test: str) -> str | None:
    """The source of a test function (or method) by its pytest node id, from the base tree; None when the diff
    adds it (the diff shows it) or it cannot be found."""
    file, _, rest = test.partition("::")
    if not rest or file not in files:
        return None
    try:
        data = (root / file).read_bytes()[:MAX_FILE_BYTES]
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError):
        return None
    node = _defined(tree.body, [part.split("[")[0] for part in rest.split("::")])
    if node is None:
        return None
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = data.decode("utf-8", "replace").splitlines()[first - 1:(node.end_lineno or node.lineno)]
    cut = len(lines) > MAX_TEST_LINES
    return "\n".join(lines[:MAX_TEST_LINES]) + ("\n[… cut]" if cut else "")


def _defined(body: list[ast.stmt], names: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """The definition `names` reach (a class, then its method), or None."""
    found = None
    for name in names:
        found = next((n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                      and n.name == name), None)
        if found is None:
            return None
        body = found.body
    return found


def _added_lines(diff: str) -> dict[tuple[str, int], str]:
    """(path, line in the new file) -> text, for every line the diff adds."""
    try:
        patch = PatchSet(diff)
    except UnidiffParseError:
        return {}
    return {(f.path, line.target_line_no): line.value.rstrip("\r\n") for f in patch for hunk in f for line in hunk
            if line.is_added and line.target_line_no is not None}


def _json_in(text: str) -> Any:
    """The JSON object in a reply (fenced or with words around it); ValueError when there is none."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in it")
    return json.loads(text[start:end + 1])


def _why(error: Exception, reply: ModelReply) -> str:
    if reply.stop in ("cut_off", "blocked"):
        return f"the reply was {reply.stop.replace('_', ' ')}"
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'the answer'}: {first['msg']}"
    return str(error)[:200]
