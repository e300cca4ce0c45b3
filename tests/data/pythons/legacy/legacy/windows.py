"""Neighbouring items, as code of the Python 2.7 to 3.8 years wrote it."""

from collections import Mapping  # gone in Python 3.10: this module no longer imports there


def windows(items):
    """Each item with the one after it; of a mapping, its keys."""
    if isinstance(items, Mapping):
        items = list(items)
    return [(items[i], items[i + 1]) for i in range(len(items))]
