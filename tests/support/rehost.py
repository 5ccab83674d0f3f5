"""Run ReHost binaries the way tests/support/run.py runs InHost ones (same path, argv[0], env -i)."""

from __future__ import annotations

import re
import select
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rehost import bridge
from rehost.sitetable import parse
from rewriter.emit.rehost import SITE_TABLE_SUFFIX
from tests.support.run import LIB_ROOT, Run, assert_same_behaviour, instrument, place, results, run_prog

CLI = [sys.executable, "-m", "rewriter.cli"]
T = TypeVar("T")
CLI_RUN = CLI + ["run", "-q", "--argv0", "prog"]  # as run_prog runs programs: argv[0] 'prog'


def place_at(running: Path, copy: Path) -> None:
    """``copy`` (and its site table, if any) at ``running``, where every copy of a program
    runs (one path: the same addresses under ``setarch -R``), an earlier run's files gone."""
    for stale in running.parent.glob(f"{running.name}.*"):
        stale.unlink()
    shutil.copy(copy, running)
    table = Path(f"{copy}{SITE_TABLE_SUFFIX}")
    if table.exists():
        shutil.copy(table, f"{running}{SITE_TABLE_SUFFIX}")


def cli_run(binary: Path, *extra: str, text: bool = False) -> subprocess.CompletedProcess:
    """``anvil run -q [extra] BINARY`` in the binary's directory with an empty environment, output captured."""
    return subprocess.run(CLI_RUN + [*extra, str(binary)], capture_output=True, cwd=binary.parent, env={},
                          timeout=300, text=text)


def assert_rehost_as_inhost(sample: Path, tool: str, tmp: Path, fmt: str = "json",
                            args: tuple[str, ...] = ()) -> tuple[Run, Path]:
    """``sample`` run as it is, its InHost copy (run_prog) and its ReHost copy (`anvil run`)
    with ``tool`` and ``args``: each behaves as the original, and the ReHost results file is
    the InHost copy's. Returns the InHost run and the ReHost copy (for the checks a test adds)."""
    original = run_prog(place(sample, tmp, "orig"), args)
    assert original.returncode == 0, original.stderr
    inhost = run_prog(instrument(sample, tool, tmp, fmt=fmt), args)
    assert_same_behaviour(original, inhost)
    rehost = instrument(sample, tool, tmp, "--mode", "rehost", fmt=fmt, slot="rhst")
    run = subprocess.run(CLI_RUN + [str(rehost), *args], capture_output=True, cwd=rehost.parent, env={}, timeout=300)
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
    name = f"prog.{tool}.out"
    assert (rehost.parent / name).read_bytes() == (inhost.cwd / name).read_bytes()
    return inhost, rehost


def run_rehost(binary: Path, address: str, args: list[str] | tuple[str, ...] = (), stdin: bytes = b"",
               timeout: float = 300, env: dict[str, str] | None = None,
               argv0: str = "prog", cwd: Path | None = None,
               lib_root: str = LIB_ROOT) -> tuple[Run, bridge.Outcome]:
    """Run the ReHost ``binary`` (at its final path) against the server at ``address``.

    Like run_prog: only ``env`` (default none), argv[0] ``argv0``, working directory
    ``cwd`` (default the binary's), libraries from ``lib_root``; the results files the server sends back are written
    there (relative names; an absolute ``--out`` is written where it says).
    """
    cwd = cwd or binary.parent
    document = Path(str(binary) + SITE_TABLE_SUFFIX).read_bytes()
    table = parse(document)
    channel = bridge.connect(address)
    cmd = ["qemu-arm", "-L", lib_root, "-0", argv0, str(binary.resolve()), *args]
    try:
        outcome = bridge.run(cmd, channel, table.tool, document, "prog", env=env or {}, cwd=str(cwd),
                             stdin=stdin, forks=table.forks)
    finally:
        channel.close()
    bridge.write_outputs(outcome, table.output_paths, str(cwd))
    return Run(outcome.stdout, outcome.stderr, outcome.returncode, cwd), outcome


def run_rehost_alone(binary: Path, args: list[str] | tuple[str, ...] = ()) -> tuple[Run, bridge.Outcome]:
    """run_rehost against a C-analysis server of its own on loopback, stopped afterwards."""
    from rehost.server import Library, start_server

    srv, port = start_server(Library(None), log=None)
    try:
        return run_rehost(binary, f"127.0.0.1:{port}", args)
    finally:
        srv.stop(None)


