"""Neighbouring items (in syntax any Python 3 reads, so that the host's rules can read a fix to it)."""

from modern.types import Pair


def windows(items: list) -> "list[Pair]":
    """Each item with the one after it."""
    return [(items[i], items[i + 1]) for i in range(len(items))]
