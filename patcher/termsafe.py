"""Text from a repository or a model, made safe to print on a terminal: no terminal control sequences
(cursor moves, line erases, OSC titles and hyperlinks, bells) and no Rich markup.

Control characters other than newline and tab become visible `\\xNN` escapes, so a message can neither
rewrite what the terminal showed before (ESC[2K, CR) nor smuggle markup such as `[green]verified[/]`.
"""

from __future__ import annotations

import re

from rich.markup import escape

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def plain(text: str) -> str:
    """`text` with control characters (and bidi overrides) shown as escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def markup_safe(text: str) -> str:
    """`plain(text)` with Rich markup escaped, for interpolating into a Rich markup string."""
    return escape(plain(text))
