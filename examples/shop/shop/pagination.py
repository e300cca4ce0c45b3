"""Split product listings into pages."""


def page_count(total: int, size: int) -> int:
    return (total + size - 1) // size


def page(items: list, number: int, size: int) -> list:
    """Items of the 1-based page `number`, at most `size` of them."""
    start = (number - 1) * size
    end = start + size
    return [items[i] for i in range(start, min(end, len(items) + 1))]
