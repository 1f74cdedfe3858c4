"""The desktop app (PySide6 + pyqtgraph). Only this package and the CLI's lazy GUI entry import Qt."""

from ui import _qtfix  # noqa: F401  - must run before any signal is emitted (PySide6 6.12.0 bug, see there)
