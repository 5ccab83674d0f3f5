"""ReHost end to end: records through a real gRPC server on loopback, analysis on the host.

- every sample (three builds: Thumb and ARM, dynamic and static) with inscount, bbcount
  and cachesim: the ReHost binary behaves byte for byte like the original, and each
  tool's results file equals the InHost binary's (InHost itself is checked against
  qemu and a reference cache model in test_inhost / test_cachesim_oracle);
- the Debian-liblua Lua interpreter likewise;
- the same through ``anvil rehost-server`` in another process with the C library
  given by name, as a .so and as a Python class; two programs streaming to one server
  at once get their own results;
- the TCP channel: a program started on its own with ANVIL_REHOST_CONNECT reaches
  ``anvil rehost-listen``, with the same results as InHost.
Faults are in test_rehost_faults.py.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from rehost import host_build
from rehost.server import Library, start_server
from rewriter.emit.rehost import SITE_TABLE_SUFFIX
from rewriter.ir.elf_loader import load_binary
from tests.support.rehost import CLI_RUN, ServerProcess, cli_run, run_rehost, with_listener
from tests.support.run import Run, assert_same_behaviour, forked_results, instrument, instrument_ir, place, run_prog
from tests.support.samples import LUA_BENCH, SAMPLES, build, build_lua, sample_matrix

ARGS = {"calls": ["stdin", "two words"]}
STDIN = {"calls": b"some input for the calls sample\n"}
TOOLS = ("inscount", "bbcount", "cachesim")
# memtrace too on the samples' default build (its traces are tens of MB elsewhere; Lua's
# 27 M accesses would make 700 MB).
MEMTRACE_VARIANT = "O2-thumb-dyn"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server():
    """One in-process server for the module: the C library of each binary's tool."""
    srv, port = start_server(Library(None), log=None)
    yield f"127.0.0.1:{port}"
    srv.stop(None)


def results_file(run_dir: Path, tool: str) -> bytes:
    path = run_dir / f"prog.{tool}.out"
    assert path.exists(), f"no {tool} results in {run_dir}"
    return path.read_bytes()


# Every build kind: Thumb PIE (dynamic, and with -fPIE), A32 fixed-address and PIE, static;
# results in text (what a person reads) as well as JSON on the default build.
@pytest.mark.parametrize(("sample", "variant"), sample_matrix(SAMPLES, ["O2-thumb-dyn", "O0-arm-dyn", "Os-thumb-static",
                                                                       "O2-arm-dyn-nopie", "O2-thumb-pie"]))
def test_sample_rehost_equals_inhost(sample: str, variant: str, server: str, tmp_path: Path) -> None:
    binary = build(sample, variant)
    args, stdin = ARGS.get(sample, []), STDIN.get(sample, b"")
    original = run_prog(place(binary, tmp_path, "orig"), args, stdin)
    ir = load_binary(str(binary))
    formats = ("json", "text") if variant == "O2-thumb-dyn" else ("json",)
    for tool in (*TOOLS, "memtrace") if variant == MEMTRACE_VARIANT else TOOLS:
        for fmt in formats:
            inhost = run_prog(instrument_ir(ir, tool, tmp_path, fmt=fmt), args, stdin)
            assert_same_behaviour(original, inhost)
            rehost, outcome = run_rehost(instrument_ir(ir, tool, tmp_path, mode="rehost", slot="rhst", fmt=fmt),
                                         server, args, stdin)
            assert_same_behaviour(original, rehost)
            assert not outcome.error and outcome.summary.complete, outcome.error
            assert results_file(rehost.cwd, tool) == results_file(inhost.cwd, tool), f"{tool} {fmt} results differ"


# The static build in the extended tier: the dynamic one's records fill the small ring
# hundreds of times already; the static build's stream is checked whole at the default
# size by test_sample_rehost_equals_inhost (decision 0185).
@pytest.mark.parametrize("variant", ["O2-thumb-dyn", pytest.param("Os-thumb-static", marks=pytest.mark.extended)])
def test_small_ring_rehost_equals_inhost(variant: str, server: str, tmp_path: Path) -> None:
    """--ring-size 1k instead of 256 KiB: hash's cachesim records leave in hundreds of
    sends; same behaviour, complete stream, InHost's results."""
    binary = build("hash", variant)
    original = run_prog(place(binary, tmp_path, "orig"))
    inhost = run_prog(instrument(binary, "cachesim", tmp_path))
    rehost, outcome = run_rehost(instrument(binary, "cachesim", tmp_path, "--mode", "rehost", "--ring-size", "1k",
                                            slot="rhst"), server)
    assert_same_behaviour(original, rehost)
    assert not outcome.error and outcome.summary.complete, outcome.error
    assert results_file(rehost.cwd, "cachesim") == results_file(inhost.cwd, "cachesim")


