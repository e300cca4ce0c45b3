"""Rewrite tests/data/tracebacks/nested_<format>.txt from real pytest runs of this project:

    .venv/bin/python -m tests.data.tracebacks.nested.regenerate

The whole output of each `--tb` format, with this directory's absolute path (printed by `--tb=line` and for
files outside the rootdir) replaced by /home/dev/nested.
"""

from __future__ import annotations

from tests.support.tracebacks import FORMATS, NESTED, run_pytest

SHOWN_AS = "/home/dev/nested"


def main() -> None:
    for tb in FORMATS:
        text = run_pytest(tb).replace(str(NESTED.resolve()), SHOWN_AS)
        (NESTED.parent / f"nested_{tb}.txt").write_text(text)
        print(f"wrote nested_{tb}.txt")


if __name__ == "__main__":
    main()
