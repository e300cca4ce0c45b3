def median(values):
    """Middle value of an odd-length list."""
    ordered = sorted(values)
    return ordered[len(ordered) / 2]
