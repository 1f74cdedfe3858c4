"""Frozen entry point of `advisor-gui` (the desktop app); PyInstaller starts here."""

import sys

from ui.app import main

if __name__ == "__main__":
    sys.exit(main())
