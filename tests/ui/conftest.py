"""The app's fixtures (a real MainWindow on a private settings file and user-data folder, `settle`) live in
tests/conftest.py, shared with tests/real."""
