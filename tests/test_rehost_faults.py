"""ReHost faults: missing or dying servers, broken sessions, access control.

- no server: `anvil run` says so in one line and exits non-zero before the program starts;
- the server killed while the program runs: the program finishes with its own output
  and exit status, and the loss is reported;
- a malformed site table, a stream of another binary (wrong site table), an unknown
  site id, a truncated stream, garbage: that session is rejected (INVALID_ARGUMENT with
  the reason) and the server goes on serving: a good session afterwards, and two
  sessions interleaved chunk by chunk, get correct results (equal to InHost's);
- loopback by default; a shared token; TLS with a certificate.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pytest

from rehost.bridge import CHANNEL_FD
from rehost.protocol import messages, services
from rewriter.emit.rehost import SITE_TABLE_SUFFIX
from tests.support.rehost import CLI, CLI_RUN, ServerProcess, assert_rehost_as_inhost, cli_run, line_while
from tests.support.run import LIB_ROOT, assert_same_behaviour, instrument, place, run_prog
from tests.support.samples import build


def capture_stream(binary: Path, args: list[str] = ()) -> bytes:
    """The record stream ``binary`` writes, run as run_prog runs programs (no server involved)."""
    ours, theirs = socket.socketpair()
    os.dup2(theirs.fileno(), CHANNEL_FD)
    proc = subprocess.Popen(["env", "-i", "qemu-arm", "-L", LIB_ROOT, "-0", "prog", str(binary), *args],
                            cwd=binary.parent, stdout=subprocess.DEVNULL, pass_fds=(CHANNEL_FD,))
    os.close(CHANNEL_FD)
    theirs.close()
    data = bytearray()
    while chunk := ours.recv(1 << 20):
        data += chunk
    assert proc.wait() == 0
    return bytes(data)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    """sort and hash with cachesim: InHost results, ReHost binaries, site tables and captured streams."""
    found = {}
    for sample in ("sort", "hash"):
        tmp = tmp_path_factory.mktemp(sample)
        binary = build(sample, "O2-thumb-dyn")
        inhost = instrument(binary, "cachesim", tmp)
        assert run_prog(inhost).returncode == 0
        rehost = instrument(binary, "cachesim", tmp, "--mode", "rehost", slot="rhst")
        expected = (inhost.parent / "prog.cachesim.out").read_bytes()
        # `anvil run` (Python) adds LC_CTYPE to an empty environment (PEP 538): the stack moves a little.
        assert cli_run(inhost).returncode == 0
        found[sample] = {
            "expected": expected,
            "expected_cli": (inhost.parent / "prog.cachesim.out").read_bytes(),
            "binary": rehost,
            "table": Path(str(rehost) + SITE_TABLE_SUFFIX).read_bytes(),
            "stream": capture_stream(rehost),
        }
    return found


@pytest.fixture(scope="module")
def server():
    with ServerProcess() as srv:
        yield srv


def session(address: str, table: bytes, chunks: list[bytes], tool: str = "cachesim"):
    """One raw Analyse call; returns the Summary or raises grpc.RpcError."""
    with grpc.insecure_channel(address) as channel:
        first = messages.Message(open=messages.Open(tool=tool, site_table=table, program="test"))
        return services.RehostStub(channel).Analyse(iter([first] + [messages.Message(records=c) for c in chunks]),
                                                    timeout=60)


def rejected(address: str, table: bytes, chunks: list[bytes]) -> str:
    with pytest.raises(grpc.RpcError) as info:
        session(address, table, chunks)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return info.value.details()


def assert_serves(address: str, run: dict) -> None:
    summary = session(address, run["table"], [run["stream"]])
    assert summary.complete
    assert {o.path: o.content for o in summary.outputs} == {"prog.cachesim.out": run["expected"]}


def test_no_server_is_one_line_and_program_not_started(pair: dict) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nobody listens there
    out = subprocess.run(CLI_RUN + ["--server", f"127.0.0.1:{port}", str(pair["sort"]["binary"])],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert out.stdout == ""  # the program did not run
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anvil: error: no rehost server at"), out.stderr


def test_malformed_sessions_are_rejected_and_others_served(server: ServerProcess, pair: dict) -> None:
    sort, hash_ = pair["sort"], pair["hash"]
    stream, table = sort["stream"], sort["table"]
    nsites = len(json.loads(table)["sites"])
    assert "not JSON" in rejected(server.address, b"{not json", [stream])
    assert "site table" in rejected(server.address, json.dumps({"format": "other"}).encode(), [stream])
    assert "digest differs" in rejected(server.address, hash_["table"], [stream])  # another binary's table
    assert "header" in rejected(server.address, table, [b"\x00" * 64])
    bad_site = bytearray(stream)
    struct.pack_into("<I", bad_site, 20, nsites + 7)  # the first record's site id
    assert f"unknown site id {nsites + 7}" in rejected(server.address, table, [bytes(bad_site)])
    assert "inside a record" in rejected(server.address, table, [stream[:20 + 6]])
    end = stream.rindex(struct.pack("<I", 0xFFFFFFFF))
    assert "end record" in rejected(server.address, table, [stream[:end + 4]])
    assert "after the end record" in rejected(server.address, table, [stream + b"\0" * 8])
    # The server is still there, and right.
    assert_serves(server.address, sort)
    assert_serves(server.address, hash_)


def test_interleaved_sessions_keep_separate_state(server: ServerProcess, pair: dict) -> None:
    """Two sessions open at once, fed alternately in small pieces, each get their own correct results."""
    feeds: list[queue.Queue] = [queue.Queue(), queue.Queue()]
    summaries: dict[int, object] = {}
    runs = [pair["sort"], pair["hash"]]

    def call(i: int) -> None:
        def requests():
            yield messages.Message(open=messages.Open(tool="cachesim", site_table=runs[i]["table"]))
            while (chunk := feeds[i].get()) is not None:
                yield messages.Message(records=chunk)
        with grpc.insecure_channel(server.address) as channel:
            summaries[i] = services.RehostStub(channel).Analyse(requests(), timeout=120)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    piece = 4099  # not a multiple of the record size: records split across messages
    longest = max(len(r["stream"]) for r in runs)
    for at in range(0, longest, piece):
        for i in range(2):
            if at < len(runs[i]["stream"]):
                feeds[i].put(runs[i]["stream"][at:at + piece])
    for i in range(2):
        feeds[i].put(None)
    for t in threads:
        t.join(timeout=120)
    for i in range(2):
        assert summaries[i].complete
        assert summaries[i].outputs[0].content == runs[i]["expected"]


def test_server_killed_mid_run(tmp_path: Path) -> None:
    binary = build("calls", "O2-thumb-dyn")
    stdin = b"x" * 100000
    original = run_prog(place(binary, tmp_path, "orig"), ["stdin", "two words"], stdin)
    rehost = instrument(binary, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    srv = ServerProcess()
    client = subprocess.Popen(CLI_RUN + ["--server", srv.address, str(rehost), "stdin", "two words"],
                              cwd=rehost.parent, env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert srv.proc.stderr is not None
    opened = line_while(srv.proc.stderr, client)
    if "opened" not in opened:
        srv.stop()
        client.kill()
        raise AssertionError(f"no session opened: {opened!r}, client: {client.communicate()[1]!r}")
    srv.proc.kill()  # the program is waiting for its input: the server dies mid-run
    srv.stop()
    time.sleep(0.2)
    out, err = client.communicate(stdin, timeout=120)
    assert client.returncode == original.returncode
    assert out == original.stdout
    assert err.startswith(original.stderr)
    note = err[len(original.stderr):].decode()
    assert note.startswith("anvil: rehost:") and "not analysed" in note and note.count("\n") == 1, note
    assert not (rehost.parent / "prog.cachesim.out").exists()


def test_token_required(pair: dict, tmp_path: Path) -> None:
    binary = pair["sort"]["binary"]
    with ServerProcess("--token", "s3cret") as srv:
        without = cli_run(binary, "--server", srv.address)
        with_token = cli_run(binary, "--server", srv.address, "--token", "s3cret")
    assert without.returncode == 0  # the program still ran, its own way
    assert b"token" in without.stderr and b"no results" in without.stderr
    assert with_token.returncode == 0 and with_token.stderr == b""
    assert (binary.parent / "prog.cachesim.out").read_bytes() == pair["sort"]["expected_cli"]


def test_tls(pair: dict, tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    binary = pair["hash"]["binary"]
    with ServerProcess("--tls-cert", str(cert), "--tls-key", str(key)) as srv:
        assert "(TLS)" in srv.first_line
        plain = cli_run(binary, "--server", srv.address, text=True)
        secure = cli_run(binary, "--server", srv.address, "--tls-ca", str(cert), text=True)
    assert plain.returncode == 2 and plain.stdout == "" and "no rehost server" in plain.stderr
    assert secure.returncode == 0, secure.stderr
    assert (binary.parent / "prog.cachesim.out").read_bytes() == pair["hash"]["expected_cli"]


def _listening(port: int) -> set[str]:
    """The local addresses the kernel has listening on TCP ``port`` (/proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in f.readlines()[1:]:
                fields = row.split()
                address, hex_port = fields[1].rsplit(":", 1)
                if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                    found.add(address)
    return found


def test_binds_loopback_by_default() -> None:
    srv = subprocess.Popen(CLI + ["rehost-server", "--lib", "inscount"], stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stderr is not None
        line = srv.stderr.readline()
        bound = _listening(50051)
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    assert "on 127.0.0.1:50051" in line, line
    # 127.0.0.1 only, in the kernel's byte order: as IPv4, or IPv4-mapped on an IPv6 socket.
    assert bound and bound <= {"0100007F", "0000000000000000FFFF00000100007F"}, bound


def test_health_service(server: ServerProcess) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from rehost.protocol import SERVICE

    with grpc.insecure_channel(server.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
        with pytest.raises(grpc.RpcError) as unknown:
            stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("lib,problem", [("./missing.py", "no such Python analysis file"),
                                         ("./missing.so", "no such file"),
                                         ("nosuchtool", "no analysis library 'nosuchtool'")])
def test_bad_library_is_one_line(lib: str, problem: str, tmp_path: Path) -> None:
    out = subprocess.run(CLI + ["rehost-server", "--lib", lib, "--listen", "127.0.0.1:0"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and problem in out.stderr, out.stderr


def test_python_tool_that_raises_rejects_its_session_only(server: ServerProcess, pair: dict, tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("class Analysis:\n    def __init__(self, session):\n        pass\n"
                   "    def profile_start(self, *a):\n        raise ValueError('broken tool')\n"
                   "    def cache_sim(self, *a):\n        pass\n    def profile_end(self, *a):\n        pass\n")
    with ServerProcess("--lib", str(bad)) as srv:
        with pytest.raises(grpc.RpcError) as info:
            session(srv.address, pair["sort"]["table"], [pair["sort"]["stream"]])
    assert "broken tool" in info.value.details()
    assert_serves(server.address, pair["sort"])


def test_program_that_closes_its_descriptors_keeps_its_records(tmp_path: Path) -> None:
    """A program that closes every descriptor it inherited (a daemon's start-up, closefrom)
    behaves as the original under `anvil run`, and its ReHost results are its InHost copy's:
    the channel is not one of its descriptors (decision 0126; before, it was descriptor 1000,
    and the records stopped where the program closed it)."""
    assert_rehost_as_inhost(build("closes_inherited", "O2-thumb-dyn"), "cachesim", tmp_path)


def test_a_background_job_is_not_waited_for(tmp_path: Path) -> None:
    """A program that leaves a command running in the background ends at once; so does
    `anvil run` of its ReHost copy, with InHost's results: the command (a `cat` waiting on a
    FIFO until the test writes to it) does not get the channel, whose last copy closing is
    what `anvil run` waits for."""
    binary = build("background_job", "O2-thumb-dyn")
    original = place(binary, tmp_path, "orig")
    inhost = instrument(binary, "inscount", tmp_path)
    rehost = instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst")
    programs = (original, inhost, rehost)
    for program in programs:
        os.mkfifo(program.parent / "job.fifo")
    try:
        before = run_prog(original)
        assert before.returncode == 0 and before.stdout.startswith(b"started 0"), before
        assert_same_behaviour(before, run_prog(inhost))
        run = subprocess.run(CLI_RUN + [str(rehost)], capture_output=True, cwd=rehost.parent, env={}, timeout=120)
        assert (run.returncode, run.stdout, run.stderr) == (before.returncode, before.stdout, before.stderr)
        assert (rehost.parent / "prog.inscount.out").read_bytes() == (inhost.parent / "prog.inscount.out").read_bytes()
    finally:
        for program in programs:  # a background job ends when a writer comes and goes
            try:
                os.close(os.open(program.parent / "job.fifo", os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader (the job did not start): nothing to end
                pass
