"""Neighbouring items of a sequence."""


def pairs(items):
    """Each item with the one after it."""
    return [(items[i], items[i + 1]) for i in range(len(items))]
