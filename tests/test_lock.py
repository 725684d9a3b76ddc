"""Installs reproduce: requirements.lock pins every distribution the suite runs with, at the
version installed here, and every pin lies within the ranges the pyproject files declare. A
dependency added or bumped without `make lock` fails here, not on the next fresh machine."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
OURS = {"kindmem", "kindmem-client"}
# what a virtualenv brings of its own; `pip freeze` leaves them out
TOOLING = {"pip", "setuptools", "wheel", "distribute"}


def locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            [spec] = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = Version(spec.version)
    return pins


def declared() -> list[Requirement]:
    requirements = []
    for pyproject in (ROOT / "pyproject.toml", ROOT / "clients/python/pyproject.toml"):
        project = tomllib.loads(pyproject.read_text())["project"]
        lines = [*project.get("dependencies", [])]
        for extra in project.get("optional-dependencies", {}).values():
            lines += extra
        requirements += [Requirement(line) for line in lines]
    return [r for r in requirements if canonicalize_name(r.name) not in OURS]


def test_every_installed_distribution_is_locked_at_its_version():
    pins = locked()
    installed = {
        canonicalize_name(d.metadata["Name"]): Version(d.version) for d in metadata.distributions()
    }
    unlocked = {
        name: str(version)
        for name, version in installed.items()
        if name not in OURS | TOOLING and pins.get(name) != version
    }
    assert unlocked == {}, "installed but not locked at this version: run `make lock`"


def test_every_pin_satisfies_the_declared_ranges():
    pins = locked()
    outside = {
        str(r): str(pins[canonicalize_name(r.name)])
        for r in declared()
        if canonicalize_name(r.name) in pins
        and not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
    }
    missing = sorted(
        str(r)
        for r in declared()
        if canonicalize_name(r.name) not in pins
        and (r.marker is None or r.marker.evaluate({"extra": ""}))
    )
    assert outside == {}
    assert missing == [], "declared but not locked: run `make lock`"
