"""Frozen entry point of `advisor` (the command line; no arguments opens the app); PyInstaller starts here."""

from advisor.cli.entry import run

if __name__ == "__main__":
    run()
