"""The results files one run of an instrumented program writes, and what ``anvil run`` says of them.

A results file an earlier run left must never pass for this run's (decision 0037). Just
before the program starts, the files this run is to write are removed: the results
file, the ``<results file>.<pid>`` files of forked children and the ``--out`` file. After
the run, a results file that exists is one this run wrote, and one that does not is
said to be missing; nothing old is left looking current.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from dataclasses import dataclass

from .errors import AnvilError
from .files import move_whole


@dataclass
class ResultsFiles:
    """The results files of one run, relative to the working directory the program runs in."""

    paths: list[str]
    out: str | None = None  # --out: where a results file is moved after the run

    def clear(self) -> None:
        """Remove what an earlier run left where this run writes; AnvilError if one cannot be."""
        for path in self._earlier_files():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise AnvilError(f"cannot remove {path}, the results of an earlier run: {e.strerror}") from None

    def _earlier_files(self) -> list[str]:
        """The results files, their forked children's (``<path>.<pid>``) and --out's target."""
        found = []
        for path in self.paths:
            found.append(path)
            directory, name = os.path.split(path)
            child = re.compile(re.escape(name) + r"\.\d+")
            found += [os.path.join(directory, n) for n in _names(directory or ".") if child.fullmatch(n)]
            if self.out:
                found.append(self._moved_to(path))
        return [p for p in found if os.path.lexists(p) and not os.path.isdir(p)]

    def _moved_to(self, path: str) -> str:
        """Where --out puts ``path``: the file it names, or ``path``'s name in the directory it names."""
        assert self.out is not None
        return os.path.join(self.out, os.path.basename(path)) if os.path.isdir(self.out) else self.out

    def report(self, quiet: bool, missing: str | None) -> list[str]:
        """Move what this run wrote to --out, say where it is (unless ``quiet``) and why a
        results file is missing (``missing``; None when that was said already); the paths."""
        found = []
        for path in self.paths:
            if not os.path.exists(path):
                if missing is not None:
                    print(f"anvil: no results written: {path} is missing ({missing})", file=sys.stderr)
                continue
            if self.out:
                path = move_whole(path, self._moved_to(path))
            if not quiet:
                print(f"anvil: results in {path}", file=sys.stderr)
            found.append(path)
        return found


def _names(directory: str) -> list[str]:
    """The names in ``directory``, sorted; none when it cannot be read."""
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def why_missing(returncode: int | None) -> str:
    """Why a program that ran with ``returncode`` (negative: killed by that signal) left no results."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the program was killed by {name} before it could write it"
    return "the program ended without writing it"
