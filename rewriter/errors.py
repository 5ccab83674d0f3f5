"""The one exception type the CLI turns into a one-line message and exit status 2, and how
the CLI tells the other exceptions apart (decision 0036)."""

from __future__ import annotations

#: Exit status of ``anvil`` for an internal error: a bug in Anvil, not in the input (EX_SOFTWARE).
INTERNAL_ERROR_STATUS = 70

# The libraries that parse binaries for Anvil. What they raise is about the file they were
# given (an inconsistency the structure check cannot see), never about Anvil's own state.
_PARSERS = ("elftools", "capstone", "lief")


class AnvilError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""


class RangeError(AnvilError):
    """A branch or immediate does not fit its encoding."""


def is_parser_error(error: BaseException) -> bool:
    """Whether ``error`` was raised by a binary-parsing library (pyelftools, capstone, LIEF)."""
    return type(error).__module__.split(".")[0] in _PARSERS


def malformed(path: str, error: BaseException) -> AnvilError:
    """The AnvilError for a parser's ``error`` while reading the file ``path``."""
    return AnvilError(f"{path}: malformed ELF file ({one_line(str(error)) or type(error).__name__})")


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks made single spaces."""
    return " ".join(text.split())
