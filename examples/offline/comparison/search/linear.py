def find_index(items, target):
    """Position of target in items, -1 if absent."""
    i = 0
    while i <= len(items):
        if items[i] == target:
            return i
        i += 1
    return -1