# Every counting tool on the default build; on a static one (glibc's own fork), cachesim,
# whose stream has several rings of records before the fork.
# memtrace: a trace written as the program runs, its file opened before the fork.
@pytest.mark.parametrize(("variant", "tool"), [*(("O2-thumb-dyn", tool) for tool in (*TOOLS, "memtrace")),
                                               ("Os-thumb-static", "cachesim")])
def test_forked_child_gets_a_session_of_its_own(variant: str, tool: str, server: str, tmp_path: Path) -> None:
    """A program that forks: InHost, the parent's results file holds the parent's
    procedures and the child's goes to ``<file>.<pid>`` with the child's, counted on from
    the parent's at the fork. ReHost gives the child a session of its own that starts
    with its parent's stream up to the fork (cachesim: several rings of records already
    sent, and the ring's unsent records in both streams), and a grandchild one that starts
    with the child's: all three files equal InHost's. memtrace's InHost trace, opened at
    the start, went on in the one file from all three processes, the records buffered at
    each fork twice (decision 0098): now each child's trace begins with its parent's up to
    the fork."""
    binary = build("forks", variant)
    original = run_prog(place(binary, tmp_path, "orig"))
    ir = load_binary(str(binary))
    inhost = run_prog(instrument_ir(ir, tool, tmp_path), [])
    assert_same_behaviour(original, inhost)
    parent = results_file(inhost.cwd, tool)
    children = forked_results(inhost.cwd, tool)
    assert len(children) == 2, children  # the child's and the grandchild's
    if tool in ("inscount", "bbcount"):
        assert b"parent_work" in parent and b"child_work" not in parent
        assert all(b"child_work" in child and b"parent_work" not in child for child in children)
    if tool == "memtrace":  # the walk over the buffer before the fork: thousands of records in common
        assert all(len(os.path.commonprefix([parent, child])) > 100_000 for child in children)
    rehost, outcome = run_rehost(instrument_ir(ir, tool, tmp_path, mode="rehost", slot="rhst"), server, [])
    assert_same_behaviour(original, rehost)
    assert not outcome.error and outcome.summary.complete, outcome.error
    assert [c.summary.complete for c in outcome.children.values()] == [True, True]
    assert results_file(rehost.cwd, tool) == parent, "the parent's results differ"
    assert forked_results(rehost.cwd, tool) == children, "the children's results differ"


# bbcount in the extended tier: its records and library are checked on every sample above;
# Lua's own calls and counters by the other two (decision 0185).
@pytest.mark.parametrize("tool", [pytest.param(tool, marks=pytest.mark.extended) if tool == "bbcount" else tool
                                  for tool in TOOLS])
def test_lua_rehost_equals_inhost(tool: str, server: str, tmp_path: Path) -> None:
    lua = build_lua()
    script = [str(LUA_BENCH.resolve())]
    original = run_prog(place(lua, tmp_path, "orig"), script)
    inhost = run_prog(instrument(lua, tool, tmp_path), script)
    rehost, outcome = run_rehost(instrument(lua, tool, tmp_path, "--mode", "rehost", slot="rhst"), server, script)
    assert_same_behaviour(original, inhost)
    assert_same_behaviour(original, rehost)
    assert outcome.summary.complete
    assert (outcome.summary.records > 0) == (tool == "cachesim")  # the counters travel in the end record
    assert results_file(rehost.cwd, tool) == results_file(inhost.cwd, tool)


@pytest.fixture(scope="module")
def hash_pair(tmp_path_factory) -> tuple[Path, Path]:
    """The hash sample instrumented with cachesim in both modes (JSON results)."""
    tmp = tmp_path_factory.mktemp("pair")
    binary = build("hash", "O2-thumb-dyn")
    inhost = instrument(binary, "cachesim", tmp)
    rehost = instrument(binary, "cachesim", tmp, "--mode", "rehost", slot="rhst")
    # Through `anvil run` like the ReHost runs: Python adds LC_CTYPE to a C-locale environment (PEP 538).
    assert cli_run(inhost).returncode == 0
    return inhost, rehost


