"""Measure Anvil's InHost instrumentation of the Cortex-M firmware samples and print a Markdown table.

One row per program and board: every program of ``tests.support.boards.PROGRAMS``
(``samples/boards/<name>.c``) on every board of ``BOARDS`` (``mps2-an385``, Cortex-M3;
``mps2-an386``, Cortex-M4F), built by ``build_firmware`` at ``-O2`` unless ``--opt``
says otherwise.  The table gives the original image's size as a flasher sees it (the
bytes of its PT_LOAD segments, ``p_filesz`` summed: code, vector table and the flash
copy of initialised data) and the median wall time of its run, and for every tool
(``inscount``, ``bbcount``, ``cachesim``, ``inscount:rehost`` and ``cachesim:rehost`` unless
``--tools`` says otherwise; ``T:rehost`` is ReHost over semihosting)

- the image size ratio: instrumented loaded bytes / original loaded bytes;
- the RAM the instrumentation adds: ``p_memsz`` of the read-write PT_LOAD segments
  without file bytes that only the instrumented image has (``.anvil.ram``);
- the rewrite time: wall seconds of ``python3 -m rewriter.cli instrument --tool T IMAGE -o OUT``;
- the slowdown under qemu-system-arm: median wall time of the instrumented run /
  median wall time of the original run.

Every image runs through ``tests.support.boards.run_firmware`` (``qemu-system-arm -M
BOARD ... -kernel IMAGE``, semihosting console and exit status), each in its own
directory, where semihosting writes the tool's results file.  Before the timed runs
each image runs once untimed; an instrumented image whose console output or exit
status differs from the original's gets ``MISMATCH`` in its slowdown cell.  Timed runs
are interleaved (original, then each tool, ``--runs`` times).  A failed rewrite gets
``FAILED: <first line of anvil's stderr>``.  ``--application`` instruments only each
program's own procedures (those whose source file is ``samples/boards/<name>.c``), the
way one looks at an application without its C library.

Progress goes to stderr, the table (with a header line naming the date, the
qemu-system-arm version, the CPU and the command) to stdout, ready to paste into
docs/performance.md; the exit status is 1 if anything failed or mismatched::

    python3 benchmarks/firmware.py                    # everything, -O2, median of 3 runs
    python3 benchmarks/firmware.py --opt -O0 --runs 5
    python3 benchmarks/firmware.py --tools cachesim --only an386
    python3 benchmarks/firmware.py --application --tools inscount:rehost,cachesim:rehost
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from elftools.elf.constants import P_FLAGS  # noqa: E402
from elftools.elf.elffile import ELFFile  # noqa: E402

from benchmarks import run as bench  # noqa: E402  (progress, first_line, escape, cpu_model, anvil_revision)
from tests.support import boards  # noqa: E402  (needs the repo root on sys.path)

DEFAULT_TOOLS: list[str] = ["inscount", "bbcount", "cachesim", "inscount:rehost", "cachesim:rehost"]
#: Limit for one firmware run (the samples take a fraction of a second).
RUN_TIMEOUT = 120.0


@dataclass
class ToolResult:
    """Measurements of one tool on one firmware image."""

    tool: str
    failure: str | None = None
    loaded: int = 0
    ram_added: int = 0
    rewrite_wall: float = 0.0
    results_file: str = ""
    times: list[float] = field(default_factory=list)
    mismatch: str | None = None


@dataclass
class Row:
    """Measurements of one program on one board: the original image and every tool."""

    name: str
    board: str
    failure: str | None = None
    loaded: int = 0
    times: list[float] = field(default_factory=list)
    run_failure: str | None = None
    executed: int | None = None  # instructions the program executed, from inscount's results
    tools: dict[str, ToolResult] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.name}/{self.board}"


def load_segments(image: Path) -> list[tuple[int, int, int, int]]:
    """The PT_LOAD segments of an ELF image as (vaddr, filesz, memsz, flags)."""
    with image.open("rb") as f:
        return [
            (seg["p_vaddr"], seg["p_filesz"], seg["p_memsz"], seg["p_flags"])
            for seg in ELFFile(f).iter_segments()
            if seg["p_type"] == "PT_LOAD"
        ]


def loaded_bytes(segments: Sequence[tuple[int, int, int, int]]) -> int:
    """The bytes a flasher writes: the file sizes of the loaded segments."""
    return sum(filesz for _, filesz, _, _ in segments)


def added_ram(original: Sequence[tuple[int, int, int, int]], instrumented: Sequence[tuple[int, int, int, int]]) -> int:
    """RAM of the read-write, file-less segments the instrumented image has and the original has not."""
    rw = P_FLAGS.PF_R | P_FLAGS.PF_W
    added = [seg for seg in instrumented if seg not in set(original)]
    return sum(memsz for _, filesz, memsz, flags in added if filesz == 0 and flags & (rw | P_FLAGS.PF_X) == rw)


def qemu_system_version() -> str:
    """The version in the first line of ``qemu-system-arm --version``."""
    try:
        proc = subprocess.run([boards.QEMU, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return bench.first_line(proc.stdout, "unknown").removeprefix("QEMU emulator version ").strip()


def header_line(runs: int, opt: str) -> str:
    """One line saying when, where and how the table was produced."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    argv[0] = Path(argv[0]).name
    return (
        f"Measured {now} · anvil {bench.anvil_revision()} · qemu-system-arm {qemu_system_version()} · "
        f"CPU: {bench.cpu_model()} · firmware built with `{opt}` · median of {runs} run{'s' if runs != 1 else ''} · "
        f"command: `{shlex.join(argv)}`"
    )


