"""What the keeper accepts from the child's pipe (keeper.py signs only this).

The child writes, per group: `begin`, then for each case `start`, its comparisons (`cmp`, with the operands
where they are plain data), what the observers saw (`obs`) and its outcome (`test`), then `done`; the child
adds `exit` (how the group's process ended) and, at the very end, `fin`. Anything out of that order, a case
of another group, two outcomes for one case, a comparison whose operands do not give the result it claims,
or a pass without a comparison the test makes unconditionally (`required`: the asserts at the top of the test
function, computed by the host from the test's text) is a forgery: the keeper signs a `forged` record and the
host calls the judge's results tampered. A group that ends without its `done` (or a child that ends without
its `fin`) is signed as such: something ended the process behind the judge's back.
Standard library only; Python 3.9 to 3.13.
"""

from __future__ import annotations

import json
from typing import Any, Callable

TEST_KEYS = ("outcome", "exc", "frames", "message", "why", "escaped")
OBS_KEYS = ("judge", "kind", "refuses", "file", "line", "what", "type", "method")


class Forged(Exception):
    pass


class Accept:
    def __init__(self, job: dict[str, Any], compare: Callable[[str, Any, Any], Any],
                 decode: Callable[[Any], Any]) -> None:
        self.cases = {str(c["id"]): c for c in job["cases"]}
        self.compare, self.decode = compare, decode
        self.out: list[dict[str, Any]] = []
        self.group: str | None = None
        self.done = self.fin = self.garbled = self.forged = False
        self.running: str | None = None
        self.outcomes: set[str] = set()
        self.held: dict[str, set[int]] = {}
        self.counted: dict[str, list[int]] = {}
        self.groups_seen: set[str] = set()
        self.last: str | None = None
        self.exits = 0
        """Groups ended so far: the keeper lets the child start the next one only once it has signed these."""

    def feed(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            rec = json.loads(raw)
            kind = rec["k"] if isinstance(rec, dict) else None
        except (ValueError, KeyError, TypeError):
            self.garbled = True  # a write cut off by a kill; a forgery if its group then ends well
            return
        handler = getattr(self, f"_on_{kind}", None) if isinstance(kind, str) else None
        if handler is None:
            raise Forged(f"a record of an unknown kind ({str(kind)[:20]!r})")
        handler(rec)

    def _on_begin(self, rec: dict[str, Any]) -> None:
        group = str(rec.get("group"))
        if self.group is not None or group in self.groups_seen:
            raise Forged(f"group {group} begun out of order")
        self.group, self.done, self.garbled, self.running = group, False, False, None
        self.groups_seen.add(group)
        self.last = group
        self.out.append({"k": "begin", "group": group})

    def _case(self, rec: dict[str, Any]) -> str:
        case = str(rec.get("id"))
        if self.group is None or self.done or case not in self.cases or \
                str(self.cases[case].get("group") or case) != self.group:
            raise Forged(f"a record of case {case[:20]} outside its group")
        return case

    def _on_start(self, rec: dict[str, Any]) -> None:
        case = self._case(rec)
        if self.running is not None or case in self.outcomes or case in self.held:
            raise Forged(f"case {case} started twice")
        self.running, self.held[case], self.counted[case] = case, set(), [0, 0]

    def _on_cmp(self, rec: dict[str, Any]) -> None:
        case = self._case(rec)
        if case != self.running:
            raise Forged(f"a comparison of case {case} while it is not running")
        ok, line = rec.get("ok"), rec.get("line")
        self.counted[case][0] += 1
        if rec.get("l") is not None and rec.get("r") is not None and isinstance(ok, bool):
            try:
                got = bool(self.compare(str(rec.get("op")), self.decode(rec["l"]), self.decode(rec["r"])))
            except Exception as e:
                raise Forged(f"a comparison the judge cannot redo ({type(e).__name__})") from None
            if got != ok:
                raise Forged(f"the comparison on line {line} does not give what the test process said")
            self.counted[case][1] += 1
        if ok is not False and isinstance(line, int):
            self.held[case].add(line)

    def _on_obs(self, rec: dict[str, Any]) -> None:
        case = self._case(rec)
        self.out.append({"k": "obs", "id": case, **{k: rec[k] for k in OBS_KEYS if k in rec}})

    def _on_test(self, rec: dict[str, Any]) -> None:
        case = self._case(rec)
        if case != self.running or case in self.outcomes:
            raise Forged(f"an outcome of case {case} it did not run")
        self.outcomes.add(case)
        self.running = None
        if rec.get("outcome") == "passed":
            missing = [n for n in self.cases[case].get("required") or [] if n not in self.held[case]]
            if missing:
                raise Forged(f"case {case} passed without its comparison on line {missing[0]}")
        n, checked = self.counted[case]
        self.out.append({"k": "test", "id": case, "comparisons": n, "rechecked": checked,
                         **{k: rec[k] for k in TEST_KEYS if k in rec}})

    def _on_done(self, rec: dict[str, Any]) -> None:
        if self.group is None or str(rec.get("group")) != self.group or self.running is not None or self.done:
            raise Forged("a group ended out of order")
        self.done = True

    def _on_exit(self, rec: dict[str, Any]) -> None:
        if self.group is None or str(rec.get("group")) != self.group:
            raise Forged("a group's end out of order")
        if self.done and self.garbled:
            raise Forged("a line the judge's child did not write")
        if not self.done:
            self.out.append(self._ended(rec))
        self.group = None
        self.exits += 1

    def _on_fin(self, rec: dict[str, Any]) -> None:
        if self.group is not None:
            raise Forged("the run ended inside a group")
        self.fin = True

    def _ended(self, how: dict[str, Any]) -> dict[str, Any]:
        return {"k": "group", "group": self.group, "case": self.running, "timed_out": bool(how.get("timed_out")),
                "status": how.get("status"), "signal": how.get("signal"), "oom": how.get("oom") is True}


    def take(self, raw: bytes) -> list[dict[str, Any]]:
        """The records to sign now for one line (a `forged` record, once, when the stream stops making sense)."""
        if self.fin or self.forged:
            return []
        before = len(self.out)
        try:
            self.feed(raw)
        except Forged as e:
            self.forged = True  # the group it came in (a forgery while the base ran is not the diff's code)
            self.out.append({"k": "forged", "group": self.group or self.last, "why": str(e)})
        return self.out[before:]

    def finish(self, ended: dict[str, Any]) -> list[dict[str, Any]]:
        """What the end of the stream adds: a group and a child that ended without the judge's end."""
        if self.fin or self.forged:
            return []
        out = []
        if self.group is not None and not self.done:
            out.append(self._ended({**ended, "child": True}))
        out.append({"k": "child", "group": self.last, **ended})
        return out


def accept(lines: list[bytes], job: dict[str, Any], ended: dict[str, Any], compare: Callable[[str, Any, Any], Any],
           decode: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """Every record to sign for a whole stream (what the keeper signs line by line)."""
    state = Accept(job, compare, decode)
    out = [r for raw in lines for r in state.take(raw)]
    return out + state.finish(ended)
