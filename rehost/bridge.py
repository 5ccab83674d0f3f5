"""The client side of a ReHost run: start the program with a channel, forward its records.

The program inherits a SOCK_SEQPACKET connection to a socket the bridge listens on, as
file descriptor CHANNEL_FD (the communicator's channel, runtime_stubs/common/anvil_channel_linux.h);
the communicator learns the socket's address from it, closes it before the program's
first instruction, and connects anew for each send, so the program holds no descriptor of
ours while it runs (decision 0126). A pump thread reads one connection at a time, learns
from the kernel which process made it, and hands its messages to that process's gRPC
stream (or, without a server, to its session in this process: rehost/local.py); when the
server is gone the pump keeps
reading and counts what it drops, so the program never blocks on a dead server and
always finishes with its own output and exit status. The results the server sends back
are written where the InHost program would have written them.

A child the program forks gets a session of its own (docs/decisions/0031): its first
message names the process it forked from and how many bytes of that process's stream
had gone at the fork; its session starts with those bytes (kept here, in a spool per
session) and goes on with the child's own, so its analysis starts from its parent's
state at the fork. Its results go to ``<results file>.<pid>``, as an InHost child's do.

Firmware under qemu-system-arm writes its records to a named pipe instead
(``run_with_pipe``): through semihosting, or through a UART QEMU connects to the pipe.
"""

from __future__ import annotations

import os
import queue
import resource
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rewriter.errors import AnvilError

from . import PROGRAM_ENVIRONMENT

if TYPE_CHECKING:  # (local imports server, which imports this module)
    from .local import LocalAnalysis, LocalSession
from .protocol import SERVICE, messages, services

CHANNEL_FD = 1000          # must match ANVIL_REHOST_FD in runtime_stubs/common/anvil_channel_linux.h
CHUNK = 1 << 20
SOCKET_BUFFER = 4 << 20
QUEUE_CHUNKS = 32          # the bridge buffers at most this many chunks; then the program waits
CONNECT_TIMEOUT = 5.0
FORK_MAGIC = 0x4B464E41    # "ANFK": a forked child's first message (anvil_channel.c)
FORK_HELLO = struct.Struct("<5I")  # magic, the pid whose stream it was writing, its own, bytes sent (low, high)
CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid
SPOOL_IN_MEMORY = 32 << 20  # a session's stream is kept in memory up to this, then in a file
SPOOL_LIMIT = 8 << 30       # ... and given up past this (or half the free space of the temporary directory)
NOT_FORKING = "the rewrite found nothing in the program that forks, so its stream before the fork was not kept"
LINGER = 1.0               # listen: how long children may still connect after every connection closed (s)
ACCEPT_POLL = 0.1          # listen: how often it looks whether connections are still open (s)
BACKLOG = 4096             # run: connections the listener queues (the program's processes wait beyond)
MARKER = "process"         # run: the file beside the socket every process of the program maps (anvil_channel_linux.h)
MARKER_SIZE = 4096         # ... a page
DAEMON_GRACE = 1.0         # run: how long a child in a session of its own is waited for after the program (s)
END_POLL = 0.02            # run: how often, once the program has ended, it looks for processes still running (s)
GATHER = 4096              # run_with_pipe: after a read shorter than this ...
GATHER_PAUSE = 0.002       # ... let the writer's bytes gather this long (s)


@dataclass
class Outcome:
    """What a ReHost run produced besides the program's own behaviour."""

    returncode: int | None  # None when the program was not started here (rehost-listen)
    summary: object | None = None      # messages.Summary when the session finished
    error: str = ""                    # why there is no summary (server gone, session rejected)
    lost_bytes: int = 0                # record bytes the bridge could not deliver
    sent_bytes: int = 0
    stdout: bytes = b""                # the program's output, when captured
    stderr: bytes = b""
    outputs: dict[str, bytes] = field(default_factory=dict)
    children: dict[int, Outcome] = field(default_factory=dict)  # forked children's sessions, by pid
    stray_bytes: int = 0               # bytes from processes whose stream could not be placed
    # Processes of the program still running its code in a session of their own (daemons) when
    # the run ended: not waited for, what they send later is not analysed.
    detached: list[int] = field(default_factory=list)
    # Forked children whose parent's stream was not kept (the site table said the program does
    # not fork, or the stream grew past what is kept): no session, their records dropped.
    unkept_children: dict[int, str] = field(default_factory=dict)  # pid -> why

    @classmethod
    def of_session(cls, returncode: int | None, session: _Forward | LocalSession, stdout: bytes = b"",
                   stderr: bytes = b"") -> Outcome:
        """What a finished session (gRPC or local) says, with the results files its summary carries."""
        outcome = cls(returncode, session.summary, session.error, session.lost, session.sent, stdout=stdout,
                      stderr=stderr)
        if outcome.summary is not None:
            outcome.outputs = {o.path: o.content for o in outcome.summary.outputs}  # type: ignore[attr-defined]
        return outcome


