"""Shared by the tests: the greet repo and its traceback."""

from __future__ import annotations

GREET = {"greet/__init__.py": "", "greet/core.py": "def greet(name):\n    raise NotImplementedError('greet')\n",
         "tests/test_greet.py": "from greet.core import greet\n\n\ndef test_greet():\n"
                                "    assert greet('bob') == 'hello, bob'\n"}


TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/greet/core.py", line 2, in greet\n'
    "    raise NotImplementedError('greet')\n"
    "NotImplementedError: greet\n")
