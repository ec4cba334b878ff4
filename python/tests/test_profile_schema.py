"""The profile's JSON schema (docs/profile.schema.json, described in docs/profile.md):
the stored profiles the page tests draw are valid, and the schema refuses what a
reader of profiles could not use."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import REPO

jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed (tools/setup.sh installs it)")

SCHEMA = json.loads((REPO / "docs" / "profile.schema.json").read_text())
PROFILES = sorted((REPO / "tests" / "profiles").glob("*.json"))


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", PROFILES, ids=[p.name for p in PROFILES])
def test_each_stored_profile_is_valid(path) -> None:
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def test_there_are_stored_profiles() -> None:
    assert {p.stem for p in PROFILES} >= {"branches", "jacobi"}


def _broken(change) -> dict:
    p = copy.deepcopy(json.loads((REPO / "tests" / "profiles" / "jacobi.json").read_text()))
    change(p)
    return p


@pytest.mark.parametrize(
    "what, change",
    [
        ("another format", lambda p: p.update(format="nsys")),
        ("a later version", lambda p: p.update(version=2)),
        ("no timeline", lambda p: p.pop("timeline")),
        ("a negative time", lambda p: p["commands"][0]["device_us"].update(min=-1.0)),
        ("a span without its end", lambda p: p["timeline"][0].pop("end_us")),
        ("a share above 1", lambda p: p["critical_path"].update(share=1.5)),
        ("a key the schema does not know", lambda p: p["commands"][0].update(colour="red")),
        ("a spread without its p50", lambda p: p["replay_us"]["plain"].pop("p50")),
    ],
)
def test_the_schema_refuses(what, change) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_broken(change), SCHEMA)
