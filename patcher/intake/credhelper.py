"""patcher's own git credential helper: tokens per origin from a file the service owns, nothing else.

Standard library only: git runs it (`credential.helper=!python -I credhelper.py`, named by patcher on the
command line after the reset `credential.helper=`) for a clone of a URL a job names. It answers `get` only
for the exact `protocol://host[:port]` a line of the file names, so a redirect to another host, or any
other remote, gets nothing; `store` and `erase` are ignored (git never writes the file). The token reaches
git over this pipe only: never an argument, an environment variable, a URL or a config file.

The file (PATCHER_GIT_TOKENS_FILE) has one line per origin, `#` for comments:

    https://git.example.com  glpat-XXXXXXXX            # user x-access-token
    https://gitea.internal:3000  ci-bot:0123abcd       # user:token
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

FILE_ENV = "PATCHER_GIT_TOKENS_FILE"
DEFAULT_USER = "x-access-token"


class BadTokens(ValueError):
    """The tokens file is unusable (unsafe mode, another owner, a malformed line); the message says which."""


def private_text(path: Path) -> str:
    """The text of a file only this user can read; BadTokens otherwise (checked like the signing key)."""
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadTokens(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from e
    if st.st_mode & 0o077 or st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
        raise BadTokens(f"{path} must be a file owned by this user and readable by no one else "
                        f"(chmod 600; mode now {st.st_mode & 0o777:o})")
    return text


def read_tokens(path: Path) -> dict[str, tuple[str, str]]:
    """origin (`https://host[:port]`, lower case) -> (user, token); BadTokens when the file is not safe."""
    text = private_text(path)
    tokens = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        origin = parts[0].lower().rstrip("/")
        scheme, sep, host = origin.partition("://")
        if len(parts) != 2 or scheme not in ("https", "http") or not sep or not host or "/" in host or "@" in host:
            raise BadTokens(f"{path} line {number}: write `https://host[:port] [user:]token`")
        user, sep, token = parts[1].partition(":")
        tokens[origin] = (user, token) if sep and user and token else (DEFAULT_USER, parts[1])
    return tokens


def origin_of(fields: dict[str, str]) -> str:
    return f"{fields.get('protocol', '').lower()}://{fields.get('host', '').lower()}"


def main(argv: list[str]) -> int:
    if argv[-1:] != ["get"]:
        return 0  # store / erase: the file is the service's, git never changes it
    fields = dict(line.split("=", 1) for line in sys.stdin.read().splitlines() if "=" in line)
    try:
        tokens = read_tokens(Path(os.environ[FILE_ENV]))
    except (KeyError, BadTokens):
        return 0  # no answer: git fails with "could not read Username", which patcher explains
    found = tokens.get(origin_of(fields))
    if found is not None:
        sys.stdout.write(f"username={found[0]}\npassword={found[1]}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
