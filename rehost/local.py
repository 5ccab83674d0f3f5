"""The analysis of a ReHost run in ``anvil run``'s own process, when no --server is given.

A server is for analyses elsewhere (another machine, many programs at once). A local run
needs none: the pump thread that reads the program's channel (rehost/bridge.py) hands each
message straight to the session (rehost/server.Session: the same checks, dispatchers and
results), with no gRPC call, no loopback socket and no copy into protobuf messages, which
cost a native x86-64 program's records several times what their analysis does (decision
0120). The C dispatcher releases the GIL, so the analysis runs on the other core while the
program runs on its own.
"""

from __future__ import annotations

from .server import Library, Session, SessionRejected
from .sitetable import SiteTable


class LocalAnalysis:
    """Sessions in this process with ``library``: what bridge.run and its kin take in place
    of a gRPC channel to a server. ``tables``: site tables parsed already, by their bytes
    (a program's children each have a session with its table: 21 MB of JSON for cmake,
    parsed in a second)."""

    def __init__(self, library: Library, tables: dict[bytes, SiteTable] | None = None) -> None:
        self.library = library
        self.tables = dict(tables or {})

    def session(self, tool: str, site_table: bytes, program: str, token: str) -> LocalSession:
        del program, token  # (a server's log and guard)
        parsed = self.tables.get(site_table)
        return LocalSession(self.library, tool, site_table, parsed if parsed is not None and parsed.tool == tool
                            else None)

    def close(self) -> None:
        """Nothing to release (a gRPC channel's counterpart)."""


class LocalSession:
    """One process's session, with the interface of the bridge's gRPC one (bridge._Forward):
    ``send`` each chunk, ``end``, ``finish``. A session the analysis rejected counts what
    comes after as lost, as a gRPC session does when its server is gone."""

    def __init__(self, library: Library, tool: str, site_table: bytes, parsed: SiteTable | None = None) -> None:
        self.alive = True
        self.lost = self.sent = 0
        self.summary: object | None = None
        self.error = ""
        try:
            self._session: Session | None = Session(library, site_table, tool or None, parsed)
        except SessionRejected as e:
            self._reject(e)

    def _reject(self, e: SessionRejected) -> None:
        self.error = f"the analysis rejected the session: {e}"
        self.alive = False
        self._session = None

    def send(self, chunk: bytes) -> None:
        if self._session is None:
            self.lost += len(chunk)
            return
        self.sent += len(chunk)
        try:
            self._session.feed(chunk)
        except SessionRejected as e:
            self._reject(e)

    def end(self) -> None:
        """The stream is over (finish does the rest)."""

    def finish(self, returncode: int | None, stdout: bytes = b"", stderr: bytes = b""):
        from .bridge import Outcome

        if self._session is not None:
            try:
                self.summary = self._session.finish(self.lost)
            except SessionRejected as e:
                self._reject(e)
            self._session = None
        self.alive = False
        return Outcome.of_session(returncode, self, stdout, stderr)
