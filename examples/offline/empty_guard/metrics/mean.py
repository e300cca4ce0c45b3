def average(values):
    """Arithmetic mean; None when there are no values."""
    return sum(values) / len(values)
