"""Instrument a binary and run it next to the original under identical conditions.

Both copies live at paths of the same length (``<tmp>/orig/prog`` and
``<tmp>/inst/prog``), run under ``env -i`` with argv[0] = ``prog`` and the same
arguments and stdin, so the stack (argv, environment, AT_EXECFN) and the heap
start out identical and any difference comes from the instrumentation.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rewriter.cli import main as anvil_main
from tests.support import image_cache, loaded_binaries

LIB_ROOT = "/usr/arm-linux-gnueabihf"


def run_in_own_group(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``cmd``'s run in a process group of its own; on a timeout the whole group is killed
    (an emulator or hung children left behind would spin on for the rest of the suite) and
    ``subprocess.TimeoutExpired`` is raised."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@dataclass
class Run:
    """One program run: what it printed and how it exited."""

    stdout: bytes
    stderr: bytes
    returncode: int
    cwd: Path


def run_prog(binary: Path, args: list[str] | tuple[str, ...] = (), stdin: bytes = b"", timeout: int = 300,
             env: dict[str, str] | None = None, like_trace: bool = False, lib_root: str = LIB_ROOT) -> Run:
    """Run ``binary`` (already at its final path) under qemu-arm with argv[0] 'prog' and only
    ``env``; its dynamic linker and libraries come from ``lib_root`` (``-L``).

    stdin, stdout and stderr are pipes; with ``like_trace`` they are regular files, as
    tests/oracles/qemu_trace.py gives them to the original whose count a run is compared
    with: programs take other paths for a seekable stdin (gnulib's close_stdin) or a
    regular stdout (grep's check that it is not also an input) (decision 0058)."""
    variables = [f"{k}={v}" for k, v in (env or {}).items()]
    cmd = ["env", "-i", *variables, "qemu-arm", "-L", lib_root, "-0", "prog", str(binary.resolve()), *args]
    if not like_trace:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, cwd=binary.parent, timeout=timeout)
        return Run(proc.stdout, proc.stderr, proc.returncode, binary.parent)
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(stdin)
        fin.seek(0)
        returncode = subprocess.run(cmd, stdin=fin, stdout=fout, stderr=ferr, cwd=binary.parent,
                                    timeout=timeout).returncode
        fout.seek(0)
        ferr.seek(0)
        return Run(fout.read(), ferr.read(), returncode, binary.parent)


def place(binary: Path, tmp: Path, slot: str) -> Path:
    """Copy ``binary`` to ``tmp/<slot>/prog`` (slot names have equal length)."""
    assert len(slot) == 4
    dest = tmp / slot / "prog"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, dest)
    return dest


def instrument(binary: Path, tool: str, tmp: Path, *extra: str, fmt: str = "json", slot: str = "inst") -> Path:
    """Instrument ``binary`` with ``tool`` into ``tmp/<slot>/prog`` (CLI; ``extra`` arguments); returns that path."""
    assert len(slot) == 4
    dest = tmp / slot / "prog"
    dest.parent.mkdir(parents=True, exist_ok=True)

    def make() -> None:
        with loaded_binaries.shared():
            status = anvil_main(["instrument", "--tool", tool, "--format", fmt, str(binary), "-o", str(dest), *extra])
        assert status == 0, f"anvil instrument --tool {tool} failed with {status}"

    image_cache.image(binary.read_bytes(), ["cli", tool, fmt, *extra], dest, make)
    return dest


def anvil_instrument(program: Path, out: Path, *arguments: str) -> Path:
    """``anvil instrument ARGUMENTS PROGRAM -o OUT`` run in this process, as ``instrument``
    runs it: the IR of a program this process loaded before is used again
    (loaded_binaries), a large input's image made once per test run (image_cache). The
    files are those the command writes. Returns OUT."""
    out.parent.mkdir(parents=True, exist_ok=True)

    def make() -> None:
        with loaded_binaries.shared():
            status = anvil_main(["instrument", *arguments, str(program), "-o", str(out)])
        assert status == 0, f"anvil instrument {' '.join(arguments)} {program} failed with {status}"

    image_cache.image(program.read_bytes(), ["cli-as-given", *arguments], out, make)
    return out


