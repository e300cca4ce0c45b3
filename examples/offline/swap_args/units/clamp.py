def clamp(value, low, high):
    """value limited to [low, high]."""
    if low > high:
        raise ValueError(f"empty range {low}..{high}")
    return max(low, min(value, high))


def percent(value):
    return clamp(value, 100, 0)
