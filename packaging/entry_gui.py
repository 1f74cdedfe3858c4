"""Frozen entry point of `advisor-gui` (the desktop app); PyInstaller starts here."""

import multiprocessing
import sys

from ui.app import main

if __name__ == "__main__":
    multiprocessing.freeze_support()   # the ranking process (ui.process) starts this executable again
    sys.exit(main())
