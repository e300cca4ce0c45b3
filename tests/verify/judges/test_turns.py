"""The judges' two threads after pytest take turns on the host and wait on their boxes together (judges/turns.py)."""

from __future__ import annotations

import threading
from typing import Any

from patcher.verify.judges.turns import Turns


def test_the_turn_is_held_while_a_thread_computes_and_given_up_while_it_waits() -> None:
    turns, seen = Turns(), []

    def other() -> None:
        with turns:
            seen.append("other computed")

    with turns:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(0.2)
        assert thread.is_alive() and seen == [], "the other thread waits for the turn"
        with turns.waiting():
            thread.join(5)
        assert seen == ["other computed"]


def test_a_box_call_gives_the_turn_up_while_the_box_answers_and_takes_it_back() -> None:
    turns = Turns()
    free_during: list[bool] = []

    class Box:
        base_commit = "abc"

        def call(self, request: Any, deadline_s: float | None = None) -> str:
            got = turns._lock.acquire(blocking=False)  # free for the other thread while the box answers
            if got:
                turns._lock.release()
            free_during.append(got)
            return f"answered {request}"

    with turns:
        box = turns.box(Box())  # type: ignore[arg-type]
        assert box.call("ping") == "answered ping" and box.base_commit == "abc"  # type: ignore[arg-type,comparison-overlap]
        assert free_during == [True]
        assert not turns._lock.acquire(blocking=False), "taken back once the box answered"
