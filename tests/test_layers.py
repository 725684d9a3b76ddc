"""The house's one rule: imports run one way (DESIGN.md, Layout).

    api, compiled, retrieval <- kindmem <- console <- embeddings, audit, webhooks <- facts,
    recall, runlog
    <- approvals <- extraction <- privacy <- config

Every import of every module of the apps is read from its source (function-level imports
included: hiding an upward import in a function does not make it go the other way), and one
that reaches a higher app, or a sibling on the same floor, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

FLOORS = {
    "api": 0,
    "compiled": 0,
    "retrieval": 0,
    "kindmem": 1,
    "console": 2,
    "embeddings": 3,
    "audit": 3,
    "webhooks": 3,
    "facts": 4,
    "recall": 4,
    "runlog": 4,
    "approvals": 5,
    "extraction": 6,
    "privacy": 7,
    "config": 8,
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


def _module_of(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_imports(path: Path, modules: set[str]) -> set[str]:
    """The project modules `path` imports (`from facts import services` is facts.services)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found & modules


def _import_cycles() -> list[list[str]]:
    """Every cycle among the apps' modules (function-level imports included): a service that
    imports its tasks while the tasks import the service is one, hidden or not."""
    base = Path(settings.BASE_DIR)
    paths = {
        _module_of(path, base): path
        for app in FLOORS
        for path in sorted((base / app).rglob("*.py"))
        if "migrations" not in path.parts
    }
    graph = {m: _module_imports(p, set(paths)) - {m} for m, p in paths.items()}
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            cycle = trail[trail.index(module) :]
            if sorted(cycle) not in [sorted(c) for c in cycles]:
                cycles.append(cycle)
            return
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return cycles


def test_no_module_imports_one_that_imports_it():
    assert _import_cycles() == []


def test_the_check_sees_a_service_and_its_task_importing_each_other(tmp_path, settings):
    # given an app whose services import its tasks, inside a function, and the other way round
    for app in FLOORS:
        (tmp_path / app).mkdir()
    (tmp_path / "facts" / "services.py").write_text("def f():\n    from facts import tasks\n")
    (tmp_path / "facts" / "tasks.py").write_text("from facts.services import f\n")
    settings.BASE_DIR = tmp_path
    # then the check names the cycle
    assert _import_cycles() == [["facts.services", "facts.tasks"]]


WRITES = {"create", "update", "delete", "bulk_create", "bulk_update", "get_or_create"}
WRITES |= {"update_or_create"}


def _foreign_writes(path: Path, app: str) -> list[str]:
    """Writes in `path` through a manager of a model another app owns (`Run.objects...update`):
    an app writes only its own tables; others go through the owner's services."""
    tree = ast.parse(path.read_text(), filename=str(path))
    foreign = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
        for alias in node.names
        if node.module.split(".")[0] in FLOORS
        and node.module.split(".")[0] != app
        and ".models" in f".{node.module.partition('.')[2]}"
    }
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in WRITES:
            continue
        chain, root = node.func.value, None
        through_manager = False
        while isinstance(chain, ast.Attribute | ast.Call | ast.Subscript):
            if isinstance(chain, ast.Attribute) and chain.attr == "objects":
                through_manager = True
            chain = chain.func if isinstance(chain, ast.Call) else chain.value
        if isinstance(chain, ast.Name):
            root = chain.id
        if through_manager and root in foreign:
            found.append(f"{path.name}:{node.lineno} {root}.objects...{node.func.attr}()")
    return found


def _apps_writing_others_tables() -> list[str]:
    base = Path(settings.BASE_DIR)
    wrong = []
    for app in FLOORS:
        if app == "config":
            continue  # the wiring: demo seeding and the CLI may write any app's rows
        for path in sorted((base / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            wrong += [f"{app}/{w}" for w in _foreign_writes(path, app)]
    return wrong


def test_every_app_writes_only_its_own_tables():
    assert _apps_writing_others_tables() == []


def test_the_check_sees_a_write_to_another_apps_table(tmp_path, settings):
    for app in FLOORS:
        (tmp_path / app).mkdir()
    (tmp_path / "runlog" / "erasure.py").write_text(
        "from kindmem.models import Run\n\n"
        "def f(ids):\n    Run.objects.filter(pk__in=ids).update(user=None)\n"
    )
    settings.BASE_DIR = tmp_path
    assert _apps_writing_others_tables() == ["runlog/erasure.py:4 Run.objects...update()"]


def _ready_hooks_into_other_apps() -> list[str]:
    """`AppConfig.ready` bodies that import another of the project's apps: a start-up hook
    that installs behaviour into another app (a settings-named dotted path does it in the open:
    CONTRIBUTING, "A lower app that needs a higher one's behaviour")."""
    base = Path(settings.BASE_DIR)
    wrong = []
    for app in FLOORS:
        path = base / app / "apps.py"
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.FunctionDef) and node.name == "ready"):
                continue
            for inner in ast.walk(node):
                names = (
                    [alias.name for alias in inner.names]
                    if isinstance(inner, ast.Import)
                    else [inner.module]
                    if isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0
                    else []
                )
                wrong += [
                    f"{app}/apps.py:{inner.lineno} imports {name}"
                    for name in names
                    if name.split(".")[0] in FLOORS and name.split(".")[0] != app
                ]
    return wrong


def test_no_start_up_hook_installs_behaviour_into_another_app():
    assert _ready_hooks_into_other_apps() == []


def test_the_check_sees_a_ready_hook_reaching_into_another_app(tmp_path, settings):
    for app in FLOORS:
        (tmp_path / app).mkdir()
    (tmp_path / "approvals" / "apps.py").write_text(
        "from django.apps import AppConfig\n\n"
        "class ApprovalsConfig(AppConfig):\n"
        "    def ready(self):\n"
        "        from approvals.services import approval_open\n"
        "        from facts.review_queue import review_queue_connect\n"
        "        review_queue_connect(approval_open)\n"
    )
    settings.BASE_DIR = tmp_path
    assert _ready_hooks_into_other_apps() == ["approvals/apps.py:6 imports facts.review_queue"]
