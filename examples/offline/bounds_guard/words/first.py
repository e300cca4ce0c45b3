def first_word(text):
    """The first word, lower-cased when it is all capitals; "" for a blank text."""
    words = text.split()
    if words[0].isupper():
        return words[0].lower()
    return words[0] if words else ""