def connect(address: str, credentials: grpc.ChannelCredentials | None = None) -> grpc.Channel:
    """A channel to a server that answers its health check, or AnvilError saying why not."""
    # The session's summary carries the results files: a memtrace of a few million accesses
    # is tens of MB, past gRPC's 4 MiB default (a message's hard limit is protobuf's 2 GiB).
    options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", -1)]
    channel = (grpc.secure_channel(address, credentials, options) if credentials
               else grpc.insecure_channel(address, options))
    try:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE),
                                                          timeout=CONNECT_TIMEOUT)
    except grpc.RpcError as e:
        channel.close()
        detail = e.details() if hasattr(e, "details") else str(e)  # type: ignore[union-attr]
        raise AnvilError(f"no rehost server at {address}: {detail}") from None
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        channel.close()
        raise AnvilError(f"rehost server at {address} is not serving")
    return channel


class _Forward:
    """One session: the gRPC call runs in a thread, fed with the chunks ``send`` is given.

    When the server is gone or rejected the session, ``send`` counts the bytes it drops
    instead of waiting, so the program on the other end never blocks on a dead server.
    """

    def __init__(self, channel: grpc.Channel, tool: str, site_table: bytes, program: str, token: str) -> None:
        self.chunks: queue.Queue[bytes | None] = queue.Queue(QUEUE_CHUNKS)
        self.alive = True
        self.lost = self.sent = 0
        self.summary: object | None = None
        self.error = ""
        self._open = messages.Message(open=messages.Open(tool=tool, site_table=site_table, program=program,
                                                         token=token))
        self._rpc = threading.Thread(target=self._call, args=(channel,), daemon=True)
        self._rpc.start()

    def _requests(self):
        yield self._open
        while True:
            chunk = self.chunks.get()
            if chunk is None:
                if self.lost:
                    yield messages.Message(lost_bytes=self.lost)
                return
            self.sent += len(chunk)
            yield messages.Message(records=chunk)

    def _call(self, channel: grpc.Channel) -> None:
        try:
            self.summary = services.RehostStub(channel).Analyse(self._requests())
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None  # type: ignore[union-attr]
            detail = e.details() if hasattr(e, "details") else str(e)  # type: ignore[union-attr]
            if code == grpc.StatusCode.UNAVAILABLE:
                self.error = f"lost the rehost server ({detail})"
            else:
                self.error = f"the rehost server rejected the session: {detail}"
        finally:
            self.alive = False

    def _put(self, item: bytes | None) -> bool:
        """Queue ``item`` unless the call has ended; False when it was dropped."""
        while self.alive:
            try:
                self.chunks.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def send(self, chunk: bytes) -> None:
        """Forward ``chunk``, or count it lost when the call has ended."""
        if not self._put(chunk):
            self.lost += len(chunk)

    def end(self) -> None:
        """The stream is over: the call sends what is queued and ends."""
        self._put(None)

    def finish(self, returncode: int | None, stdout: bytes = b"", stderr: bytes = b"") -> Outcome:
        """Wait for the server's answer and say what happened."""
        self._rpc.join()
        # Anything still queued when the call ended never reached the server.
        while True:
            try:
                chunk = self.chunks.get_nowait()
            except queue.Empty:
                break
            if chunk:
                self.lost += len(chunk)
        return Outcome.of_session(returncode, self, stdout, stderr)