@pytest.mark.parametrize("lib", ["cachesim", "so", "py"])
def test_server_process_with_each_library_kind(lib: str, hash_pair: tuple[Path, Path], tmp_path: Path) -> None:
    inhost, rehost = hash_pair
    if lib == "so":
        spec = str(tmp_path / "libcachesim.so")
        shutil.copy(host_build.build(host_build.tool_sources("cachesim")), spec)
    elif lib == "py":
        spec = str(ROOT / "analysis_libs" / "cachesim" / "cachesim.py")
    else:
        spec = lib
    with ServerProcess("--lib", spec) as srv:
        out = cli_run(rehost, "--server", srv.address)
        log = srv.stop()
    assert out.returncode == 0, out.stderr
    assert out.stderr == b"", out.stderr
    assert (rehost.parent / "prog.cachesim.out").read_bytes() == (inhost.parent / "prog.cachesim.out").read_bytes()
    assert "complete" in log


def test_two_programs_at_once_get_their_own_results(tmp_path: Path) -> None:
    jobs = []
    for sample, tool in (("sort", "cachesim"), ("matrix", "bbcount")):
        binary = build(sample, "O2-thumb-dyn")
        work = tmp_path / sample
        inhost = instrument(binary, tool, work)
        assert cli_run(inhost).returncode == 0
        jobs.append((tool, inhost, instrument(binary, tool, work, "--mode", "rehost", slot="rhst")))
    with ServerProcess() as srv:
        procs = [subprocess.Popen(CLI_RUN + ["--server", srv.address, str(rh)], cwd=rh.parent, env={},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _, _, rh in jobs]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        log = srv.stop()
    assert log.count("complete") == 2
    for tool, inhost, rehost in jobs:
        assert (rehost.parent / f"prog.{tool}.out").read_bytes() == (inhost.parent / f"prog.{tool}.out").read_bytes()


@pytest.mark.parametrize("tool", TOOLS)
def test_python_analysis_equals_c(tool: str, tmp_path: Path) -> None:
    """analysis_libs/<tool>/<tool>.py writes exactly what <tool>.c writes (JSON results, a static A32 build)."""
    binary = build("calls", "O2-arm-static")
    args, stdin = ARGS["calls"], STDIN["calls"]
    ir = load_binary(str(binary))
    inhost = run_prog(instrument_ir(ir, tool, tmp_path), args, stdin)
    rehost_binary = instrument_ir(ir, tool, tmp_path, mode="rehost", slot="rhst")
    srv, port = start_server(Library(str(ROOT / "analysis_libs" / tool / f"{tool}.py")), log=None)
    try:
        rehost, outcome = run_rehost(rehost_binary, f"127.0.0.1:{port}", args, stdin)
    finally:
        srv.stop(None)
    assert_same_behaviour(inhost, rehost)
    assert outcome.summary.complete
    assert results_file(rehost.cwd, tool) == results_file(inhost.cwd, tool)


def _run_with_listener(rehost_bin: Path, args: list[str], stdin: bytes = b"") -> tuple[Run, dict[str, str]]:
    """Run ``rehost_bin`` by hand with ANVIL_REHOST_CONNECT naming an ``anvil rehost-listen``
    that writes its results beside it; the run and the environment it had."""
    return with_listener(rehost_bin, lambda env: run_prog(rehost_bin, args, stdin, env=env))


# The static build in the extended tier: the channel is the runtime's, the same in both
# (decision 0185).
@pytest.mark.parametrize("variant", ["O2-thumb-dyn", pytest.param("Os-thumb-static", marks=pytest.mark.extended)])
def test_tcp_channel_named_by_the_environment(variant: str, tmp_path: Path) -> None:
    """The program is started by hand (as on another machine) with ANVIL_REHOST_CONNECT;
    ``anvil rehost-listen`` takes its records. Original and InHost run with the same
    variable (same environment size, so the same stack addresses)."""
    binary = build("calls", variant)
    args, stdin = ARGS["calls"], STDIN["calls"]
    ir = load_binary(str(binary))
    inhost_bin = instrument_ir(ir, "cachesim", tmp_path)
    rehost, env = _run_with_listener(instrument_ir(ir, "cachesim", tmp_path, mode="rehost", slot="rhst"), args, stdin)
    original = run_prog(place(binary, tmp_path, "orig"), args, stdin, env=env)
    inhost = run_prog(inhost_bin, args, stdin, env=env)
    assert_same_behaviour(original, rehost)
    assert_same_behaviour(original, inhost)
    assert results_file(rehost.cwd, "cachesim") == results_file(inhost.cwd, "cachesim")


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_tcp_forked_children_connect_on_their_own(tool: str, tmp_path: Path) -> None:
    """Over ANVIL_REHOST_CONNECT a forked child connects on its own, a fork hello first;
    ``rehost-listen`` gives the child and the grandchild sessions that start with their
    parent's stream up to the fork (its bytes come on another connection, maybe later):
    the three results files equal InHost's."""
    binary = build("forks", "O2-thumb-dyn")
    ir = load_binary(str(binary))
    inhost_bin = instrument_ir(ir, tool, tmp_path)
    rehost, env = _run_with_listener(instrument_ir(ir, tool, tmp_path, mode="rehost", slot="rhst"), [])
    original = run_prog(place(binary, tmp_path, "orig"), [], env=env)
    inhost = run_prog(inhost_bin, [], env=env)
    assert_same_behaviour(original, rehost)
    assert_same_behaviour(original, inhost)
    children = forked_results(inhost.cwd, tool)
    assert len(children) == 2
    assert results_file(rehost.cwd, tool) == results_file(inhost.cwd, tool)
    assert forked_results(rehost.cwd, tool) == children


def test_tcp_channel_nobody_listening(tmp_path: Path) -> None:
    """No listener: the program still runs as itself; one line says the records were dropped."""
    binary = build("calls", "O2-thumb-dyn")
    args, stdin = ARGS["calls"], STDIN["calls"]
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        where = f"127.0.0.1:{probe.getsockname()[1]}"
    env = {"ANVIL_REHOST_CONNECT": where}
    original = run_prog(place(binary, tmp_path, "orig"), args, stdin, env=env)
    rehost = run_prog(instrument(binary, "cachesim", tmp_path, "--mode", "rehost"), args, stdin, env=env)
    assert (rehost.stdout, rehost.returncode) == (original.stdout, original.returncode)
    assert rehost.stderr == f"anvil: rehost: cannot connect to {where}; records dropped\n".encode() + original.stderr


@pytest.mark.parametrize(("sample", "forks"), [("raw_fork", False), ("sort", False), ("forks", True)])
def test_what_forks_is_known_from_the_names(sample: str, forks: bool) -> None:
    """``Binary.forks`` (the site table's ``forks``): a program that calls fork (forks.c) may
    fork; one that names nothing that forks (sort.c, raw_fork.c's inline system call) is
    taken not to, as the sources say; a static program without symbols may."""
    assert load_binary(str(build(sample, "O2-thumb-dyn"))).forks is forks
    assert load_binary(str(build(sample, "Os-thumb-static", ["-s"]))).forks


def test_a_child_the_rewrite_did_not_see_coming_is_reported(server: str, tmp_path: Path) -> None:
    """A program that forks by an inline system call, naming nothing that forks: its ReHost
    stream is not kept for children (its table says it does not fork), so the child's
    records have no session. The program behaves as the original, the parent's results are
    InHost's parent's, no results are written for the child, and `anvil run` says so and
    why, in one line."""
    binary = build("raw_fork", "O2-thumb-dyn")
    original = run_prog(place(binary, tmp_path, "orig"))
    assert original.returncode == 0 and b"child status 3" in original.stdout, original
    inhost = run_prog(instrument(binary, "cachesim", tmp_path))
    assert_same_behaviour(original, inhost)
    assert len(forked_results(inhost.cwd, "cachesim")) == 1  # InHost: the child's own file
    rehost = instrument(binary, "cachesim", tmp_path, "--mode", "rehost", slot="rhst")
    assert '"forks":false' in Path(str(rehost) + SITE_TABLE_SUFFIX).read_text()
    run, outcome = run_rehost(rehost, server)  # (launched as run_prog launches: the same stack)
    assert_same_behaviour(original, run)
    assert outcome.summary.complete and not outcome.children and not outcome.stray_bytes
    assert len(outcome.unkept_children) == 1 and "forks" in next(iter(outcome.unkept_children.values()))
    assert results_file(run.cwd, "cachesim") == results_file(inhost.cwd, "cachesim")
    assert not forked_results(run.cwd, "cachesim")
    note = cli_run(rehost).stderr[len(original.stderr):].decode()
    assert note.count("\n") == 1 and "forked child" in note and "no results written" in note, note
