"""The client side of a ReHost run: start the program with a channel, forward its records.

The program inherits one end of a socket pair as file descriptor CHANNEL_FD (the
communicator's channel, runtime_stubs/arm/anvil_comm.c). A pump thread reads it and
hands chunks to the gRPC stream; when the server is gone the pump keeps reading and
counts what it drops, so the program never blocks on a dead server and always
finishes with its own output and exit status. The results the server sends back are
written where the InHost program would have written them.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import threading
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rewriter.errors import AnvilError

from . import PROGRAM_ENVIRONMENT
from .protocol import SERVICE, messages, services

CHANNEL_FD = 1000          # must match ANVIL_REHOST_FD in runtime_stubs/arm/anvil_comm.c
CHUNK = 1 << 20
SOCKET_BUFFER = 4 << 20
QUEUE_CHUNKS = 32          # the bridge buffers at most this many chunks; then the program waits
CONNECT_TIMEOUT = 5.0


@dataclass
class Outcome:
    """What a ReHost run produced besides the program's own behaviour."""

    returncode: int
    summary: object | None = None      # messages.Summary when the session finished
    error: str = ""                    # why there is no summary (server gone, session rejected)
    lost_bytes: int = 0                # record bytes the bridge could not deliver
    sent_bytes: int = 0
    stdout: bytes = b""                # the program's output, when captured
    stderr: bytes = b""
    outputs: dict[str, bytes] = field(default_factory=dict)


def connect(address: str, credentials: grpc.ChannelCredentials | None = None) -> grpc.Channel:
    """A channel to a server that answers its health check, or AnvilError saying why not."""
    options = [("grpc.max_send_message_length", 64 << 20)]
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


def run(cmd: list[str], channel: grpc.Channel, tool: str, site_table: bytes, program: str,
        token: str = "", env: dict[str, str] | None = None, cwd: str | None = None,
        stdin: bytes | None = None) -> Outcome:
    """Run ``cmd`` with the record channel, streaming its records to the server on ``channel``.

    The program gets ``env`` (default: the user's environment as it was), runs in
    ``cwd``; with ``stdin`` given, its input is that and its output is captured
    (Outcome.stdout/stderr), otherwise it shares ours.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for end in (ours, theirs):  # big buffers: fewer wake-ups, the program waits less often
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
    chunks: queue.Queue[bytes | None] = queue.Queue(QUEUE_CHUNKS)
    state = {"alive": True, "lost": 0, "sent": 0}
    result: dict[str, object] = {}

    def requests():
        yield messages.Message(open=messages.Open(tool=tool, site_table=site_table, program=program, token=token))
        while True:
            chunk = chunks.get()
            if chunk is None:
                if state["lost"]:
                    yield messages.Message(lost_bytes=state["lost"])
                return
            state["sent"] += len(chunk)
            yield messages.Message(records=chunk)

    def call() -> None:
        try:
            result["summary"] = services.RehostStub(channel).Analyse(requests())
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None  # type: ignore[union-attr]
            detail = e.details() if hasattr(e, "details") else str(e)  # type: ignore[union-attr]
            if code == grpc.StatusCode.UNAVAILABLE:
                result["error"] = f"lost the rehost server ({detail})"
            else:
                result["error"] = f"the rehost server rejected the session: {detail}"
        finally:
            state["alive"] = False

    def pump() -> None:
        buffer = bytearray(CHUNK)
        while True:
            try:
                size = ours.recv_into(buffer)
            except OSError:
                size = 0
            chunk = bytes(memoryview(buffer)[:size])  # one copy, not two
            if not chunk:
                break
            while state["alive"]:
                try:
                    chunks.put(chunk, timeout=0.2)
                    break
                except queue.Full:
                    continue
            else:
                state["lost"] += len(chunk)
        while state["alive"]:
            try:
                chunks.put(None, timeout=0.2)
                break
            except queue.Full:
                continue

    rpc = threading.Thread(target=call, daemon=True)
    rpc.start()
    saved = os.dup(CHANNEL_FD) if _fd_open(CHANNEL_FD) else None
    try:
        os.dup2(theirs.fileno(), CHANNEL_FD, inheritable=True)
        try:
            pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE} \
                if stdin is not None else {}
            proc = subprocess.Popen(cmd, pass_fds=(CHANNEL_FD,), env=PROGRAM_ENVIRONMENT if env is None else env,
                                    cwd=cwd, **pipes)
        except OSError as e:
            raise AnvilError(f"cannot start {cmd[0]}: {e.strerror}") from None
    finally:
        if saved is not None:
            os.dup2(saved, CHANNEL_FD)
            os.close(saved)
        else:
            os.close(CHANNEL_FD)
        theirs.close()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    stdout, stderr = proc.communicate(stdin)
    returncode = proc.returncode
    reader.join()
    ours.close()
    rpc.join()
    # Anything still queued when the call ended never reached the server.
    while True:
        try:
            chunk = chunks.get_nowait()
        except queue.Empty:
            break
        if chunk:
            state["lost"] += len(chunk)
    outcome = Outcome(returncode, result.get("summary"), str(result.get("error", "")), state["lost"], state["sent"],
                      stdout=stdout or b"", stderr=stderr or b"")
    if outcome.summary is not None:
        outcome.outputs = {o.path: o.content for o in outcome.summary.outputs}
    return outcome


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def write_outputs(outcome: Outcome, allowed: set[str], directory: str = ".") -> list[str]:
    """Write the results files the server sent, relative to ``directory``; returns their paths.

    Only paths the site table itself names (``allowed``: the string arguments of its
    program start/end calls) are written, so a server cannot write anywhere else.
    """
    written = []
    for path, content in outcome.outputs.items():
        if path not in allowed:
            raise AnvilError(f"the server sent a results file the site table does not name: {path!r}")
        dest = os.path.join(directory, path)
        with open(dest, "wb") as f:
            f.write(content)
        written.append(dest)
    return written