def _session(channel: grpc.Channel | LocalAnalysis, tool: str, site_table: bytes, program: str,
             token: str) -> _Forward | LocalSession:
    """A session for one process's stream: a gRPC call to the server on ``channel``, or the
    analysis in this process (``anvil run`` without --server)."""
    if isinstance(channel, grpc.Channel):
        return _Forward(channel, tool, site_table, program, token)
    return channel.session(tool, site_table, program, token)


class _Processes:
    """Routes each process's bytes to a session of its own (decision 0031).

    The program (``root``) is the process ``root_key`` names, or else the first to send
    anything but a hello, or the first a hello names. A process whose first message is a
    fork hello is a child of the process it names (only the program and processes that
    sent a hello are named): its session (``start_child``) starts with that process's
    session stream up to the fork, replayed from its spool, and goes on with the child's
    own bytes. Where the parent's bytes come on another connection (TCP) and are not all
    here yet, the child's wait. Bytes that cannot be placed are counted in ``stray``.
    Thread-safe.
    """

    def __init__(self, root: _Forward | LocalSession, start_child: Callable[[], _Forward | LocalSession],
                 root_key: int | None = None, keep_streams: bool = True, keep_limit: int | None = None) -> None:
        self.root = root
        # Spooling every byte costs a quarter of a long run's time and its whole stream in a
        # temporary file: only where the program may fork (the site table's ``forks``).
        self.keep_streams = keep_streams
        self.unkept: dict[int, str] = {}  # children whose parent's stream was not kept, and why: no session
        # A stream longer than this is given up (the disk it would fill is the user's): half
        # the temporary directory's free space, at most SPOOL_LIMIT.
        self.keep_limit = _keep_limit() if keep_limit is None else keep_limit
        self.given_up: dict[int, str] = {}  # processes whose stream is no longer kept, and why
        self.start_child = start_child
        self.root_key = root_key
        self.sessions: dict[int, _Forward | LocalSession | None] = {} if root_key is None else {root_key: root}
        self.children: dict[int, _Forward | LocalSession] = {}
        self.spools: dict[int, tempfile.SpooledTemporaryFile] = {}
        self.inherited: dict[int, int] = {}  # bytes at the start of a session's stream that its parent sent
        # A child whose session waits for its parent's: (parent, bytes of its stream sent by the
        # fork, the child's own bytes meanwhile).
        self.waiting: dict[int, tuple[int, int, list[bytes]]] = {}
        self.stray = 0
        self._lock = threading.Lock()

    def route(self, pid: int, data: bytes) -> None:
        """Forward ``data``, which process ``pid`` sent."""
        with self._lock:
            if pid in self.waiting:
                self.waiting[pid][2].append(data)
                return
            if pid not in self.sessions and not self._new_process(pid, data):
                return  # a child's hello, or a message that cannot be placed
            forward = self.sessions[pid]
            if forward is None:
                if pid not in self.unkept:  # (those are said by themselves)
                    self.stray += len(data)
                return
            self._keep(pid, data)
            forward.send(data)

    def pump(self, sock: socket.socket) -> None:
        """Route what a SOCK_SEQPACKET socket delivers (each message's sender from its
        SCM_CREDENTIALS) until every writer has closed it."""
        buffer = bytearray(CHUNK)
        room = socket.CMSG_SPACE(CREDENTIALS.size)
        while True:
            try:
                size, ancillary, _, _ = sock.recvmsg_into([buffer], room)
            except OSError:
                break
            if not size:
                break
            self.route(_sender(ancillary), bytes(memoryview(buffer)[:size]))

    def _new_process(self, pid: int, data: bytes) -> bool:
        """Take in a process seen for the first time, with its first message ``data``; whether
        ``data`` belongs to its stream (the program's first bytes; not a hello or a stray)."""
        if len(data) == FORK_HELLO.size and FORK_HELLO.unpack(data)[0] == FORK_MAGIC:
            _, parent, _, low, high = FORK_HELLO.unpack(data)
            if parent not in self.sessions and parent not in self.waiting:
                # Only the program and processes that sent a hello name streams: this is the
                # program, which has sent nothing yet (or whose pid a TCP connection hides).
                if self.root_key is None:
                    self.root_key = parent
                    self.sessions[parent] = self.root
                parent = self.root_key
            if parent in self.sessions and self.sessions[parent] is None:
                self.sessions[pid] = None  # a stream not seen here: its records cannot be placed
                return False
            why = self.given_up.get(parent) or ("" if self.keep_streams else NOT_FORKING)
            if why:
                self.sessions[pid] = None  # its parent's stream up to the fork is gone
                self.unkept[pid] = why
                return False
            self.waiting[pid] = (parent, low | high << 32, [])
            self._start_waiting(parent)
            return False
        if self.root_key is None:
            self.root_key = pid
            self.sessions[pid] = self.root
            return True
        self.sessions[pid] = None
        self.stray += len(data)
        return False

    def _start_waiting(self, parent: int) -> None:
        """Start the sessions of ``parent``'s children whose prefix its spool now holds (once
        its own session has started)."""
        if self.sessions.get(parent) is None:
            return
        spool = self.spools.get(parent)
        have = spool.tell() if spool is not None else 0
        for pid, (of, sent, meanwhile) in list(self.waiting.items()):
            upto = self.inherited.get(parent, 0) + sent
            if of != parent or upto > have:
                continue
            del self.waiting[pid]
            child = self.sessions[pid] = self.children[pid] = self.start_child()
            self.inherited[pid] = upto
            self._keep(pid, b"")
            if upto:
                self._replay(spool, upto, pid, child)
            for data in meanwhile:
                self._keep(pid, data)
                child.send(data)

    def _replay(self, spool: tempfile.SpooledTemporaryFile, upto: int, pid: int,
                child: _Forward | LocalSession) -> None:
        """Send the first ``upto`` bytes of ``spool`` to ``child`` (process ``pid``) and keep them as its own."""
        end = spool.tell()
        spool.seek(0)
        left = upto
        while left:
            chunk = spool.read(min(CHUNK, left))
            left -= len(chunk)
            self._keep(pid, chunk)
            child.send(chunk)
        spool.seek(end)

    def _keep(self, pid: int, data: bytes) -> None:
        """Add ``data`` to ``pid``'s spool: the session stream a child it forks starts with."""
        if not self.keep_streams or pid in self.given_up:
            return
        spool = self.spools.get(pid)
        if spool is None:
            spool = self.spools[pid] = tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY, prefix="anvil-stream-")
        if spool.tell() + len(data) > self.keep_limit:
            self._give_up(pid, f"its parent's stream grew past {self.keep_limit >> 20} MiB, more than is kept "
                               "for the children it may fork")
            return
        try:
            spool.write(data)
        except OSError as e:
            self._give_up(pid, f"its parent's stream could not be kept ({e.strerror})")
            return
        if self.waiting and data:
            self._start_waiting(pid)

    def _give_up(self, pid: int, why: str) -> None:
        """Keep ``pid``'s stream no longer: its children from now on, and those still waiting
        for its bytes, get no session (``why``)."""
        self.given_up[pid] = why
        self.spools.pop(pid).close()
        for child, (parent, _, _) in list(self.waiting.items()):
            if parent == pid:
                del self.waiting[child]
                self.sessions[child] = None
                self.unkept[child] = why

    def end(self) -> None:
        """No more bytes will come: end every session's stream. Children still waiting for
        their parent's bytes (which never came) are counted stray."""
        with self._lock:
            for _, _, meanwhile in self.waiting.values():
                self.stray += sum(len(data) for data in meanwhile)
            self.waiting.clear()
            for forward in {self.root, *self.children.values()}:
                forward.end()
            for spool in self.spools.values():
                spool.close()

    def finish(self) -> dict[int, Outcome]:
        """The children's outcomes, by pid, once their sessions have ended."""
        return {pid: forward.finish(None) for pid, forward in self.children.items()}


