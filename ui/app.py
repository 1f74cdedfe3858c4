"""Entry point of the desktop app: ``advisor-gui`` (and ``advisor`` with no arguments).

    advisor-gui [SIZING.yaml]            open the window (and a saved sizing)
    advisor-gui --smoke                  start, load the whole catalog, render every view once, exit 0
    advisor-gui --screenshot FILE.png [--view NAME]   grab the window headless and exit
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time

from ui.tabs import TABS

VIEW_NAMES = tuple(t.option for t in TABS)
#: how long after the window shows the ranking processes start (ui/process.py): after the first paint
#: and the first tab's drawing, which they would otherwise compete with for the two cores
WARM_RANKING_AFTER_MS = 1500
NO_DISPLAY = ("advisor-gui: no display found (DISPLAY and WAYLAND_DISPLAY are unset); "
              "use the command line instead: advisor --help")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="advisor-gui", description="LLM hardware-sizing advisor — desktop app")
    p.add_argument("file", nargs="?", help="a sizing file to open (.yaml or .json, saved with File → Save)")
    p.add_argument("--smoke", action="store_true", help="render every view once and exit (0 = all good)")
    p.add_argument("--screenshot", metavar="FILE.png", help="save a picture of the window and exit")
    p.add_argument("--view", metavar="NAME", choices=VIEW_NAMES, help="tab to show first: " + ", ".join(VIEW_NAMES))
    p.add_argument("--settings", metavar="FILE.ini", help="read and write settings in this file")
    p.add_argument("--size", default="1400x900", help="window size for --screenshot (default 1400x900)")
    p.add_argument("--theme", choices=("system", "light", "dark"), default="system",
                   help="colours: follow the system (default), or force light or dark")
    # for benchmarks/gui.py: print a marker on the first painted frame and quit
    p.add_argument("--first-paint-exit", action="store_true", help=argparse.SUPPRESS)
    return p


def no_display() -> bool:
    return (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
            and not os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("QT_QPA_PLATFORM"))


def display_problem() -> str | None:
    """Why the app could not open a window here, or None. Qt aborts the whole process (five lines,
    exit 134) when DISPLAY names an X server that is not there, so on Linux the display is tried
    first with a plain socket: the Wayland socket, else the X server's (local socket, abstract
    socket or TCP 6000+N for a forwarded display). A platform plugin chosen by QT_QPA_PLATFORM is
    trusted."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if no_display():
        return NO_DISPLAY
    import socket

    wayland = os.environ.get("WAYLAND_DISPLAY")
    if wayland:
        path = wayland if os.path.isabs(wayland) else os.path.join(os.environ.get("XDG_RUNTIME_DIR", ""), wayland)
        if _connects(socket.AF_UNIX, path):
            return None
    display = os.environ.get("DISPLAY", "")
    if display:
        host, _, rest = display.rpartition(":")
        number = rest.split(".")[0]
        if number.isdigit():
            if host in ("", "unix"):
                local = f"/tmp/.X11-unix/X{number}"
                if _connects(socket.AF_UNIX, local) or _connects(socket.AF_UNIX, "\0" + local):
                    return None
            elif _connects(socket.AF_INET, (host, 6000 + int(number))):
                return None
    shown = ", ".join(f"{k}={os.environ[k]}" for k in ("WAYLAND_DISPLAY", "DISPLAY") if os.environ.get(k))
    return (f"advisor-gui: cannot reach the display ({shown}: nothing answers there); "
            "use the command line instead: advisor --help")


def _connects(family, address) -> bool:
    import socket

    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(address)
        return True
    except (OSError, ValueError):
        return False


def create_app(argv: list[str], theme: str = "system"):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from ui.widgets import apply_theme

    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication(["advisor-gui"] + argv)
    app.setOrganizationName("advisor")
    app.setApplicationName("advisor")
    app.setApplicationDisplayName("advisor")
    import advisor

    app.setApplicationVersion(advisor.__version__)
    # lets Wayland and the desktop match the window to the menu entry packaging/advisor.desktop
    QGuiApplication.setDesktopFileName("advisor")
    icon = _icon_path()
    if icon is not None:
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))
    apply_theme(app, theme)
    return app


def _icon_path():
    """The app icon: next to the frozen bundle's data, or in the source tree's packaging folder."""
    from pathlib import Path

    here = Path(getattr(sys, "_MEIPASS", Path(__file__).resolve().parents[1] / "packaging"))
    path = here / "advisor.png"
    return path if path.is_file() else None