def instrument_ir(binary_ir, tool: str, tmp: Path, mode: str = "inhost", slot: str = "inst", fmt: str = "json",
                  **values: str) -> Path:
    """Instrument an already loaded Binary (the API, no CLI) into ``tmp/<slot>/prog``; results
    in ``fmt`` (json or text); ``values``: the tool's options."""
    from rewriter.api import Options
    from rewriter.emit import inhost, rehost
    from rewriter.passes import TOOLS

    emit = rehost.instrument if mode == "rehost" else inhost.instrument
    assert len(slot) == 4
    dest = tmp / slot / "prog"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tool_obj = TOOLS[tool]()
    opts = Options(values=tool_obj.parse_options(values), out=f"prog.{tool}.out", format=fmt)
    request = ["api", tool, mode, *(f"{k}={v}" for k, v in sorted(values.items()))]
    if fmt != "json":
        request.append(fmt)
    image_cache.image(binary_ir.data, request, dest, lambda: emit(binary_ir, tool_obj, opts, str(dest)))
    return dest


def results(run: Run, tool: str) -> dict:
    """The tool's JSON results written by the instrumented program."""
    path = run.cwd / f"prog.{tool}.out"
    assert path.exists(), f"{tool} wrote no results (stderr: {run.stderr[-300:]!r})"
    return json.loads(path.read_text())


def forked_results(directory: Path, tool: str) -> list[bytes]:
    """The results files forked children (and theirs) wrote beside the program's
    (``prog.<tool>.out.<pid>``), sorted by content: pids differ from run to run."""
    return sorted(p.read_bytes() for p in directory.glob(f"prog.{tool}.out.*") if p.suffix[1:].isdigit())


def trace_stores(binary: Path, trace: Path, symbol: str) -> int:
    """memtrace's text trace ``trace``: its stores into ``symbol`` of ``binary`` (built
    without PIE, so the trace's addresses are the symbol table's)."""
    from tests.support.samples import symbol_span

    start, end = symbol_span(binary, symbol)
    stores = 0
    with open(trace) as f:
        for line in f:
            if not line.startswith("#"):
                _, ea, _, kind = line.split()
                stores += kind == "S" and start <= int(ea, 16) < end
    return stores


def assert_same_behaviour(original: Run, instrumented: Run) -> None:
    """Byte-identical stdout and stderr, identical exit status."""
    assert instrumented.returncode == original.returncode
    assert instrumented.stdout == original.stdout
    assert instrumented.stderr == original.stderr


def traced_original(binary: Path, tmp: Path, args: list[str] | tuple[str, ...] = (), stdin: bytes = b""):
    """The original at ``tmp/orig/prog``: its run, qemu's count of each of its executable's
    instructions (link-time PCs, tests/oracles/qemu_trace.py) and its IR."""
    from rewriter.ir.elf_loader import load_binary
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs

    placed = place(binary, tmp, "orig")
    original = run_prog(placed, args, stdin)
    pcs = exe_pcs(trace_pcs(placed, args, stdin, argv0="prog", reuse=True), placed)
    return original, pcs, load_binary(str(binary))


def assert_found_and_counted(program: Path, tool: str, tmp: Path, stdout: bytes,
                             args: list[str] | tuple[str, ...] = ()) -> None:
    """``program`` (a stripped one, as a class of code that discovery once missed) against
    qemu's trace of it: it prints ``stdout``, every instruction qemu runs is one discovery
    found, no procedure is left uninstrumented, the ``tool`` copy behaves as the original
    and, under inscount, counts as qemu does."""
    original, pcs, binary = traced_original(program, tmp, args)
    assert original.stdout == stdout
    found = {ins.address for proc in binary.procedures for ins in proc.instructions()}
    assert not [hex(pc) for pc in pcs if pc not in found]
    image = instrument(program, tool, tmp)
    report = json.loads(Path(f"{image}.anvil.json").read_text())
    assert not report["not_instrumented"], report["not_instrumented"]
    run = run_prog(image, args)
    assert_same_behaviour(original, run)
    if tool == "inscount":
        assert results(run, tool)["total"] == sum(pcs.values())