def line_while(stream, other: subprocess.Popen, seconds: float = 120) -> str:
    """The next line a child writes to the pipe ``stream``, or "" if ``other`` (the process
    it waits for) ends first or none comes within ``seconds``: a test waiting for a server
    that waits for a client that died fails instead of hanging."""
    for _ in range(int(seconds * 10)):
        if select.select([stream], [], [], 0.1)[0]:
            return stream.readline()
        if other.poll() is not None:
            break
    return ""


def with_listener(binary: Path, start: Callable[[dict[str, str]], T]) -> tuple[T, dict[str, str]]:
    """Run ``start(env)`` while an ``anvil rehost-listen`` of ``binary`` waits for it (it
    writes its results beside ``binary``); ``env`` names the listener in ANVIL_REHOST_CONNECT.
    What ``start`` returned and that environment, once the listener has finished."""
    listener = subprocess.Popen(CLI + ["rehost-listen", "-q", "--timeout", "120", str(binary)], cwd=binary.parent,
                                stderr=subprocess.PIPE, text=True)
    try:
        assert listener.stderr is not None
        line = listener.stderr.readline()
        match = re.search(r"ANVIL_REHOST_CONNECT=(\S+)\)", line)
        assert match, f"rehost-listen did not start: {line!r}"
        env = {"ANVIL_REHOST_CONNECT": match.group(1)}
        result = start(env)
        _, rest = listener.communicate(timeout=120)
    finally:
        listener.kill()
    assert listener.returncode == 0, rest
    return result, env


class ServerProcess:
    """``anvil rehost-server`` in a child process on a free loopback port."""

    def __init__(self, *extra: str) -> None:
        self.proc = subprocess.Popen(CLI + ["rehost-server", "--listen", "127.0.0.1:0", *extra],
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        match = re.search(r"on (\S+:\d+)", line)
        assert match, f"rehost-server did not start: {line!r}"
        self.address = match.group(1)
        self.first_line = line

    def stop(self) -> str:
        """Stop the server; returns what it logged."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, rest = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, rest = self.proc.communicate()
        return rest or ""

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def assert_counted_exactly(binary: Path, original: Run, pcs: dict, tmp: Path, address: str) -> None:
    """inscount's InHost copy of ``binary`` counts what qemu counted of the original
    (``pcs``, from traced_original) and behaves as ``original``; its ReHost copy, run
    against the server at ``address``, behaves as the original and completes its session."""
    inst = run_prog(instrument(binary, "inscount", tmp))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())
    rehost, outcome = run_rehost(instrument(binary, "inscount", tmp, "--mode", "rehost", slot="rhst"), address, [])
    assert_same_behaviour(original, rehost)
    assert outcome.summary.complete


def assert_rehost_results_equal(binary: Path, original: Run, tmp: Path, address: str, tool: str = "cachesim") -> None:
    """``tool``'s InHost and ReHost copies of ``binary`` (the ReHost one against the server at
    ``address``) behave as ``original``, the session completes, and the two results files
    are the same bytes."""
    inhost = run_prog(instrument(binary, tool, tmp, slot="inst"))
    assert_same_behaviour(original, inhost)
    rehost = instrument(binary, tool, tmp, "--mode", "rehost", slot="rhst")
    run, outcome = run_rehost(rehost, address)
    assert_same_behaviour(original, run)
    assert outcome.summary.complete, outcome.error
    name = f"prog.{tool}.out"
    assert (rehost.parent / name).read_bytes() == (inhost.cwd / name).read_bytes()


def assert_inscount_in_both_modes(binary: Path, original: Run, tmp: Path, executed: int,
                                  env: dict[str, str] | None = None, slack: int = 0) -> None:
    """``binary`` instrumented with inscount, InHost and ReHost (against a server of its own),
    behaves as ``original`` (its run under qemu-arm, with ``env``) and counts ``executed`` (QEMU's
    count of the executable's instructions), within ``slack`` for a program whose count
    varies from run to run; without slack, ReHost's results are InHost's byte for byte."""
    inst = run_prog(instrument(binary, "inscount", tmp), env=env)
    assert_same_behaviour(original, inst)
    assert abs(results(inst, "inscount")["total"] - executed) <= slack
    rehost = instrument(binary, "inscount", tmp, "--mode", "rehost", slot="rhst")
    with ServerProcess() as server:
        run, outcome = run_rehost(rehost, server.address, env=env)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
    assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
    if slack:
        assert abs(results(run, "inscount")["total"] - executed) <= slack
    else:
        assert results(run, "inscount") == results(inst, "inscount")