def _anvil_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))


def run_image(image: Path, board: str, run_dir: Path, rehost: bool = False) -> tuple[float, bytes | None, int | None]:
    """Run a firmware image once in ``run_dir``; return (wall seconds, stdout, status), None twice on a timeout.

    A ReHost image runs through ``anvil run --board`` (a local rehost-server, the bridge
    reading the semihosting pipe), timed until its results are written.
    """
    start = time.perf_counter()
    try:
        if rehost:
            cmd = [sys.executable, "-m", "rewriter.cli", "run", "--board", board, str(image)]
            proc = subprocess.run(cmd, cwd=run_dir, env=_anvil_env(), capture_output=True, timeout=RUN_TIMEOUT)
            stdout, status = proc.stdout, proc.returncode
        else:
            stdout, status = boards.run_firmware(image, board, timeout=RUN_TIMEOUT, cwd=run_dir)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, None, None
    return time.perf_counter() - start, stdout, status


def application_procedures(image: Path, program: str) -> list[str]:
    """The procedures of ``image`` whose first instruction comes from the program's own
    source file ``<program>.c`` (DWARF line table): not the start-up code, not newlib."""
    from rewriter.ir.elf_loader import load_binary

    binary = load_binary(str(image))
    own = f"{program}.c"
    return sorted(p.name for p in binary.procedures
                  if (binary.source_line(p.address) or "").rsplit(":", 1)[0] == own)


def rewrite(tool: str, image: Path, out: Path, original: Sequence[tuple[int, int, int, int]],
            only: Sequence[str] = ()) -> ToolResult:
    """Instrument ``image`` with ``tool`` into ``out`` and measure the result (failures recorded, never raised).
    ``only``: procedure names, each given as ``--only NAME`` (all procedures when empty)."""
    result = ToolResult(tool)
    name, mode = bench.tool_mode(tool)
    cmd = [sys.executable, "-m", "rewriter.cli", "instrument", "--tool", name, str(image), "-o", str(out),
           "--mode", mode, *(word for proc in only for word in ("--only", proc))]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=out.parent, env=_anvil_env(), capture_output=True, text=True, timeout=bench.REWRITE_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        result.failure = f"anvil instrument timed out after {bench.REWRITE_TIMEOUT:.0f} s"
        return result
    result.rewrite_wall = time.perf_counter() - start
    if proc.returncode != 0:
        result.failure = bench.first_line(proc.stderr, f"anvil exited with status {proc.returncode}")
        return result
    try:
        result.results_file = str(json.loads(Path(f"{out}.anvil.json").read_text())["results_file"])
        segments = load_segments(out)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        result.failure = f"unreadable output: {exc}"
        return result
    result.loaded = loaded_bytes(segments)
    result.ram_added = added_ram(original, segments)
    return result


def executed_instructions(results: Path) -> int | None:
    """The total of an inscount text results file (``inscount: N instructions executed``), or None."""
    try:
        words = results.read_text().split()
        return int(words[1]) if words[:1] == ["inscount:"] else None
    except (OSError, ValueError, IndexError):
        return None


def difference(original: tuple[bytes | None, int | None], instrumented: tuple[bytes | None, int | None]) -> str | None:
    """Say how an instrumented run's console output or exit status differs from the original's, or None."""
    stdout, status = instrumented
    if status is None:
        return f"timed out after {RUN_TIMEOUT:.0f} s"
    problems = []
    if status != original[1]:
        problems.append(f"exit {status} instead of {original[1]}")
    if stdout != original[0]:
        problems.append(f"output differs ({len(stdout or b'')} bytes instead of {len(original[0] or b'')})")
    return "; ".join(problems) or None


def measure(name: str, board: str, opt: str, tools: Sequence[str], runs: int, work: Path,
            application: bool = False) -> Row:
    """Build, instrument and run one program on one board; return its row. ``application``:
    instrument only the program's own procedures (``application_procedures``)."""
    row = Row(name, board)
    bench.progress(f"{row.label}: building ({opt})")
    try:
        image = boards.build_firmware(name, board, opt)
        original_segments = load_segments(image)
        only = application_procedures(image, name) if application else []
        if application and not only:
            raise RuntimeError(f"no procedure of {image.name} comes from {name}.c")
    except Exception as exc:  # any build problem becomes a FAILED row
        row.failure = "build: " + bench.first_line(str(exc), type(exc).__name__)
        bench.progress(f"{row.label}: FAILED {row.failure}")
        return row
    row.loaded = loaded_bytes(original_segments)

    original_dir = work / "orig"
    original_dir.mkdir()
    _, *original = run_image(image, board, original_dir)
    if original[1] is None:
        row.run_failure = f"original timed out after {RUN_TIMEOUT:.0f} s"
        bench.progress(f"{row.label}: {row.run_failure}")
        return row

    images: dict[str, tuple[Path, Path]] = {}
    for tool in tools:
        bench.progress(f"{row.label}: anvil instrument --tool {tool}")
        out = work / f"{name}.{tool}.inst"
        result = row.tools[tool] = rewrite(tool, image, out, original_segments, only)
        if result.failure is not None:
            bench.progress(f"{row.label}: {tool} FAILED: {result.failure}")
            continue
        bench.progress(f"{row.label}: {tool} rewritten in {result.rewrite_wall:.1f} s")
        run_dir = work / tool.replace(":", "-")
        run_dir.mkdir()
        _, *instrumented = run_image(out, board, run_dir, bench.tool_mode(tool)[1] == "rehost")
        result.mismatch = difference(original, instrumented)
        if result.mismatch is not None:
            bench.progress(f"{row.label}: {tool} MISMATCH: {result.mismatch}")
        if instrumented[1] is not None:
            images[tool] = (out, run_dir)
        if tool == "inscount" and result.mismatch is None:
            row.executed = executed_instructions(run_dir / result.results_file)

    # Interleaved, so that drift in the machine's speed affects all of them alike.
    for attempt in range(1, runs + 1):
        bench.progress(f"{row.label}: timed run {attempt}/{runs}")
        seconds, _, status = run_image(image, board, original_dir)
        row.times.append(seconds)
        if status != original[1]:
            row.run_failure = f"original exit status varies ({original[1]}, then {status})"
        for tool, (out, run_dir) in images.items():
            result = row.tools[tool]
            seconds, _, status = run_image(out, board, run_dir, bench.tool_mode(tool)[1] == "rehost")
            result.times.append(seconds)
            if status != original[1] and result.mismatch is None:
                result.mismatch = f"exit {status} instead of {original[1]} in a timed run"
    return row


def tool_cells(row: Row, tool: str) -> list[str]:
    """The four cells of one tool in one row: size ratio, added RAM, rewrite s, slowdown."""
    result = row.tools.get(tool)
    if result is None:
        return ["–"] * 4
    if result.failure is not None:
        return [bench.escape(f"FAILED: {result.failure}"), "–", "–", "–"]
    ratio = f"{result.loaded / row.loaded:.2f}×" if row.loaded else "–"
    slowdown = "–"
    if result.times and row.times:
        slowdown = f"{statistics.median(result.times) / statistics.median(row.times):.2f}×"
    if result.mismatch is not None:
        slowdown = "MISMATCH" if slowdown == "–" else f"MISMATCH ({slowdown})"
    return [ratio, f"{result.ram_added:,}", f"{result.rewrite_wall:.1f}", slowdown]


