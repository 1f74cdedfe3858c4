"""The layers import only downwards (docs/ARCHITECTURE.md), checked on every import statement,
module-level or inside a function: a lazy import is still a dependency.

    data ← model ← plan ← text ← cli        fit ← cli        api = data + model + plan + fit + text
    probes: a leaf (imports nothing of ours)    ui: the app, above the core; nothing imports it
    except the CLI's entry to the desktop app.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUI = ("PySide6", "pyqtgraph", "shiboken6", "ui")
#: what each part of the core may import from the core
ALLOWED = {
    "data": {"data"},
    "model": {"data", "model"},
    "plan": {"data", "model", "plan"},
    "fit": {"data", "model", "fit"},
    "text": {"data", "model", "plan", "text"},
    "cli": {"data", "model", "plan", "fit", "text", "cli"},
    "api": {"data", "model", "plan", "fit", "text"},   # fit: the app's measured-vs-predicted
    "__init__": set(),
}
#: the places the core may reach the desktop app, each a lazy import inside a command: `advisor` with no
#: arguments opens the app; `advisor report` draws its PDF with Qt
GUI_ENTRY = {("advisor/cli/main.py", "ui.app"), ("advisor/cli/report.py", "ui.report")}


def _imports(path: Path):
    """(line, module) for every absolute import in the file, wherever it stands."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _layer(path: Path) -> str:
    rel = path.relative_to(ROOT / "advisor")
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_core_module_belongs_to_a_layer():
    assert {_layer(p) for p in (ROOT / "advisor").rglob("*.py")} <= set(ALLOWED)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_core_layers_import_only_downwards():
    offenders = []
    for path in (ROOT / "advisor").rglob("*.py"):
        layer = _layer(path)
        rel = str(path.relative_to(ROOT))
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] in GUI:
                if (rel, name) not in GUI_ENTRY:
                    offenders.append(f"{rel}:{line} imports {name}")
            elif parts[0] == "advisor" and len(parts) > 1 and parts[1] not in ALLOWED[layer]:
                offenders.append(f"{rel}:{line} ({layer}) imports {name}")
    assert offenders == []


def test_probes_import_nothing_of_ours():
    offenders = [f"{p.relative_to(ROOT)}:{line} imports {name}"
                 for p in (ROOT / "probes").rglob("*.py") for line, name in _imports(p)
                 if name.split(".")[0] in ("advisor",) + GUI]
    assert offenders == []


def test_the_app_uses_the_core_through_its_public_face():
    # the app may use the facade, the text helpers, the probe and the machine matching; the
    # physics modules stay free to change under it
    allowed = ("advisor", "advisor.api", "advisor.text.format", "advisor.text.verdicts", "advisor.plan.machine",
               "advisor.data.userdata")
    offenders = [f"{p.relative_to(ROOT)}:{line} imports {name}"
                 for p in (ROOT / "ui").rglob("*.py") for line, name in _imports(p)
                 if name.split(".")[0] == "advisor" and name not in allowed]
    assert offenders == []


def test_importing_the_core_loads_no_qt():
    code = ("import sys, advisor.api, advisor.cli.main, advisor.fit.calibration; import probes; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'ui', 'shiboken6')]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _runtime_imports(path: Path):
    """Every module name an import statement of the file names (``from a import b`` names ``a`` and
    ``a.b``), module-level or in a function, leaving out what only type checkers read
    (``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_no_module_of_ours_imports_itself_back():
    """No import circle among our modules (advisor, ui, probes), lazy imports included: a circle
    means two modules are one, split by accident (issue 28 found data.catalog <-> data.importers,
    ui.app <-> ui.main_window and fit.measurements <-> fit.serving_cases)."""
    paths = [p for top in ("advisor", "ui", "probes") for p in (ROOT / top).rglob("*.py")]
    modules = {_module_of(p): p for p in paths}
    graph = {mod: {name for name in _runtime_imports(path) if name in modules and name != mod
                   and not mod.startswith(name + ".")}   # a module's own package is not a circle
             for mod, path in modules.items()}
    cycles: list[str] = []
    state: dict[str, str] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = "open"
        for d in sorted(graph[m]):
            if state.get(d) == "open":
                cycles.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d, stack + [d])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles
