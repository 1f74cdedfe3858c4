"""The `advisor` command's process: what happens to Ctrl+C outside `main`.

Importing the command line takes a moment (numpy, YAML, the catalog's modules), and a SIGINT then,
or after the command has finished while the interpreter shuts down (Qt's objects going away after a
report), used to end in a traceback or a silent death by signal. Here an interrupt while importing
exits 130 with one line, and one after the command finished is ignored: its work is done and its
exit status stands. This module imports nothing heavy itself.
"""

from __future__ import annotations

import os
import signal
import sys


def run() -> None:
    def early(*_args) -> None:
        sys.stderr.write("advisor: interrupted\n")
        sys.stderr.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, early)
    from advisor.cli.main import main

    signal.signal(signal.SIGINT, signal.default_int_handler)   # main turns it into exit 130
    code = main(restore_sigint=False)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:
        # the interrupt landed while the handler was being switched (signal.signal is Python code that
        # runs pending handlers): the work is done, so it is ignored like one a moment later
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if code == 130:
        # main reported the interrupt, but CPython may have marked it "unhandled" on the way (seen in
        # about one run in forty) and would end the process by SIGINT instead of this status: leave
        # here, the output flushed (temporary files are already gone)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover - `python -m advisor.cli.entry`
    run()
