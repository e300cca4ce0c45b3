"""Keep the prompt under a token budget: the goal stays first and whole; old tool results go first.

Order of sacrifice, each step only while the estimate is over budget:
  1. outputs of old tool calls are replaced by a marker, oldest first;
  2. large arguments of old calls (file contents) likewise;
  3. whole oldest rounds are dropped, and one marker says how many were;
  4. outputs and large arguments of the recent rounds except the newest;
  5. the newest round's outputs are cut to what fits (head kept, with a marker), then its arguments.
"Old" is all but the last `keep_recent` rounds. The pinned messages (system prompt, task) are never
touched, so however long the run, the prompt stays at the budget plus at most the pinned messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]
Estimate = Callable[[list[Message]], int]
ELIDED = "[elided to stay within the context budget: {n} characters of {what}; call the tool again if needed]"
CUT = "\n[… {n} characters cut to stay within the context budget; read a narrower range to see them …]"
DROPPED = "[earlier rounds were dropped to stay within the context budget; the goal above still holds]"
MIN_KEPT = 200
"""Characters of the newest tool output always kept (the model must see what it just asked for)."""


def _rounds(messages: list[Message], pinned: int) -> list[list[int]]:
    """Indices of messages grouped by round: an assistant message and the tool results that follow it."""
    groups: list[list[int]] = []
    for i in range(pinned, len(messages)):
        if messages[i]["role"] == "assistant" or not groups:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def _elide_results(msg: Message) -> bool:
    content = msg.get("content")
    if msg["role"] != "tool" or not isinstance(content, str) or content.startswith("[elided") or len(content) < 200:
        return False
    msg["content"] = ELIDED.format(n=len(content), what="tool output")
    return True


def _elide_arguments(msg: Message) -> bool:
    changed = False
    for call in msg.get("tool_calls") or []:
        raw = call["function"].get("arguments") or ""
        if len(raw) < 400:
            continue
        try:
            args = json.loads(raw)
        except json.JSONDecodeError:
            args = {}
        slim = {k: (ELIDED.format(n=len(v), what=k) if isinstance(v, str) and len(v) > 200 else v)
                for k, v in (args.items() if isinstance(args, dict) else [])}
        call["function"]["arguments"] = json.dumps(slim)
        changed = True
    return changed


def fit(messages: list[Message], budget: int, estimate: Estimate, pinned: int = 2, keep_recent: int = 2) -> int:
    """Shrink `messages` in place until `estimate(messages) <= budget`. Returns how many edits it made."""
    if estimate(messages) <= budget:
        return 0
    edits = _elide(messages, budget, estimate, pinned, keep_recent)
    if estimate(messages) > budget:
        edits += _drop_rounds(messages, budget, estimate, pinned, keep_recent)
    if estimate(messages) > budget:
        edits += _elide(messages, budget, estimate, pinned, 1)
    if estimate(messages) > budget:
        edits += _cut_newest(messages, budget, estimate, pinned)
    return edits


def _elide(messages: list[Message], budget: int, estimate: Estimate, pinned: int, keep_recent: int) -> int:
    edits = 0
    for step in (_elide_results, _elide_arguments):
        for i in [i for group in _rounds(messages, pinned)[:-keep_recent] for i in group]:
            if step(messages[i]):
                edits += 1
                if estimate(messages) <= budget:
                    return edits
    return edits


def _drop_rounds(messages: list[Message], budget: int, estimate: Estimate, pinned: int, keep_recent: int) -> int:
    """Drop the oldest rounds; one marker right after the pinned messages says so (counted in the estimate)."""
    added = not (len(messages) > pinned and messages[pinned].get("content") == DROPPED)
    if added:
        messages.insert(pinned, {"role": "user", "content": DROPPED})
    dropped = 0
    while estimate(messages) > budget and len(_rounds(messages, pinned + 1)) > keep_recent:
        first = _rounds(messages, pinned + 1)[0]
        del messages[first[0] : first[-1] + 1]
        dropped += 1
    if added and not dropped:
        del messages[pinned]
    return dropped


def _cut_newest(messages: list[Message], budget: int, estimate: Estimate, pinned: int) -> int:
    """Cut the newest round's tool outputs, largest first, to what fits; then elide its arguments."""
    rounds = _rounds(messages, pinned)
    if not rounds:
        return 0
    newest = [messages[i] for i in rounds[-1]]
    edits = 0
    for msg in sorted((m for m in newest if m["role"] == "tool"), key=lambda m: -len(m.get("content") or "")):
        over = estimate(messages) - budget
        content = msg.get("content") or ""
        if over <= 0 or len(content) <= MIN_KEPT:
            continue
        keep = max(MIN_KEPT, len(content) - 4 * over - len(CUT) - 16)
        msg["content"] = content[:keep] + CUT.format(n=len(content) - keep)
        edits += 1
    for msg in newest:
        if estimate(messages) > budget and _elide_arguments(msg):
            edits += 1
    return edits
