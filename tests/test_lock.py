"""Installs reproduce: requirements/test.lock pins every distribution the suite runs with, at the
version installed here and with the hashes pip checks (`pip install --require-hashes`), pip and
the build's setuptools included; requirements/run.lock pins what `make run` installs at the same
versions; and every pin lies within the ranges the pyproject files declare. A dependency added or
bumped without `make lock` fails here, not on the next fresh machine."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
TEST_LOCK = ROOT / "requirements/test.lock"
RUN_LOCK = ROOT / "requirements/run.lock"
KINDMEM = ROOT / "pyproject.toml"
CLIENT = ROOT / "clients/python/pyproject.toml"
# installed editable from the checkout (`pip install --no-deps -e`), never from a lock
OURS = {"kindmem", "kindmem-client"}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: int


def locked(lock: Path) -> dict[str, Pin]:
    """The lock's pins by name: a requirement line with its `\\`-continued `--hash` options."""
    text = re.sub(r"\\\n", " ", lock.read_text())
    pins = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        spec, _, options = line.partition(" ")
        requirement = Requirement(spec)
        [specifier] = requirement.specifier
        assert specifier.operator == "==", line
        assert HASH.sub("", options).strip() == "", f"an option other than a hash: {line}"
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"locked twice: {name}"
        pins[name] = Pin(Version(specifier.version), len(HASH.findall(options)))
    return pins


def declared(pyproject: Path, extras: set[str] | None = None) -> list[Requirement]:
    """What a pyproject file asks for: its dependencies, the named extras (all when None) and
    what builds it (`[build-system] requires`, installed from the lock for the editable build)."""
    document = tomllib.loads(pyproject.read_text())
    project = document["project"]
    lines = [*project.get("dependencies", []), *document["build-system"]["requires"]]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extras is None or extra in extras:
            lines += requirements
    requirements = [Requirement(line) for line in lines]
    return [r for r in requirements if canonicalize_name(r.name) not in OURS]


def test_every_installed_distribution_is_locked_at_its_version():
    pins = locked(TEST_LOCK)
    installed = {
        canonicalize_name(d.metadata["Name"]): Version(d.version) for d in metadata.distributions()
    }
    unlocked = {
        name: str(version)
        for name, version in installed.items()
        if name not in OURS and (name not in pins or pins[name].version != version)
    }
    assert unlocked == {}, "installed but not locked at this version: run `make lock`"


def test_every_pin_has_a_hash():
    for lock in (TEST_LOCK, RUN_LOCK):
        unhashed = sorted(name for name, pin in locked(lock).items() if pin.hashes == 0)
        assert unhashed == [], f"{lock.name}: pins without a hash (`make lock` writes them)"


def test_the_run_lock_installs_the_versions_the_suite_ran_with():
    tested = locked(TEST_LOCK)
    moved = {
        name: str(pin.version)
        for name, pin in locked(RUN_LOCK).items()
        if name not in tested or tested[name].version != pin.version
    }
    assert moved == {}, "run.lock is not a part of test.lock: run `make lock`"


def test_pip_and_the_build_backend_are_locked():
    # `pip install --no-build-isolation -e .` builds with the setuptools the lock installed
    for lock in (TEST_LOCK, RUN_LOCK):
        assert {"pip", "setuptools"} <= locked(lock).keys(), lock.name


def test_every_pin_satisfies_the_declared_ranges():
    for lock, wanted in (
        (TEST_LOCK, [*declared(KINDMEM), *declared(CLIENT)]),
        (RUN_LOCK, declared(KINDMEM, extras={"local", "onnx"})),
    ):
        pins = {name: pin.version for name, pin in locked(lock).items()}
        outside = {
            str(r): str(pins[canonicalize_name(r.name)])
            for r in wanted
            if canonicalize_name(r.name) in pins
            and not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
        }
        missing = sorted(
            str(r)
            for r in wanted
            if canonicalize_name(r.name) not in pins
            and (r.marker is None or r.marker.evaluate({"extra": ""}))
        )
        assert outside == {}, lock.name
        assert missing == [], f"declared but not in {lock.name}: run `make lock`"
