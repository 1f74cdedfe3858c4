"""Render packaging/advisor.svg to packaging/advisor.png (256 px) with Qt, headless.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/make_icon.py [SIZE]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    size = int(argv[0]) if argv else 256
    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - QImage painting wants an app
    renderer = QSvgRenderer(str(HERE / "advisor.svg"))
    if not renderer.isValid():
        print("make_icon: advisor.svg is not valid SVG", file=sys.stderr)
        return 1
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    out = HERE / ("advisor.png" if size == 256 else f"advisor-{size}.png")
    if not image.save(str(out)):
        print(f"make_icon: could not write {out}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
