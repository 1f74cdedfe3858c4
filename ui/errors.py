"""Uncaught exceptions: logged, then shown in a non-blocking dialog with a "Copy details" button.

A slot that raises must never kill the app silently. `install()` replaces `sys.excepthook`; the dialog
is shown with `show()` (not `exec()`), so headless runs and tests never block on it.
"""

from __future__ import annotations

import logging
import sys
import traceback
from types import TracebackType

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

log = logging.getLogger("advisor.ui")

#: the dialogs shown so far (tests look here); also keeps them alive
shown: list["ErrorDialog"] = []


class ErrorDialog(QDialog):
    def __init__(self, summary: str, details: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("advisor — unexpected error")
        self.details = details
        lay = QVBoxLayout(self)
        lab = QLabel(f"<b>Something went wrong.</b> The app keeps running, but the last action may not have "
                     f"finished.<br>{_esc(summary)}")
        lab.setWordWrap(True)
        lay.addWidget(lab)
        text = QPlainTextEdit(details)
        text.setReadOnly(True)
        text.setMinimumSize(520, 180)
        lay.addWidget(text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy = QPushButton("Copy details")
        copy.setToolTip("Copy the error report to the clipboard, to paste into a bug report")
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(self.copy_details)
        buttons.rejected.connect(self.close)
        lay.addWidget(buttons)

    def copy_details(self) -> None:
        QGuiApplication.clipboard().setText(self.details)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def report(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    details = "".join(traceback.format_exception(exc_type, exc, tb))
    log.error("uncaught exception:\n%s", details)
    if QApplication.instance() is None:
        return
    try:
        import advisor

        details = f"advisor {advisor.__version__}, Python {sys.version.split()[0]}\n\n{details}"
    except Exception:  # noqa: BLE001
        pass
    dlg = ErrorDialog(f"{exc_type.__name__}: {exc}", details)
    shown.append(dlg)
    del shown[:-5]
    dlg.show()


def install() -> None:
    """Route uncaught exceptions (including those raised in Qt slots) to `report`."""
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        try:
            report(exc_type, exc, tb)
        except Exception:  # noqa: BLE001 - never let the error reporter itself crash
            previous(exc_type, exc, tb)

    sys.excepthook = hook