def table(rows: Sequence[Row], tools: Sequence[str]) -> list[str]:
    """The Markdown table, one line per element."""
    header = ["program/board", "image (B)", "orig run (s)"]
    for tool in tools:
        header += [f"{tool} size ×", f"{tool} RAM + (B)", f"{tool} rewrite (s)", f"{tool} slowdown"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for row in rows:
        if row.failure is not None:
            cells = [row.label, bench.escape(f"FAILED: {row.failure}"), "–"]
        else:
            cells = [row.label, f"{row.loaded:,}", f"{statistics.median(row.times):.3f}" if row.times else "–"]
        lines.append("| " + " | ".join(cells + [c for tool in tools for c in tool_cells(row, tool)]) + " |")
    return lines


def notes(rows: Sequence[Row], tools: Sequence[str], runs: int) -> list[str]:
    """Footnotes: how the figures were obtained, what they mean and anything that went wrong."""
    executed = [row.executed for row in rows if row.executed is not None]
    counts = ""
    if executed:
        span = f"{min(executed):,}" + (f" to {max(executed):,}" if max(executed) != min(executed) else "")
        counts = f" (inscount: {span})"
    lines = [
        "Image (B) and size × count the bytes a flasher writes (`p_filesz` of the PT_LOAD segments: vector "
        "table, code, initialised data), not the ELF file; RAM + is the `.anvil.ram` segment the instrumented "
        "image adds (the analysis library's data, counters and tables), placed between the heap and the stack. "
        "Rewrite (s) is the wall time of `python3 -m rewriter.cli instrument --tool T IMAGE -o OUT`.",
        f"Times are medians of {runs} wall-clock runs of `qemu-system-arm -M BOARD -nographic -monitor none "
        "-serial none -no-reboot -semihosting-config enable=on,target=native -kernel IMAGE`; slowdown = "
        f"instrumented / original. The firmware programs run at most a few hundred thousand instructions{counts}, "
        "so QEMU's start-up (machine set-up, loading the image) dominates the wall time: the slowdown column is a "
        "rough, upper-bound-ish indicator of the instrumentation's cost, not a throughput measure.",
        "`T:rehost` = ReHost over semihosting, run with `anvil run --board` (a local rehost-server started "
        "per run, records through the semihosting pipe), timed until its results are written: Python and "
        "gRPC start-up dominate that column.",
    ]
    for row in rows:
        if row.run_failure is not None:
            lines.append(f"{row.label}: {row.run_failure}.")
        for tool in tools:
            result = row.tools.get(tool)
            if result is not None and result.mismatch is not None:
                lines.append(f"{row.label}, {tool}: MISMATCH: {result.mismatch}.")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = bench.benchmark_parser(__doc__.splitlines()[0], DEFAULT_TOOLS, "image")
    parser.add_argument("--opt", default="-O2", choices=boards.OPT_LEVELS, help="optimisation level (default -O2)")
    parser.add_argument("--application", action="store_true",
                        help="instrument only each program's own procedures (source file samples/boards/NAME.c, "
                             "by DWARF), not the start-up code and newlib")
    return bench.checked_args(parser, argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table; exit status 1 if anything failed or mismatched."""
    args = parse_args(argv)
    chosen = [(n, b) for n in boards.PROGRAMS for b in boards.BOARDS if args.only is None or args.only in f"{n}/{b}"]
    if not chosen:
        print(f"no program/board contains {args.only!r}", file=sys.stderr)
        return 2
    header = header_line(args.runs, args.opt)
    work_root = Path(tempfile.mkdtemp(prefix="anvil-fw-bench."))
    rows: list[Row] = []
    started = time.monotonic()
    try:
        for index, (name, board) in enumerate(chosen):
            work = work_root / f"w{index:02d}"
            work.mkdir()
            rows.append(measure(name, board, args.opt, args.tools, args.runs, work, args.application))
    finally:
        if args.keep:
            bench.progress(f"working directory kept: {work_root}")
        else:
            shutil.rmtree(work_root, ignore_errors=True)
    bench.progress(f"done in {time.monotonic() - started:.0f} s")

    return bench.print_report(header, table(rows, args.tools), notes(rows, args.tools, args.runs), rows)


if __name__ == "__main__":
    sys.exit(main())
