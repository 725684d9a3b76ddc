"""The house's one rule: imports run one way (DESIGN.md, Layout).

    kindmem <- embeddings, audit <- facts, recall, runlog <- approvals <- privacy <- config

Every import of every module of the apps is read from its source (function-level imports
included: hiding an upward import in a function does not make it go the other way), and one
that reaches a higher app, or a sibling on the same floor, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

FLOORS = {
    "kindmem": 0,
    "embeddings": 1,
    "audit": 1,
    "facts": 2,
    "recall": 2,
    "runlog": 2,
    "approvals": 3,
    "privacy": 4,
    "config": 5,
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & set(FLOORS)


def _upward_imports() -> list[str]:
    base = Path(settings.BASE_DIR)
    wrong = []
    for app, floor in FLOORS.items():
        for path in sorted((base / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue  # a migration names the apps it depends on; it runs no app's code
            wrong.extend(
                f"{path.relative_to(base)} imports {target}"
                for target in sorted(_imports(path) - {app})
                if FLOORS[target] >= floor
            )
    return wrong


def test_imports_run_one_way():
    assert _upward_imports() == []


def test_the_check_sees_an_upward_import(tmp_path, settings):
    # given a copy of the bottom app that imports the top one
    (tmp_path / "kindmem").mkdir()
    (tmp_path / "kindmem" / "bad.py").write_text("def f():\n    from config import celery\n")
    for app in FLOORS:
        (tmp_path / app).mkdir(exist_ok=True)
    settings.BASE_DIR = tmp_path
    # then the check names it
    assert _upward_imports() == ["kindmem/bad.py imports config"]