def traced_function(sample: str, variant: str, function: str, tmp: Path):
    """Sample ``sample`` built as ``variant``, stripped, run and traced (traced_original),
    with ``function``'s part of the trace: its run, its IR, the function's procedure, the
    addresses decoded in it and qemu's count of each of its executed instructions, every
    one of which the descent must have decoded."""
    from tests.support.samples import build, stripped, symbol_span

    built = build(sample, variant)
    lo, hi = symbol_span(built, function)
    program = stripped(built, tmp / "stripped")
    original, pcs, ir = traced_original(program, tmp)
    executed = {pc: n for pc, n in pcs.items() if lo <= pc < hi}
    proc = next(p for p in ir.procedures if p.address == lo)
    decoded = {i.address for i in proc.instructions()}
    missed = sorted(pc for pc in executed if pc not in decoded)
    assert not missed, f"{function} executed but not found: {[hex(pc) for pc in missed]}"
    return program, original, ir, proc, decoded, executed


def assert_descent_found(binary, executed) -> None:
    """Every instruction of the executable that qemu ran (``executed``: link-time PCs,
    tests/oracles/qemu_trace.py) is one of ``binary``'s (its IR) procedures."""
    found = {ins.address for proc in binary.procedures for ins in proc.instructions()}
    missed = sorted(pc for pc in executed if pc not in found)
    assert not missed, f"executed but not found by the descent: {[hex(pc) for pc in missed[:10]]}"


def assert_counts_as_qemu(binary: Path, tmp: Path, output: bytes, *extra: str) -> None:
    """``binary`` (no arguments, no input) prints ``output``, and instrumented with inscount
    (``extra``: instrument's options) behaves the same and counts exactly the instructions
    of the executable that qemu runs."""
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs

    placed = place(binary, tmp, "orig")
    original = run_prog(placed, [])
    assert original.stdout == output
    run = run_prog(instrument(binary, "inscount", tmp, *extra), [])
    assert_same_behaviour(original, run)
    qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog", reuse=True), placed).values())
    assert results(run, "inscount")["total"] == qemu_total


def assert_runs_found(binary: Path, tmp: Path, output: bytes):
    """``binary`` (no arguments, no input) prints ``output``, and every instruction of its
    executable that qemu runs is one the descent found; returns the IR and qemu's counts."""
    from rewriter.ir.elf_loader import load_binary
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs

    placed = place(binary, tmp, "orig")
    trace = trace_pcs(placed, [], b"", argv0="prog", reuse=True)
    assert trace.stdout == output
    executed = exe_pcs(trace, placed)
    ir = load_binary(str(binary))
    assert_descent_found(ir, executed)
    return ir, executed


def run_native(program: Path, args: Sequence[str] = (), timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the x86-64 ``program`` natively in its own directory: no environment, no address
    randomisation (``setarch -R``: the heap and stack where they were in the original's run),
    output captured."""
    return subprocess.run(["setarch", "-R", "env", "-i", str(program), *args], cwd=program.parent,
                          capture_output=True, timeout=timeout)


def assert_native_copies_behave(program: Path, tools: Sequence[str], tmp: Path) -> subprocess.CompletedProcess:
    """Each of ``tools``' copies of the x86-64 ``program`` (``anvil instrument`` into
    ``tmp/<tool>/prog``), run natively in its own directory, prints and exits as the
    original does; returns the original's run."""
    original = subprocess.run([str(program)], capture_output=True, timeout=60)
    for tool in tools:
        copy = tmp / tool / "prog"
        copy.parent.mkdir()
        done = subprocess.run(["anvil", "instrument", "--tool", tool, str(program), "-o", str(copy)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run = subprocess.run([str(copy)], capture_output=True, timeout=60, cwd=copy.parent)
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr), tool
    return original
