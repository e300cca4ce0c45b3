"""pytest plugins the setup installed that cannot be imported: uninstalled before the image is committed.

pytest imports every `pytest11` entry point before it collects anything, so one plugin that no longer imports
on this Python or this pytest fails every run of the repository, its tests never reached: sqlparse 0.2/0.3's
tox.ini asks for `pytest-travis-fold`, whose only release imports `py.builtin`, which has been gone since pytest
7.2 replaced the `py` library with a shim. The setup container imports each plugin the setup installed into
the environment (not the base image's, and not the project itself or another local directory, whose import
error may be the very bug under repair) and uninstalls those that fail; the image's setup label and the job's
`provenance.setup` list them with the error, so a test that needed one fails naming its missing fixture, and
the reader sees why the plugin is gone. Only imports are checked: a plugin that imports but is refused when
pytest registers it still fails the run, with pytest's own message.
"""

from __future__ import annotations

import json
from typing import Any

from packaging.utils import canonicalize_name

DROPPED_MARK = "PATCHER-DROPPED"
"""Starts the line on which the check prints the plugins it uninstalled, as JSON."""
SCRIPT_NAME = "plugins.py"

CHECK = f"""\
import json, subprocess, sys
from importlib import metadata

def local(dist):
    try:
        url = json.loads(dist.read_text("direct_url.json") or "{{}}")
    except ValueError:
        return False
    return "dir_info" in url

dropped, seen = [], set()
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    plugins = [ep for ep in dist.entry_points if ep.group == "pytest11"]
    home = str(dist.locate_file(""))
    if not plugins or name in seen or not home.startswith(sys.prefix + "/") or local(dist):
        continue
    seen.add(name)
    for ep in plugins:
        try:
            ep.load()
        except Exception as e:
            text = " ".join(str(e).split())[:300]
            dropped.append({{"name": name, "version": dist.version, "plugin": ep.name,
                            "error": type(e).__name__ + (": " + text if text else "")}})
            break
for d in dropped:
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", d["name"]],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("{DROPPED_MARK} " + json.dumps(dropped))
"""
"""Runs in the setup container with the environment's Python (3.8 or later), after the install."""


def dropped_in(log: str, origins: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The plugins the check uninstalled, from the setup's output, each with where its requirement was named
    (empty when it came in as another requirement's dependency)."""
    for line in reversed(log.splitlines()):
        if line.startswith(DROPPED_MARK + " "):
            try:
                found = json.loads(line.split(" ", 1)[1])
            except ValueError:
                return []
            return [{**d, "from": ", ".join(origins.get(canonicalize_name(str(d.get("name", ""))), []))}
                    for d in found if isinstance(d, dict)]
    return []


def describe(dropped: list[dict[str, Any]]) -> str:
    """One line per dropped plugin, for the job's log."""
    return "; ".join(f"{d.get('name')} {d.get('version')}{' (' + d['from'] + ')' if d.get('from') else ''}: "
                     f"its pytest plugin does not import ({d.get('error')}), uninstalled" for d in dropped)
