"""The app reaches the core only through its public face (advisor.api) and the few helpers it is
allowed: advisor.plan.machine (probe matching), advisor.text.format (numbers), probes, advisor itself."""

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "ui"
ALLOWED = {"advisor", "advisor.api", "advisor.__version__", "advisor.plan.machine", "advisor.text.format", "probes"}


def test_ui_imports_only_the_core_api():
    offenders = []
    for path in UI.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "advisor"]
            for name in names:
                root = name.split(".")[0]
                if root in ("advisor", "probes") and name not in ALLOWED:
                    offenders.append(f"{path.relative_to(UI.parent)}:{node.lineno} imports {name}")
    assert offenders == []