def _settle(app, window, seconds: float = 15.0) -> None:
    """Process events until the background jobs are done (or ``seconds`` pass)."""
    end = time.monotonic() + seconds
    app.processEvents()
    while time.monotonic() < end:
        app.processEvents()
        if window.workers.busy == 0 and not window.recommend._timer.isActive() \
                and not window.will_it_run._timer.isActive():
            break
        time.sleep(0.01)
    app.processEvents()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    problem = display_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    try:
        app = create_app([], args.theme)
    except (ImportError, OSError) as exc:   # a broken Qt or libGL install: one line, not a traceback
        print(f"advisor-gui: the Qt libraries cannot load ({str(exc).splitlines()[0]}); "
              "use the command line instead: advisor --help", file=sys.stderr)
        return 2
    from ui import errors
    from ui.main_window import MainWindow
    from ui.settings import Settings

    errors.install()
    headless_run = args.smoke or args.screenshot
    settings_path = args.settings
    if headless_run and not settings_path:  # never read or touch the user's own settings
        import atexit
        import shutil

        folder = tempfile.mkdtemp(prefix="advisor-gui-")
        atexit.register(shutil.rmtree, folder, True)
        settings_path = os.path.join(folder, "settings.ini")
    settings = Settings(settings_path) if settings_path else Settings()
    try:
        window = MainWindow(settings=settings)
    except Exception as exc:  # noqa: BLE001 - a broken catalog must not give a traceback
        from advisor import api

        if isinstance(exc, api.AdvisorError):
            print(f"advisor-gui: {exc}", file=sys.stderr)
            return 1
        raise
    if args.file:
        window.open_file(args.file)  # a bad file is reported in the status bar; the app still opens
    if args.view:
        window.show_view(args.view)
    if args.screenshot:
        w, _, h = args.size.partition("x")
        window.resize(int(w), int(h))
    if args.first_paint_exit:
        _exit_on_first_paint(app, window)
    window.show()
    if args.smoke:
        return _smoke(app, window, t0)
    if args.screenshot:
        _settle(app, window)
        ok = window.grab().save(args.screenshot)
        window.settings.sync()
        if not ok:
            print(f"advisor-gui: could not write {args.screenshot}", file=sys.stderr)
            return 1
        print(f"advisor-gui: saved {args.screenshot} ({window.current_view_name()} tab)")
        return 0
    _quit_on_signals(window)
    from PySide6.QtCore import QTimer

    # the ranking processes start and warm up while the user reads the first tab
    QTimer.singleShot(WARM_RANKING_AFTER_MS, window.warm_ranking)
    return app.exec()


def _quit_on_signals(window) -> None:
    """Ctrl+C in the terminal (or SIGTERM) closes the window properly, saving the settings."""
    import signal

    from PySide6.QtCore import QTimer

    def close(*_args) -> None:
        window.close()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, close)
        except (ValueError, OSError):  # not the main thread, or not supported here
            pass
    # Python runs signal handlers only between bytecodes: wake it up regularly while Qt waits
    window._signal_timer = QTimer(window)
    window._signal_timer.timeout.connect(lambda: None)
    window._signal_timer.start(250)


def _exit_on_first_paint(app, window) -> None:
    from PySide6.QtCore import QEvent, QObject

    class FirstPaint(QObject):
        def eventFilter(self, obj, event):  # noqa: N802
            if event.type() == QEvent.Type.Paint and not getattr(self, "seen", False):
                self.seen = True
                print("first-paint", flush=True)
                from PySide6.QtCore import QTimer

                QTimer.singleShot(0, app.quit)
            return False

    window._first_paint = FirstPaint(window)
    window.results.installEventFilter(window._first_paint)


def _smoke(app, window, t0: float) -> int:
    from ui import errors

    app.processEvents()
    first = time.perf_counter() - t0
    rendered = ["inputs", "results"]
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        _settle(app, window)
        rendered.append(window.current_view_name())
    window.results.show_why("ttft")
    app.processEvents()
    cat = window.session.cat
    p = window.session.prediction
    bad = len(errors.shown)
    # the recommendations come from the ranking process (ui/process.py): a bundle that cannot start it
    # shows no rows and says why in the tab's status line
    rec = window.recommend.rec
    ranked = (f"{rec.n_passing:,} of {len(rec):,} configurations pass" if rec is not None
              else f"not ranked ({window.recommend.status.text()})")
    print(f"advisor-gui smoke: rendered {len(rendered)} views ({', '.join(rendered)}); catalog {len(cat.hardware)} "
          f"devices, {len(cat.models)} models, {len(cat.issues)} issues; {p.model} on {p.hardware}: "
          f"{p.decode_tok_s:.1f} tok/s; recommendations: {ranked}; first paint {first * 1000:.0f} ms; {bad} errors")
    window.close()
    return 1 if bad or rec is None else 0


if __name__ == "__main__":
    sys.exit(main())
