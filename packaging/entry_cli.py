"""Frozen entry point of `advisor` (the command line; no arguments opens the app); PyInstaller starts here."""

import sys

from advisor.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
