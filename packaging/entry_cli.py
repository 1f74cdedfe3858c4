"""Frozen entry point of `advisor` (the command line; no arguments opens the app); PyInstaller starts here."""

import multiprocessing

from advisor.cli.entry import run

if __name__ == "__main__":
    multiprocessing.freeze_support()   # the app's ranking process (ui.process) starts this executable again
    run()