def _keep_limit() -> int:
    """How many bytes of a stream are kept for the children its process may fork."""
    try:
        free = shutil.disk_usage(tempfile.gettempdir()).free
    except OSError:
        return SPOOL_IN_MEMORY
    return max(SPOOL_IN_MEMORY, min(SPOOL_LIMIT, free // 2))


def _sender(ancillary: list[tuple[int, int, bytes]]) -> int:
    """The pid in a message's SCM_CREDENTIALS (0 if it has none)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= CREDENTIALS.size:
            return CREDENTIALS.unpack_from(data)[0]
    return 0


def run(cmd: list[str], channel: grpc.Channel | LocalAnalysis, tool: str, site_table: bytes, program: str,
        token: str = "", env: dict[str, str] | None = None, cwd: str | None = None,
        stdin: bytes | None = None, executable: str | None = None, forks: bool = True,
        inherit_descriptors: bool = False) -> Outcome:
    """Run ``cmd`` (the program ``executable``, if not cmd[0]: cmd[0] is then its argv[0])
    with the record channel, streaming its records to the server on ``channel``;
    ``forks``: whether the program may fork (the site table's), else its stream is not kept
    for children; ``inherit_descriptors``: the program gets the descriptors this process
    was given (``anvil run``: as without it), else only standard input, output and error
    (as ``subprocess`` runs programs: a harness's original run sees the same).

    The program gets ``env`` (default: the user's environment as it was), runs in
    ``cwd``; with ``stdin`` given, its input is that and its output is captured
    (Outcome.stdout/stderr), otherwise it shares ours. The run ends when the program has
    ended and so has every process it forked that still runs its code in its session
    (decision 0126); those in a session of their own (daemons) for DAEMON_GRACE at most.
    """
    forward = _session(channel, tool, site_table, program, token)
    processes = _Processes(forward, lambda: _session(channel, tool, site_table, program, token), keep_streams=forks)
    with _Listener() as listener:
        first = listener.first_connection()
        saved = os.dup(CHANNEL_FD) if _fd_open(CHANNEL_FD) else None
        limit = _room_for_channel()
        # The program gets its own limit back (CHANNEL_FD stays valid above it).
        restore_limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit)) if limit else None
        try:
            os.dup2(first.program_end.fileno(), CHANNEL_FD, inheritable=True)
            try:
                pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE} \
                    if stdin is not None else {}
                # Given: what we were given goes to the program as it would without us (a `3>log`,
                # make's jobserver); ours are not inheritable (PEP 446), but CHANNEL_FD.
                proc = subprocess.Popen(cmd, executable=executable, close_fds=not inherit_descriptors,
                                        pass_fds=() if inherit_descriptors else (CHANNEL_FD,),
                                        env=PROGRAM_ENVIRONMENT if env is None else env, cwd=cwd,
                                        preexec_fn=restore_limit, **pipes)
            except OSError as e:
                forward.end()
                raise AnvilError(f"cannot start {cmd[0]}: {e.strerror}") from None
        finally:
            if saved is not None:
                os.dup2(saved, CHANNEL_FD)
                os.close(saved)
            else:
                os.close(CHANNEL_FD)
            first.program_end.close()
            if limit:
                resource.setrlimit(resource.RLIMIT_NOFILE, limit)
        detached: list[int] = []

        def pump() -> None:
            # A runtime that keeps the descriptor it was given writes there all run; one that
            # connects for each send (every current one) closes it at once.
            try:
                processes.pump(first.ours)
            finally:
                first.ours.close()
            detached.extend(listener.serve(processes, proc))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        stdout, stderr = proc.communicate(stdin)
        reader.join()
    outcome = forward.finish(proc.returncode, stdout or b"", stderr or b"")
    outcome.children = processes.finish()
    outcome.stray_bytes = processes.stray
    outcome.detached = detached
    outcome.unkept_children = processes.unkept
    return outcome


def _room_for_channel() -> tuple[int, int] | None:
    """Make CHANNEL_FD a descriptor this process may open: a soft limit at or below it (``ulimit
    -n 512``) is raised past it; returns the limits to give back (None: nothing changed), or
    AnvilError when the hard limit does not allow it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > CHANNEL_FD:
        return None
    if hard != resource.RLIM_INFINITY and hard <= CHANNEL_FD:
        raise AnvilError(f"the descriptor limit is {hard} (ulimit -Hn) and ReHost's record channel starts as "
                         f"descriptor {CHANNEL_FD}: raise the limit, or use --mode inhost")
    resource.setrlimit(resource.RLIMIT_NOFILE, (CHANNEL_FD + 1, hard))
    return soft, hard


def _has_ended(proc: subprocess.Popen) -> bool:
    """Whether ``proc`` has ended (without reaping it: its ``communicate`` on another thread does that)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True  # reaped already


@dataclass
class _FirstConnection:
    """The connection the program inherits: ``program_end`` is its descriptor CHANNEL_FD."""

    ours: socket.socket
    program_end: socket.socket


class _Listener:
    """The socket a ReHost program's processes connect to for each send, in a private
    directory beside the marker file every one of them maps (decision 0126)."""

    def __init__(self) -> None:
        # A socket's path has at most 107 bytes: a long TMPDIR gives way to /tmp.
        base = os.path.abspath(tempfile.gettempdir())  # (the program may change its directory)
        try:
            self.directory = tempfile.mkdtemp(prefix="anvil-rehost-", dir=base if len(base) < 60 else "/tmp")
        except OSError as e:
            raise AnvilError(f"cannot make the record channel's directory in {base}: {e.strerror} "
                             "(set TMPDIR to a writable directory)") from None
        self.address = os.path.join(self.directory, "channel")
        self.marker = os.path.join(self.directory, MARKER)
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with open(self.marker, "wb") as f:
                f.truncate(MARKER_SIZE)
            self.socket.bind(self.address)
            self.socket.listen(BACKLOG)
        except OSError as e:
            self.__exit__()
            raise AnvilError(f"cannot make the record channel in {self.directory}: {e.strerror}") from None
        # One for every connection (a long run makes thousands), bigger than any message.
        self.buffer = bytearray(CHUNK)

    def __enter__(self) -> _Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.socket.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def first_connection(self) -> _FirstConnection:
        """A connection made here: its far end is what the program inherits."""
        program_end = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        program_end.connect(self.address)
        ours, _ = self.socket.accept()
        # (An older runtime's children share it: each message's process comes with it.)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        for end in (ours, program_end):  # big buffers: fewer wake-ups, the program waits less often
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        return _FirstConnection(ours, program_end)

    def serve(self, processes: _Processes, program: subprocess.Popen) -> list[int]:
        """Route what every connection brings, a connection at a time in the order they were
        made (a process connects again only once its last connection is closed, so its
        bytes stay in order), until the program has ended and no process of its session maps
        the marker, and none in a session of its own has for DAEMON_GRACE; then end the
        streams. Returns the processes still mapping it in a session of their own (daemons),
        which are not waited for longer."""
        session = os.getsid(0)  # the program's session, as last seen while it ran
        ended_at = None  # when the program was first seen ended
        try:
            while True:
                ready, _, _ = select.select([self.socket], [], [], END_POLL)
                if ready:
                    self._route_one(processes)
                    continue
                if not _has_ended(program):
                    try:  # (the program may have left ours: its children stay in its new one)
                        session = os.getsid(program.pid)
                    except OSError:
                        pass
                    continue
                waited, detached = self._survivors(session)
                if not waited:  # Again: a process that forked and ended while the scan read
                    # /proc (its child not yet listed, itself gone) has its child listed now.
                    waited, detached = self._survivors(session)
                ended_at = ended_at or time.monotonic()
                # A child in a session of its own may be a short job (setsid, work, exit) rather
                # than a daemon: a little while for it before it is named and left.
                if waited or (detached and time.monotonic() - ended_at < DAEMON_GRACE):
                    continue
                # Every process that could send has ended: what it sent is queued by now.
                self.socket.setblocking(False)
                while self._route_one(processes):
                    pass
                return detached
        finally:
            processes.end()

    def _route_one(self, processes: _Processes) -> bool:
        """Route one connection's messages until it closes; False when none was waiting."""
        try:
            conn, _ = self.socket.accept()
        except (BlockingIOError, InterruptedError):
            return False
        with conn:
            conn.setblocking(True)
            pid = CREDENTIALS.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, CREDENTIALS.size))[0]
            _route_connection(conn, pid, processes, self.buffer)
        return True

    def _survivors(self, session: int) -> tuple[list[int], list[int]]:
        """The live processes that map the marker (the program's, still running its code):
        those in the program's ``session``, and those in another (daemons)."""
        needle = self.marker.encode()
        waited: list[int] = []
        detached: list[int] = []
        try:
            entries = list(os.scandir("/proc"))
        except OSError:  # no /proc (a bare container): the program's children are not waited for
            return waited, detached
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/maps", "rb") as f:
                    if needle not in f.read():
                        continue
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    theirs = int(f.read().rpartition(b")")[2].split()[3])  # state ppid pgrp session
            except (OSError, ValueError, IndexError):
                continue  # gone, or not ours to read
            (waited if theirs == session else detached).append(int(entry.name))
        return waited, detached


def run_with_pipe(cmd: list[str], pipe_path: str, channel: grpc.Channel | LocalAnalysis, tool: str, site_table: bytes,
                  program: str, token: str = "") -> Outcome:
    """Run ``cmd``, an emulator whose target writes its records to the host file ``pipe_path``
    (ARM semihosting, or QEMU ``-serial file:PATH`` for a UART), forwarding what it writes
    there; stdin/stdout/stderr are shared.

    The file becomes a named pipe for the run. It is opened for reading *and* writing
    here, so reads never see an end of file before the target opens it (or if it never
    does); the stream ends when the emulator has exited and the pipe is drained. A UART
    arrives a byte per write: after a short read the bridge waits a little, so that it
    forwards chunks rather than bytes.
    """
    if os.path.lexists(pipe_path):
        os.unlink(pipe_path)
    os.mkfifo(pipe_path, 0o600)
    forward = _session(channel, tool, site_table, program, token)
    fd = os.open(pipe_path, os.O_RDWR | os.O_NONBLOCK)
    try:
        try:
            proc = subprocess.Popen(cmd)
        except OSError as e:
            forward.end()
            forward.finish(None)
            raise AnvilError(f"cannot start {cmd[0]}: {e.strerror}") from None
        exited = False
        while True:
            ready, _, _ = select.select([fd], [], [], 0.05)
            try:
                chunk = os.read(fd, CHUNK) if ready or exited else b""
            except BlockingIOError:
                chunk = b""
            if chunk:
                forward.send(chunk)
                if len(chunk) < GATHER:  # a writer of small pieces (a UART: bytes): forward chunks, not bytes
                    time.sleep(GATHER_PAUSE)
                continue
            if exited:
                break
            exited = proc.poll() is not None  # one more pass drains what it wrote last
        forward.end()
    finally:
        os.close(fd)
        os.unlink(pipe_path)
    return forward.finish(proc.returncode)


def listen(address: str, channel: grpc.Channel | LocalAnalysis, tool: str, site_table: bytes, program: str,
           token: str = "",
           ready: Callable[[str], None] = lambda where: None, timeout: float | None = None,
           linger: float = LINGER) -> Outcome:
    """Wait for a program to connect over TCP (ANVIL_REHOST_CONNECT) and forward its records.

    Children it forks connect on their own, each connection starting with a fork hello;
    they are taken while any connection is open and for ``linger`` seconds after the last
    one closed. ``ready`` is told the address actually listened on (port 0 picks a free
    one); ``timeout``: seconds to wait for the program's connection (None: for ever).
    """
    host, port = split_address(address)
    try:
        server = socket.create_server((host, port))
    except OSError as e:
        raise AnvilError(f"cannot listen on {address}: {e.strerror}") from None
    with server:
        server.settimeout(timeout)
        bound_host, bound_port = server.getsockname()[:2]
        forward = _session(channel, tool, site_table, program, token)
        ready(f"{bound_host}:{bound_port}")
        try:
            conn, _ = server.accept()
        except TimeoutError:
            forward.end()
            forward.finish(None)
            raise AnvilError(f"no program connected to {bound_host}:{bound_port} within {timeout:g} s") from None
        processes = _Processes(forward, lambda: _session(channel, tool, site_table, program, token), root_key=0)
        readers = [_read_connection(conn, 0, processes)]
        server.settimeout(ACCEPT_POLL)
        last_open = time.monotonic()
        while True:
            if any(r.is_alive() for r in readers):
                last_open = time.monotonic()
            elif time.monotonic() - last_open >= linger:
                break
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            hello = _read_exactly(conn, FORK_HELLO.size)
            if len(hello) < FORK_HELLO.size or FORK_HELLO.unpack(hello)[0] != FORK_MAGIC:
                processes.route(-1, hello)  # not a child of the program's: a stranger, counted stray
                conn.close()
                continue
            pid = FORK_HELLO.unpack(hello)[2]
            processes.route(pid, hello)  # before the next connection: a grandchild's names it
            readers.append(_read_connection(conn, pid, processes))
    processes.end()
    outcome = forward.finish(None)
    outcome.children = processes.finish()
    outcome.stray_bytes = processes.stray
    return outcome


def _read_connection(conn: socket.socket, pid: int, processes: _Processes) -> threading.Thread:
    """A thread that routes what ``conn`` brings as process ``pid``'s until it closes."""
    def read() -> None:
        with conn:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
            _route_connection(conn, pid, processes, bytearray(CHUNK))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def _route_connection(conn: socket.socket, pid: int, processes: _Processes, buffer: bytearray) -> None:
    """Route what ``conn`` brings, read through ``buffer``, as process ``pid``'s until it closes."""
    while True:
        try:
            size = conn.recv_into(buffer)
        except OSError:
            return
        if not size:
            return
        processes.route(pid, bytes(memoryview(buffer)[:size]))


def _read_exactly(conn: socket.socket, size: int, timeout: float = CONNECT_TIMEOUT) -> bytes:
    """The first ``size`` bytes ``conn`` brings within ``timeout`` seconds (fewer if it closes or is silent)."""
    conn.settimeout(timeout)
    data = b""
    try:
        while len(data) < size:
            got = conn.recv(size - len(data))
            if not got:
                break
            data += got
    except OSError:
        pass
    conn.settimeout(None)
    return data


def read_records(path: str, channel: grpc.Channel | LocalAnalysis, tool: str, site_table: bytes, program: str,
                 token: str = "", idle: float = 2.0) -> Outcome:
    """Forward the records a program wrote elsewhere: a file (semihosting through OpenOCD
    or pyOCD, QEMU ``-serial file:``), a named pipe, or a serial device (a board's UART
    on the probe's virtual COM port, read raw at the speed it is already set to).

    A file or pipe is read to its end. A serial line never ends: reading stops once
    ``idle`` seconds pass without a byte after the first one arrived.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    except OSError as e:
        raise AnvilError(f"cannot read records from {path}: {e.strerror}") from None
    forward = _session(channel, tool, site_table, program, token)
    try:
        serial = os.isatty(fd)
        if serial:
            _raw(fd)
        started = False
        while True:
            ready, _, _ = select.select([fd], [], [], idle if started else None)
            if not ready:  # a serial line gone quiet: the program has finished
                break
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            started = True
            forward.send(chunk)
    finally:
        os.close(fd)
        forward.end()
    return forward.finish(None)


def _raw(fd: int) -> None:
    """A serial line passes bytes as they are: no echo, no line editing, no CR/LF mapping."""
    import termios
    import tty

    try:
        tty.setraw(fd, termios.TCSANOW)
    except termios.error as e:
        raise AnvilError(f"cannot set the serial line to raw mode: {e}") from None


def split_address(address: str) -> tuple[str, int]:
    """'HOST:PORT' -> (host, port), or AnvilError."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise AnvilError(f"'{address}' is not HOST:PORT")
    return host.strip("[]"), int(port)


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def write_outputs(outcome: Outcome, allowed: set[str], directory: str = ".") -> list[str]:
    """Write the results files the server sent, relative to ``directory``; returns their paths.

    Only paths the site table itself names (``allowed``: the string arguments of its
    program start/end calls) are written, so a server cannot write anywhere else. A forked
    child's go to ``<path>.<pid>`` when its session is complete, as an InHost child's do.
    """
    written = []
    named = [(path, content, "") for path, content in outcome.outputs.items()]
    for pid, child in sorted(outcome.children.items()):
        if child.summary is not None and child.summary.complete:  # not one that called exec (InHost: no file)
            named += [(path, content, f".{pid}") for path, content in child.outputs.items()]
    for path, content, suffix in named:
        if path not in allowed:
            raise AnvilError(f"the server sent a results file the site table does not name: {path!r}")
        dest = os.path.join(directory, path + suffix)
        with open(dest, "wb") as f:
            f.write(content)
        written.append(dest)
    return written
