"""Debian's own armhf programs, as a user finds them in /usr/bin: stripped, dynamically
linked PIEs built by Debian's compiler, with PLT stubs, switch tables (some checked twice),
libgcc's division, literal pools that decode as IT instructions and error routines that
never return.

Every tool must leave their behaviour unchanged, the descent must find all the code they
run, and inscount must count exactly what qemu counts in the executable (shared libraries
run as they are; decision 0058). Each program is downloaded once per run (``apt-get
download``, ``dpkg -x``) with the libraries it needs, found through LD_LIBRARY_PATH by the
real ld.so.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rehost.server import Library, start_server
from rewriter.ir.elf_loader import load_binary
from rewriter.ir.plt import plt_functions
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.corpus import CORPUS, DASH_SCRIPT, environment, fetch, input_text
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, forked_results, instrument, place, results, run_prog
from tests.support.samples import SAMPLES_DIR

INPUT = "{input}"
# name: its arguments here (the packages and the path are the corpus's, tests/support/corpus.py)
ARGUMENTS = {
    "bc": ["-l", "-q"],
    "gzip": ["-c", "-6", INPUT],
    "bzip2": ["-c", "-9", INPUT],
    "grep": ["-n", "-E", "a[bc]+d|int [a-z]+\\(", INPUT],
    "ls": ["-la", "--time-style=+", str(SAMPLES_DIR)],
    "lua5.4": list(CORPUS["lua5.4"].args),
    "dash": ["-c", DASH_SCRIPT, "sh", INPUT],
}
STDIN = {"bc": CORPUS["bc"].stdin}
# Programs whose instruction count differs from run to run: Lua seeds its string hashes
# with the time and an address (luai_makeseed), so its string table's chains differ.
UNREPEATABLE = {"lua5.4"}


def _program(name: str) -> tuple[Path, dict[str, str]]:
    """The program's path and the environment that finds its libraries."""
    program = CORPUS[name]
    binary, root = fetch(program)
    return binary, environment(program, root)


def _input(tmp_path: Path) -> Path:
    """What the programs read: the corpus's input.txt, 6 KiB of C (qemu's single-step trace of
    what gzip does with it takes seconds)."""
    path = tmp_path / "input.txt"
    path.write_bytes(input_text())
    return path


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_debian_program_transparent_and_counted(name: str, tmp_path: Path) -> None:
    program, env = _program(name)
    args = [a.replace(INPUT, str(_input(tmp_path))) for a in ARGUMENTS[name]]
    placed = place(program, tmp_path, "orig")
    stdin = STDIN.get(name, b"")
    original = run_prog(placed, args, stdin, env=env)
    assert original.stdout, original.stderr  # the workload does something
    trace = trace_pcs(placed, args, stdin, argv0="prog", env=env)
    assert trace.stdout == original.stdout
    executed = exe_pcs(trace, placed)

    found = {ins.address for proc in load_binary(str(program)).procedures for ins in proc.instructions()}
    missed = sorted(pc for pc in executed if pc not in found)
    assert not missed, f"executed but not found by the descent: {[hex(pc) for pc in missed[:10]]}"

    for tool in ("inscount", "bbcount", "cachesim"):
        # inscount's run sees the descriptors the trace's did (files), bbcount's and cachesim's pipes.
        inst = run_prog(instrument(program, tool, tmp_path), args, stdin, env=env, like_trace=tool == "inscount")
        assert_same_behaviour(original, inst)
        if tool == "inscount" and name not in UNREPEATABLE:
            assert results(inst, tool)["total"] == sum(executed.values())


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_plt_entries_named_like_binutils(name: str) -> None:
    """plt_functions against objdump's ``<function@plt>`` labels (at an entry's Thumb stub
    where it has one), which binutils computes from the same relocations its own way."""
    program, _ = _program(name)
    listing = subprocess.run(["arm-linux-gnueabihf-objdump", "-d", "-j", ".plt", str(program)],
                             capture_output=True, text=True, check=True).stdout
    labels = {int(a, 16): f for a, f in re.findall(r"^([0-9a-f]+) <(.+)@plt>:$", listing, re.MULTILINE)}
    with program.open("rb") as f:
        elf = ELFFile(f)
        named = plt_functions(elf)
        relocations = elf.get_section_by_name(".rel.plt").num_relocations()
    assert len(labels) == relocations > 0
    assert {a: named.get(a) for a in labels} == labels
    assert set(named.values()) == set(labels.values())


# Subshells: dash forks one for each parenthesised list and runs it without exec; the
# second forks one more inside (not for its last command: that one runs in the process).
# Each parent waits for its child with a blocking waitpid. (Command substitutions would
# not do: the parent reads the child's output through a pipe, in as many reads as the
# timing makes, and its results change from run to run under load, InHost as well.)
SUBSHELLS = '(echo hi; i=0; while [ $i -lt 300 ]; do i=$((i+1)); done; echo $i); ( (echo sub); echo more ); exit 4'


def test_dash_subshells_in_rehost_equal_inhost(tmp_path: Path) -> None:
    """Each subshell gets a ReHost session of its own that starts with the shell's records
    up to its fork (decision 0031): the shell's and every subshell's results equal InHost's."""
    program, _ = _program("dash")
    args = ["-c", SUBSHELLS]
    original = run_prog(place(program, tmp_path, "orig"), args)
    assert original.returncode == 4 and original.stdout == b"hi\n300\nsub\nmore\n"
    srv, port = start_server(Library(None), log=None)
    try:
        for tool in ("inscount", "bbcount", "cachesim"):
            inhost = run_prog(instrument(program, tool, tmp_path), args)
            rehost, outcome = run_rehost(instrument(program, tool, tmp_path, "--mode", "rehost", slot="rhst"),
                                         f"127.0.0.1:{port}", args)
            assert_same_behaviour(original, inhost)
            assert_same_behaviour(original, rehost)
            assert outcome.summary.complete and len(outcome.children) == 3
            children = forked_results(inhost.cwd, tool)
            assert len(children) == 3, children
            shell = f"prog.{tool}.out"
            assert (rehost.cwd / shell).read_bytes() == (inhost.cwd / shell).read_bytes(), \
                f"{tool}: the shell's results differ"
            assert forked_results(rehost.cwd, tool) == children, f"{tool}: the subshells' results differ"
    finally:
        srv.stop(None)
