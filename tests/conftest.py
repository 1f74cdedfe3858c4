"""Test set-up shared by all suites: headless Qt, and a private user-data folder per test."""

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def private_user_data(tmp_path, monkeypatch):
    """Every test gets an empty user-data folder, so nothing leaks between tests or from the machine."""
    folder = tmp_path / "userdata"
    monkeypatch.setenv("ADVISOR_DATA_DIR", str(folder))
    yield folder


@pytest.fixture(scope="session")
def cat():
    """The shipped catalog without any user overlay."""
    from advisor.data.catalog import load_catalog

    return load_catalog(user=None)
