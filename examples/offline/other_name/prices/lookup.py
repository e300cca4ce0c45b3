"""Price lookup, case-insensitive in the item's name."""


def price_of(prices: dict[str, int], item: str, default: int = 0) -> int:
    key = item.lower()
    return prices.get(item, default)
