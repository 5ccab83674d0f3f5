"""Run a session's analysis in Python: a tool written as a class, one method per routine.

A Python analysis file defines ``class Analysis``; the server makes one instance per
session, ``Analysis(session)``, and calls, for every record, the method named after
the record's routine with the routine's arguments in order (ints; ``string``
arguments as ``str``). A method ``<routine>_batch(self, *columns)``, if present, is
called instead with one sequence per argument, covering a run of consecutive
records of that routine (the run never spans records of other routines, so order
is kept). Program start and end routines are plain calls. Results go through
``session.open_output(path)`` (a text file object); the client writes them where the
program would have. ``session`` also offers ``bias``, ``blocks`` (address | Thumb
bit, instructions, procedure index), ``procedures`` (address, name) and ``arrays``
(name -> list: the arrays the program fills inline, set before the end routines run).
See analysis_libs/cachesim/cachesim.py for an example.
"""

from __future__ import annotations

import io
import sys
from array import array
from pathlib import Path

from .sitetable import SiteTable
from .stream import StreamError, word_code


class Session:
    """What a Python analysis sees of its session."""

    def __init__(self, table: SiteTable, bias: int) -> None:
        facts = table.facts
        self.bias = bias
        self.blocks = list(zip(facts["block_addr"], facts["block_insns"], facts["block_proc"]))
        self.procedures = list(zip(facts["proc_addr"], facts["proc_name"]))
        # Only arrays the program fills (inline counters) mean anything to a Python analysis;
        # zero-filled until the end record brings them, before the end routines run.
        self.arrays: dict[str, list[int]] = {a.name: [0] * a.length for a in table.target_arrays}
        self.outputs: dict[str, io.StringIO] = {}

    def open_output(self, path: str) -> io.StringIO:
        """A results file: written back on the client's side when the session ends."""
        out = self.outputs[path] = _Output()
        return out


class _Output(io.StringIO):
    def close(self) -> None:  # keep the text readable after ``with`` blocks
        pass


def load_class(path: Path) -> type:
    """The ``Analysis`` class of a Python analysis file."""
    from rewriter.tool_files import import_file

    module = import_file(path, "anvil_analysis_")
    cls = getattr(module, "Analysis", None)
    if not isinstance(cls, type):
        raise ImportError(f"{path} defines no class Analysis")
    return cls


class PyDispatcher:
    """The Dispatcher (rehost/stream.py) for a Python analysis class."""

    def __init__(self, cls: type, table: SiteTable) -> None:
        missing = [r.name for r in table.routines if not callable(getattr(cls, r.name, None))]
        if missing:
            from .dispatch_c import MissingRoutine
            raise MissingRoutine(f"the Python analysis does not define routine '{missing[0]}'")
        self.cls = cls
        self.table = table
        self.records = 0

    def start(self, bias: int) -> None:
        self.session = Session(self.table, bias)
        self.analysis = self.cls(self.session)
        # Per site: bound method, batch method or None, static args, dynamic positions.
        self.sites = []
        for routine, args in self.table.sites:
            info = self.table.routines[routine]  # the table is checked: None exactly in the dynamic slots
            method = getattr(self.analysis, info.name)
            batch = getattr(self.analysis, info.name + "_batch", None)
            static = self.table.static_values(routine, args, self.session.bias)
            self.sites.append((routine, method, batch, static, info.dynamic_slots))
        self._call(self.table.start)

    def _call(self, calls: list[tuple[int, list]]) -> None:
        """Program start or end routines."""
        for routine, args in calls:
            method = getattr(self.analysis, self.table.routines[routine].name)
            method(*self.table.static_values(routine, args, self.session.bias))

    def dispatch(self, data: bytes) -> tuple[int, bool]:
        word = self.table.word_bytes
        words = array(word_code(word))
        words.frombytes(data[:len(data) - len(data) % word])
        if sys.byteorder != "little":
            words.byteswap()
        nsites = len(self.sites)
        end = (1 << 8 * word) - 1  # the end marker: every bit set
        i, n = 0, len(words)
        run: tuple | None = None
        columns: list[list[int]] = []
        ended = False
        while i < n:
            site_id = words[i]
            if site_id >= nsites:
                if site_id == end:
                    ended = True
                    break
                self._flush(run, columns)
                raise StreamError(f"unknown site id {site_id} after {self.records} records "
                                  f"(the site table has {nsites})")
            routine, method, batch, static, slots = self.sites[site_id]
            if i + 1 + len(slots) > n:
                break
            args = list(static)
            for k, slot in enumerate(slots):
                args[slot] = words[i + 1 + k]
            i += 1 + len(slots)
            self.records += 1
            if batch is None:
                self._flush(run, columns)
                run, columns = None, []
                method(*args)
                continue
            if run is None or run[0] != routine:
                self._flush(run, columns)
                run = (routine, batch)
                columns = [[] for _ in args]
            for column, value in zip(columns, args):
                column.append(value)
        self._flush(run, columns)
        return word * i, ended

    @staticmethod
    def _flush(run: tuple | None, columns: list[list[int]]) -> None:
        """Hand a run's columns to its batch method (the lists are the analysis's to keep)."""
        if run is not None and columns and columns[0]:
            run[1](*columns)

    def set_array(self, index: int, data: bytes) -> None:
        array_ = self.table.target_arrays[index]
        code = {1: "B", 2: "H", 4: "I", 8: "Q"}[array_.element_size]
        values = array(code)
        values.frombytes(data)
        self.session.arrays[array_.name] = values.tolist()

    def finish(self) -> dict[str, bytes]:
        self._call(self.table.end)
        return {path: out.getvalue().encode() for path, out in self.session.outputs.items()}

    def close(self) -> None:
        pass
