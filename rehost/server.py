"""The ReHost server (``anvil rehost-server``): many sessions at once, one analysis state each.

A session is one ``Analyse`` call: it opens with the site table, then streams the
program's records; the server checks the table, the stream header (the digest ties
the stream to the table), every site id and the end record, and answers with the
results files. A session that breaks any rule is rejected with INVALID_ARGUMENT and
a one-line reason; the other sessions go on. The server binds loopback unless told
otherwise; ``token`` (a shared secret in the open message) and TLS guard remote use.
"""

from __future__ import annotations

import itertools
import socket
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from rewriter.errors import AnvilError, one_line

from . import host_build
from .bridge import split_address
from .dispatch_c import CDispatcher, MissingRoutine
from .dispatch_py import PyDispatcher, load_class
from .protocol import SERVICE, messages, services
from .sitetable import SiteTable, SiteTableError, parse
from .stream import ResultsTooLarge, StreamError, StreamReader, check_results_size


def _loadable(path: Path, spec: str) -> Path:
    """``path`` if the host can load it as a shared library; else the AnvilError a bad
    --lib gets at start-up, not the first session's failure after the server said it serves."""
    import ctypes

    try:
        ctypes.CDLL(str(path))
    except OSError as e:
        raise AnvilError(f"{spec}: not a shared library this host can load ({one_line(str(e))})") from None
    return path


class Library:
    """Where the analysis comes from: a tool's C by name, a .c file, a shared library or a Python file.

    ``spec`` None means: the tool each session's site table names (a built-in tool). C is
    built for the record words of each session's program (host_build.flags_for: 32-bit for
    ARM programs, 64-bit for x86-64 ones), once each; a shared library given as it is
    serves the programs whose words it was built for.
    """

    def __init__(self, spec: str | None) -> None:
        self.spec = spec
        self._sources: list[Path] | None = None  # C built here, per record width
        self._shared: Path | None = None         # a shared library given as it is
        self._built: dict[tuple[str, int], Path] = {}
        self._lock = threading.Lock()
        self._python: type | None = None
        if spec is None:
            return
        path = Path(spec)
        if spec.endswith(".py"):
            if not path.is_file():
                raise AnvilError(f"{spec}: no such Python analysis file")
            try:
                self._python = load_class(path)
            except Exception as e:  # the user's file: report any failure in one line
                raise AnvilError(f"{spec}: {type(e).__name__}: {e}") from None
        elif spec.endswith((".so", ".c")) or "/" in spec:
            if not path.is_file():
                raise AnvilError(f"{spec}: no such file")
            if spec.endswith(".c"):
                self._sources = [path.resolve()]
            else:
                self._shared = _loadable(path.resolve(), spec)
        else:
            self._sources = host_build.tool_sources(spec)
        if self._sources is not None:  # built now: a source that does not compile fails at start-up
            self._build(spec, self._sources, host_build.DEFAULT_WORD_BYTES)

    @classmethod
    def of_sources(cls, sources: list[str], word_bytes: int = host_build.DEFAULT_WORD_BYTES) -> Library:
        """A tool file's C files built for the host: what ``anvil run`` gives the local server
        of a binary whose site table names them (its records' words ``word_bytes`` wide)."""
        missing = [s for s in sources if not Path(s).is_file()]
        if missing:
            raise AnvilError(f"{missing[0]}: the tool's analysis C file is gone (the site table names it)")
        library = cls(None)
        library.spec = " + ".join(sources)
        library._sources = [Path(s) for s in sources]
        library._build(library.spec, library._sources, word_bytes)
        return library

    @property
    def name(self) -> str:
        return self.spec or "(the tool each binary names)"

    def _build(self, key: str, sources: list[Path], word_bytes: int) -> Path:
        with self._lock:
            built = self._built.get((key, word_bytes))
            if built is None:
                built = self._built[key, word_bytes] = host_build.build(sources, host_build.flags_for(word_bytes))
        return built

    def dispatcher(self, table: SiteTable):
        if self._python is not None:
            return PyDispatcher(self._python, table)
        if self._shared is not None:
            return CDispatcher(self._shared, table)
        if self._sources is not None:
            return CDispatcher(self._build(str(self.spec), self._sources, table.word_bytes), table)
        return CDispatcher(self._build(table.tool, host_build.tool_sources(table.tool), table.word_bytes), table)


