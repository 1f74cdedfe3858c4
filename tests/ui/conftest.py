"""Fixtures for the app's tests: a real MainWindow on a private settings file and user-data folder."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def app_catalog():
    """The catalog, loaded once for the UI tests (it is immutable)."""
    from advisor import api

    return api.load_catalog(user=False)


@pytest.fixture
def settings_path(tmp_path):
    return tmp_path / "settings.ini"


@pytest.fixture
def make_window(qtbot, app_catalog, settings_path):
    """Build a shown MainWindow; its worker threads are drained at teardown."""
    from ui.main_window import MainWindow
    from ui.session import Session
    from ui.settings import Settings

    made = []

    def make(restore: bool = True, path=None):
        w = MainWindow(session=Session(app_catalog), settings=Settings(path or settings_path), restore=restore)
        qtbot.addWidget(w)
        w.resize(1300, 850)
        w.show()
        made.append(w)
        return w

    yield make
    for w in made:
        w.workers.wait(10000)


@pytest.fixture
def window(make_window):
    return make_window()


@pytest.fixture
def settle(qtbot):
    """settle(window_or_dialog): wait until its background jobs (imports are read on a worker) have
    delivered their results on the GUI thread."""
    def wait(owner, timeout: int = 20000) -> None:
        qtbot.waitUntil(lambda: owner.workers.busy == 0, timeout=timeout)

    return wait
