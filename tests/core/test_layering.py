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