class SessionRejected(Exception):
    """A session broke a rule, or its analysis failed: ``status`` says which, as gRPC does."""

    def __init__(self, status: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = status


class Session:
    """One program's analysis: its site table checked, its record stream read and
    dispatched, its results. What a gRPC session of the server does, and what ``anvil run``
    does in its own process when no --server is given (rehost/local.py)."""

    def __init__(self, library: Library, site_table: bytes, tool: str | None,
                 parsed: SiteTable | None = None) -> None:
        """``parsed``: ``site_table`` already parsed (and checked against ``tool``)."""
        self.started = time.monotonic()
        try:
            self.table = parsed if parsed is not None else parse(site_table, tool)
            self.dispatcher = library.dispatcher(self.table)
        except (StreamError, SiteTableError, MissingRoutine, AnvilError) as e:
            raise SessionRejected(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        self.reader = StreamReader(self.table, self.dispatcher)

    def feed(self, chunk: bytes) -> None:
        """Dispatch the records in ``chunk``; SessionRejected (the session closed) if it breaks a rule."""
        self._checked(self.reader.feed, chunk)

    def finish(self, lost: int = 0) -> messages.Summary:
        """The stream is over (``lost``: bytes of it that never came): run the end routines;
        the summary with the results files."""
        outputs = self._checked(self.reader.finish)
        self._checked(check_results_size, {path: len(content) for path, content in outputs.items()})  # Python's too
        self.close()
        return messages.Summary(
            ok=True, records=self.dispatcher.records, bytes=self.reader.bytes,
            complete=self.reader.complete and not lost,
            outputs=[messages.Output(path=p, content=c) for p, c in outputs.items()], seconds=self.seconds,
            error="" if not lost else f"{lost} bytes of records were lost before reaching the server")

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def _checked(self, step, *args):
        try:
            return step(*args)
        except ResultsTooLarge as e:
            self.close()
            raise SessionRejected(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e)) from None
        except StreamError as e:
            self.close()
            raise SessionRejected(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        except (Exception, SystemExit) as e:  # an analysis routine (Python tools are user code) failed
            self.close()
            what = f"exit({e.code})" if isinstance(e, SystemExit) else f"{type(e).__name__}: {e}"
            raise SessionRejected(grpc.StatusCode.INTERNAL, f"the analysis failed: {what}") from None

    def close(self) -> None:
        self.dispatcher.close()


class RehostService:
    """The gRPC servicer of anvil.rehost.Rehost."""

    def __init__(self, library: Library, token: str = "", log=sys.stderr) -> None:
        self.library = library
        self.token = token
        self.log = log
        self._ids = itertools.count(1)

    def _say(self, text: str) -> None:
        if self.log is not None:
            print(f"anvil rehost-server: {text}", file=self.log, flush=True)

    def Analyse(self, request_iterator, context):  # noqa: N802 - gRPC method name
        number = next(self._ids)
        try:
            first = next(request_iterator, None)
            if first is None or first.WhichOneof("body") != "open":
                raise SessionRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                      "the session did not start with an open message")
            if self.token and first.open.token != self.token:
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "wrong or missing token")
            session = Session(self.library, first.open.site_table, first.open.tool or None)
        except SessionRejected as e:
            self._say(f"session {number} rejected: {e}")
            context.abort(e.status, str(e))
        program = first.open.program or "?"
        name = f"session {number} ({session.table.tool}, {program})"
        self._say(f"{name} opened")
        lost = 0
        try:
            for message in request_iterator:
                body = message.WhichOneof("body")
                if body == "records":
                    session.feed(message.records)
                elif body == "lost_bytes":
                    lost += message.lost_bytes
                else:
                    session.close()
                    raise SessionRejected(grpc.StatusCode.INVALID_ARGUMENT,
                                          f"unexpected {body} message inside a session")
            summary = session.finish(lost)
        except SessionRejected as e:
            self._say(f"{name} {'failed' if e.status != grpc.StatusCode.INVALID_ARGUMENT else 'rejected'}: {e}")
            context.abort(e.status, str(e))
        state = "complete" if session.reader.complete else "INCOMPLETE (no end record)"
        self._say(f"{name}: {summary.records} records, {summary.bytes} bytes, {state}, {summary.seconds:.2f} s")
        return summary


def _check_bindable(address: str) -> None:
    """AnvilError naming the problem if ``address`` (HOST:PORT) cannot be listened on: gRPC
    would take a port beyond 65535 modulo 65536 and say why it cannot bind only in its log."""
    host, port = split_address(address)
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                           flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as e:
        raise AnvilError(f"cannot listen on {address}: {e.strerror}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(where)
        except OSError as e:
            raise AnvilError(f"cannot listen on {address}: {e.strerror}") from None


def start_server(library: Library, address: str = "127.0.0.1:0", token: str = "", workers: int = 8,
                 tls: tuple[bytes, bytes] | None = None, log=sys.stderr) -> tuple[grpc.Server, int]:
    """Start serving on ``address``; returns the server and the port it bound."""
    if workers < 1:
        raise AnvilError(f"--workers {workers}: a server needs at least one worker")
    _check_bindable(address)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=[("grpc.max_receive_message_length", 64 << 20)])
    services.add_RehostServicer_to_server(RehostService(library, token, log), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if tls is not None:
        port = server.add_secure_port(address, grpc.ssl_server_credentials([tls]))
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise AnvilError(f"cannot listen on {address}")
    server.start()
    for name in ("", SERVICE):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, port
