"""The byte stream a ReHost binary writes, and a reader that feeds it to a dispatcher.

All words are little-endian, as wide as the program's addresses (the site table's
``word_bytes``: 4 for an ARM program, 8 for an x86-64 one)::

    header   MAGIC VERSION digest[0:4] digest[4:8] bias     (5 words)
    record   site-id arg...      (one word per dynamic argument of the site's routine)
    end      END narrays { index nbytes data... (padded to a word) } * narrays

``digest`` ties the stream to its site table (first 8 bytes of the table file's
SHA-256); ``bias`` is the load bias (run-time minus link-time address) the host
adds to static instruction addresses. A stream without its end record means the
program did not finish normally or records were lost; the reader says so.
"""

from __future__ import annotations

import struct
from typing import Protocol

from .sitetable import SiteTable

MAGIC = 0x48524E41  # "ANRH"
VERSION = 1
END = 0xFFFFFFFF  # of a 32-bit stream; every bit of the word set, whatever its width
HEADER = struct.Struct("<5I")  # a 32-bit stream's
_WORD_CODES = {4: "I", 8: "Q"}


def word_code(word_bytes: int) -> str:
    """The struct (and array) code of a stream word ``word_bytes`` wide."""
    return _WORD_CODES[word_bytes]


class StreamError(Exception):
    """The record stream is malformed; the session cannot go on."""


#: A session's results come back in one gRPC message, which protobuf caps at 2 GiB: the
#: results files together must leave room for the rest of the summary (README: Limits).
RESULTS_LIMIT = 2**31 - 2**20


class ResultsTooLarge(Exception):
    """The analysis wrote more than a session can send back (RESULTS_LIMIT)."""


def check_results_size(sizes: dict[str, int]) -> None:
    """Raise ResultsTooLarge, naming the files, if results of these sizes (path -> bytes)
    cannot come back in one session's summary.

    Checked before the results are read out of the analysis (decision 0092): ctypes reads
    a C buffer of 2 GiB or more with an ``int`` size, so a memtrace of 2-4 GiB ended the
    session with a SystemError and one of 4 GiB or more came back cut to its size modulo
    4 GiB, as if complete.
    """
    total = sum(sizes.values())
    if total > RESULTS_LIMIT:
        files = ", ".join(f"{path} ({size:,} bytes)" for path, size in sizes.items())
        raise ResultsTooLarge(f"the results are {total:,} bytes, over the {RESULTS_LIMIT:,} a session can send "
                              f"back in its one message (protobuf's 2 GiB): {files}")


class Dispatcher(Protocol):
    """What runs a session's analysis: the C library or a Python class."""

    records: int

    def start(self, bias: int) -> None:
        """Set up the analysis state and run the program start routines."""

    def dispatch(self, data: bytes) -> tuple[int, bool]:
        """Run the complete records at the start of ``data`` (a partial word at its end is
        left alone); return (bytes used, whether the end marker follows). Raises
        StreamError on an unknown site."""

    def set_array(self, index: int, data: bytes) -> None:
        """Fill the index-th array the program sends (SiteTable.target_arrays)."""

    def finish(self) -> dict[str, bytes]:
        """Run the program end routines; return the results files the tool wrote."""

    def close(self) -> None:
        """Release the session's resources."""


class StreamReader:
    """Parses one session's stream incrementally and drives ``dispatcher``."""

    def __init__(self, table: SiteTable, dispatcher: Dispatcher) -> None:
        self.table = table
        self.dispatcher = dispatcher
        self.pending = b""
        self.state = "header"
        self.bytes = 0
        self.complete = False
        self.word = table.word_bytes
        code = word_code(self.word)
        self.header = struct.Struct("<5" + code)
        self.pair = struct.Struct("<2" + code)

    def feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        data = self.pending + chunk if self.pending else chunk
        if self.state == "header":
            if len(data) < self.header.size:
                self.pending = data
                return
            magic, version, d0, d1, bias = self.header.unpack_from(data)
            if magic != MAGIC:
                raise StreamError("stream does not start with the ReHost header (not a ReHost program?)")
            if version != VERSION:
                raise StreamError(f"stream version {version}, expected {VERSION}")
            if d0 >> 32 or d1 >> 32 or struct.pack("<2I", d0, d1) != self.table.digest:
                raise StreamError("the program was not instrumented with this site table (digest differs)")
            self.dispatcher.start(bias)
            self.state = "records"
            data = data[self.header.size:]
        if self.state == "records":
            # No slice to whole words: the dispatchers stop at the last whole one (no 1 MiB copy).
            used, ended = self.dispatcher.dispatch(data) if len(data) >= self.word else (0, False)
            data = data[used:]
            if ended:
                self.state = "end"
        self.pending = data  # "end": everything after the marker, parsed in finish()

    def finish(self) -> dict[str, bytes]:
        """The stream is over: check the end record, run the end routines, return results."""
        if self.state == "header":
            raise StreamError("stream ended before its header: the program sent no records (it did not start "
                              "instrumented, or was killed before its first records went)")
        if self.state == "records":
            if self.pending:
                raise StreamError(f"stream ends inside a record ({len(self.pending)} bytes left over)")
        else:
            self._read_end(self.pending)
            self.complete = True
        return self.dispatcher.finish()

    def _read_end(self, data: bytes) -> None:
        targets = self.table.target_arrays
        pair, word = self.pair, self.word
        if len(data) < pair.size:
            raise StreamError("truncated end record")
        _, narrays = pair.unpack_from(data)
        if narrays != len(targets):
            raise StreamError(f"end record carries {narrays} arrays, the site table {len(targets)}")
        at = pair.size
        for _ in range(narrays):
            if at + pair.size > len(data):
                raise StreamError("truncated end record")
            index, nbytes = pair.unpack_from(data, at)
            at += pair.size
            if index >= len(targets) or nbytes != targets[index].nbytes:
                raise StreamError(f"end record: array {index} of {nbytes} bytes does not match the site table")
            if at + nbytes > len(data):
                raise StreamError("truncated end record")
            self.dispatcher.set_array(index, data[at:at + nbytes])
            at += -nbytes % word + nbytes
        if at != len(data):
            raise StreamError(f"{len(data) - at} bytes after the end record")
