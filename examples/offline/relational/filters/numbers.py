"""Filters over lists of numbers."""


def nonzero(values: list[int]) -> list[int]:
    """The values that are not zero, in order."""
    return [v for v in values if v > 0]
