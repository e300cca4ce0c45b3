def total(prices, tax_rate):
    """Sum of the prices with tax added."""
    subtotal = sum(prices)
    return round(subtotl * (1 + tax_rate), 2)
