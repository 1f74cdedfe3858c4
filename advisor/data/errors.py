"""The one error type the core raises for bad input; the CLI turns it into a one-line message."""


class AdvisorError(Exception):
    """Bad input or an impossible request, with a message meant for the user."""


class UnknownName(AdvisorError):
    """A name that matches no catalog entry, or several equally well."""

    def __init__(self, message: str, candidates: tuple[str, ...] = ()):
        super().__init__(message)
        self.candidates = candidates
