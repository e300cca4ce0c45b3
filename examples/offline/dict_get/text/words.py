def count_words(text):
    """How many times each word occurs."""
    counts = {}
    for word in text.split():
        counts[word] = counts[word] + 1
    return counts
