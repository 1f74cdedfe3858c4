"""The command line's exit codes, in one place (the README's "CLI contract" lists them):

0 the answer was printed (every target met, where targets were given); 1 printed, but a target or the
accuracy bar was missed; 2 bad input — a flag, a name, a file — said in one line on stderr;
3 ``--probe`` found no accelerator (the CPU figures are printed); 130 interrupted (Ctrl+C);
70 an internal error (one line; ADVISOR_DEBUG=1 shows the traceback).
"""

import sys

EXIT_OK = 0
EXIT_UNMET = 1
EXIT_USAGE = 2
EXIT_NO_ACCELERATOR = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


def does_not_fit(why: str) -> int:
    """Say on stderr, in one line, why the configuration does not fit (once, where the reason already
    begins with it), and return `EXIT_UNMET`."""
    print(f"advisor: {why}" if why.startswith("does not fit") else f"advisor: does not fit: {why}", file=sys.stderr)
    return EXIT_UNMET
