"""The projects file is the operator's and is checked whole before the server starts: its mode, its fields,
what a project may set, and the refs releases name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from patcher.errors import BadInput
from patcher.server import load_settings
from patcher.server.projects import load_projects
from tests.support.crashes import KEY, OTHER_KEY, project, projects_file

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_a_good_file_loads_and_names_refs_from_releases(tmp_path: Path) -> None:
    path = projects_file(tmp_path / "p.json", [project("/srv/shop", ref="v{version}", default_ref="main")],
                         [{"name": "ops", "url": "https://hooks.example.com/x", "secret": SECRET}])
    loaded = load_projects(path)
    shop = loaded.by_id("1")
    assert shop is not None and shop.ref_for("shop@1.4.2") == "v1.4.2" and shop.ref_for(None) == "main"
    assert loaded.webhooks[0].events[0] == "job.submitted" and SECRET in loaded.secrets()
    with pytest.raises(BadInput, match="cannot name a git ref"):
        shop.ref_for("../../etc")


def test_toml_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(f'[[projects]]\nid = 7\nname = "api"\nkeys = ["{KEY}"]\nrepo = "https://git.example.com/a.git"\n'
                    '[projects.delivery]\nforge = "gitlab"\n')
    path.chmod(0o600)
    api = load_projects(path).by_id("7")
    assert api is not None and api.delivery is not None and api.delivery.remote == "https://git.example.com/a.git"
    assert api.delivery.api(api.delivery.remote) == "https://git.example.com"
    assert api.delivery.repository_of(api.delivery.remote) == "a"


@pytest.mark.parametrize(("change", "words"), [
    ({"keys": ["short"]}, "at least 16"),
    ({"job": {"repo": "/etc"}}, "may not set repo"),
    ({"job": {"engine": "magic"}}, "engine"),
    ({"ref": "{release}{os}"}, "{release} and {version} only"),
    ({"delivery": {"forge": "github"}}, "needs a remote URL"),
    ({"delivery": {"forge": "github", "remote": "https://u:t@github.com/o/r.git"}}, "must not carry credentials"),
    ({"surprise": 1}, "Extra inputs are not permitted"),
])
def test_a_bad_project_is_refused_with_the_reason(tmp_path: Path, change: dict[str, Any], words: str) -> None:
    path = projects_file(tmp_path / "p.json", [project("/srv/shop") | change])
    with pytest.raises(BadInput, match="PATCHER_PROJECTS_FILE") as e:
        load_projects(path)
    assert words in str(e.value)


def test_keys_and_names_are_unique_and_webhooks_well_formed(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="every DSN key must be different"):
        load_projects(projects_file(tmp_path / "a.json", [project("/r"), project("/r", id=2, name="b")]))
    with pytest.raises(BadInput, match="whsec_"):
        load_projects(projects_file(tmp_path / "b.json", [], [{"name": "x", "url": "https://h/x", "secret": "abc"}]))
    with pytest.raises(BadInput, match="do not exist"):
        load_projects(projects_file(tmp_path / "c.json", [project("/r", keys=[OTHER_KEY])], [
            {"name": "x", "url": "https://h/x", "secret": SECRET, "projects": ["nope"]}]))


def test_a_file_others_can_read_stops_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = projects_file(tmp_path / "p.json", [project("/srv/shop")])
    path.chmod(0o644)
    monkeypatch.setenv("PATCHER_HOME", str(tmp_path))
    with pytest.raises(BadInput, match=r"PATCHER_PROJECTS_FILE.*readable by no one else"):
        load_settings(dev=True, projects_file=path)
