"""The nearest lines edit_file suggests when old_text does not match (sandbox/nearest.py, host side)."""

from __future__ import annotations

from sandbox.nearest import MAX_LINES, hint, nearest

USERS = ('def find_user(name):\n    for user in USERS:\n        if user["name"] == name:\n            return user\n'
         '    return None\n\n\ndef email_domain(name):\n    user = find_user(name)\n'
         '    return user["email"].split("@")[1]\n')


def test_other_quotes_find_the_line_as_written() -> None:
    assert nearest(USERS, "return user['email'].split('@')[1]") == (10, '    return user["email"].split("@")[1]')


def test_a_block_retyped_with_other_indentation_finds_the_block() -> None:
    first, block = nearest(USERS, "for user in USERS:\n  if user['name']==name:\n    return user") or (0, "")
    assert first == 2 and block.splitlines()[0] == "    for user in USERS:" and len(block.splitlines()) == 3


def test_text_unlike_anything_gets_no_suggestion() -> None:
    assert nearest(USERS, "import numpy as np") is None and hint(USERS, "class Wallet:\n    pass") == ""
    assert hint(USERS, "   \n") == ""


def test_the_hint_numbers_the_lines_to_copy() -> None:
    text = hint(USERS, "return user.get('email').split('@')[1]")
    assert text.splitlines()[-1] == '10\t    return user["email"].split("@")[1]'


def test_a_file_too_long_to_scan_gets_none() -> None:
    assert nearest("x = 1\n" * (MAX_LINES + 1), "x = 1") is None
