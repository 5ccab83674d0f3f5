"""The one exception type the CLI turns into a one-line message and exit status 2."""


class AnvilError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""


class RangeError(AnvilError):
    """A branch or immediate does not fit its encoding."""
