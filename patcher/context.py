"""Keep the prompt under a token budget: the goal stays first and whole; old tool results go first.

Order of sacrifice: (1) outputs of old tool calls are replaced by a marker, oldest first; (2) large
arguments of old calls (file contents) likewise; (3) whole oldest rounds are dropped and one marker
says how many. The last `keep_recent` rounds are never touched, so the model sees what it just did.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]
ELIDED = "[elided to stay within the context budget: {n} characters of {what}; call the tool again if needed]"


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


def fit(messages: list[Message], budget: int, estimate: Callable[[list[Message]], int],
        pinned: int = 2, keep_recent: int = 2) -> int:
    """Shrink `messages` in place until `estimate(messages) <= budget`. Returns how many edits it made."""
    edits = 0
    if estimate(messages) <= budget:
        return 0
    for step in (_elide_results, _elide_arguments):
        old = [i for group in _rounds(messages, pinned)[:-keep_recent] for i in group]
        for i in old:
            if step(messages[i]):
                edits += 1
                if estimate(messages) <= budget:
                    return edits
    had_marker = _is_marker(messages, pinned)
    if had_marker:
        del messages[pinned]
    dropped = 0
    while estimate(messages) > budget and len(_rounds(messages, pinned)) > keep_recent:
        first = _rounds(messages, pinned)[0]
        del messages[first[0] : first[-1] + 1]
        dropped += 1
    if dropped or had_marker:
        messages.insert(pinned, {"role": "user", "content": DROPPED})
    return edits + dropped


DROPPED = "[earlier rounds were dropped to stay within the context budget; the goal above still holds]"


def _is_marker(messages: list[Message], pinned: int) -> bool:
    return len(messages) > pinned and messages[pinned].get("content") == DROPPED
