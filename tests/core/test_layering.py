"""The core and the probes never import Qt, pyqtgraph or the ui package (DESIGN.md §3)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("PySide6", "pyqtgraph", "ui", "shiboken6")


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, node.module


def test_core_and_probes_import_no_gui_at_module_level():
    offenders = []
    for package in ("advisor", "probes"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in tree.body:  # module level only: lazy imports inside functions are allowed
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    if name.split(".")[0] in FORBIDDEN:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert offenders == []


def test_probes_import_nothing_from_the_core():
    offenders = []
    for path in (ROOT / "probes").rglob("*.py"):
        for node, name in _imports(path):
            if name.split(".")[0] in ("advisor", "ui"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert offenders == []


def test_importing_the_core_loads_no_qt():
    code = ("import sys, advisor.cli.main, advisor.model.roofline, advisor.data.catalog, advisor.model.config; "
            "import probes; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'ui', 'shiboken6')]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""
