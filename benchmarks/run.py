"""Measure Anvil's InHost instrumentation and print the results as a Markdown table.

One row per workload: the samples ``sort``, ``hash`` and ``matrix`` in the variants
``O2-thumb-dyn`` and ``Os-thumb-static``, and the Lua interpreter running
``samples/lua/bench.lua`` (0.1 s: start-up weighs in) and ``samples/lua/heavy.lua``
(about 1 s under qemu-arm: the row that measures the instrumentation).  For every
tool (``inscount`` and ``cachesim`` InHost and ReHost unless ``--tools`` says
otherwise; ``T:rehost`` is tool T with ``--mode rehost``) the table gives

- the size ratio: instrumented file size / original file size;
- the rewrite time: wall seconds of ``anvil instrument --tool T BIN -o OUT``;
- the rewrite throughput: ``instructions / rewrite_seconds`` from ``OUT.anvil.json``
  (the rewriter's own clock: loading, disassembly, rewriting and writing, not Python's start-up);
- the slowdown under qemu-arm: median wall time of the instrumented run / median
  wall time of the original run.

Both programs run the same way: copied as ``prog`` into directories whose paths have
the same length, started there as ``env -i qemu-arm -L /usr/arm-linux-gnueabihf -0
prog ./prog [args]`` with stdout and stderr to /dev/null.  Before the timed runs each
program runs once untimed with its output captured; an instrumented program whose
stdout or exit status differs from the original's gets ``MISMATCH`` in its slowdown
cell.  ReHost programs run the same way through the bridge of ``anvil run``
(in-process here, so Python's start-up is not counted) to one ``anvil rehost-server``
process with the C analysis; their time runs until the server's results are back.
A failed rewrite gets ``FAILED: <first line of anvil's stderr>``.

``--host-instructions`` adds what the wall clock of a shared machine cannot give: the
host instructions qemu-arm executes for one run of the original and of each InHost tool
(valgrind's count, steady from run to run), and each tool's as a multiple of the
original's.

Progress goes to stderr, the table (with a header line naming the date, qemu-arm
version, CPU and the command) to stdout, ready to paste into docs/performance.md::

    python3 benchmarks/run.py                      # everything, median of 3 runs
    python3 benchmarks/run.py --runs 5 --only lua  # only the Lua interpreter
    python3 benchmarks/run.py --tools inscount --only static
    python3 benchmarks/run.py --only bench.lua --tools inscount,cachesim --host-instructions
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.support import samples  # noqa: E402  (needs the repo root on sys.path)

SAMPLE_NAMES: list[str] = ["sort", "hash", "matrix"]
SAMPLE_VARIANTS: list[str] = ["O2-thumb-dyn", "Os-thumb-static"]
DEFAULT_TOOLS: list[str] = ["inscount", "cachesim", "inscount:rehost", "cachesim:rehost"]
QEMU_SYSROOT = "/usr/arm-linux-gnueabihf"

#: Original runs shorter than this are dominated by qemu start-up; the notes say so.
SHORT_RUN_SECONDS = 0.2
#: Limits for one ``anvil instrument`` and for one program run.
REWRITE_TIMEOUT = 900.0
RUN_TIMEOUT = 300.0


@dataclass
class Workload:
    """A program to measure: how to build it and the arguments to run it with."""

    name: str
    build: Callable[[], Path]
    args: list[str]
    expected_status: int = 0


@dataclass
class RunOutcome:
    """What one untimed check run printed and how it exited (None: timed out)."""

    stdout: bytes
    stderr: bytes
    returncode: int | None


@dataclass
class ToolResult:
    """Measurements of one tool on one workload."""

    tool: str
    failure: str | None = None
    output_size: int = 0
    rewrite_wall: float = 0.0
    instructions: int = 0
    rewrite_seconds: float = 0.0
    times: list[float] = field(default_factory=list)
    mismatch: str | None = None
    run_failure: str | None = None
    host_instructions: int | None = None  # --host-instructions: what qemu-arm executed (valgrind)


@dataclass
class Row:
    """Measurements of one workload: the original program and every tool."""

    workload: str
    failure: str | None = None
    size: int = 0
    times: list[float] = field(default_factory=list)
    run_failure: str | None = None
    tools: dict[str, ToolResult] = field(default_factory=dict)
    host_instructions: int | None = None  # --host-instructions: the original's


def progress(message: str) -> None:
    """Print a timestamped progress line to stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def workloads() -> list[Workload]:
    """Return every workload, in table order."""
    result: list[Workload] = []
    for name in SAMPLE_NAMES:
        for variant in SAMPLE_VARIANTS:
            result.append(
                Workload(
                    name=f"{name}/{variant}",
                    build=lambda name=name, variant=variant: samples.build(name, variant),
                    args=[],
                    expected_status=samples.EXPECTED_STATUS.get(name, 0),
                )
            )
    result.append(Workload(name="lua/bench.lua", build=samples.build_lua, args=[str(samples.LUA_BENCH)]))
    result.append(Workload(name="lua/heavy.lua", build=samples.build_lua, args=[str(samples.LUA_HEAVY)]))
    return result


def first_line(text: str, fallback: str) -> str:
    """The first non-empty line of ``text`` (the last one for a Python traceback), or ``fallback``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return fallback
    if lines[0].startswith("Traceback"):
        return lines[-1]
    return lines[0]


def anvil_command() -> list[str]:
    """The command that starts the ``anvil`` CLI (the installed script, else the module)."""
    found = shutil.which("anvil")
    if found is not None:
        return [found]
    return [sys.executable, "-c", "from rewriter.cli import console; console()"]


def qemu_command(args: Sequence[str], under: Sequence[str] = ()) -> list[str]:
    """The command line that runs ``./prog`` with ``args`` under qemu-arm, environment emptied;
    ``under``: a program that runs qemu-arm (valgrind), which is then named by its path (the
    emptied environment has no PATH to find it by)."""
    qemu = (shutil.which("qemu-arm") or "qemu-arm") if under else "qemu-arm"
    return ["env", "-i", *under, qemu, "-L", QEMU_SYSROOT, "-0", "prog", "./prog", *args]


def place(binary: Path, run_dir: Path) -> Path:
    """Copy ``binary`` to ``run_dir/prog`` (creating the directory) and return that path."""
    run_dir.mkdir(parents=True, exist_ok=True)
    dest = run_dir / "prog"
    shutil.copy2(binary, dest)
    return dest


def check_run(run_dir: Path, args: Sequence[str]) -> RunOutcome:
    """Run ``run_dir/prog`` once, untimed, capturing what it prints (also warms the caches)."""
    if (run_dir / "prog.sites.json").exists():
        assert REHOST is not None
        return REHOST.run(run_dir, args)[1]
    try:
        proc = subprocess.run(qemu_command(args), cwd=run_dir, capture_output=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return RunOutcome(b"", b"", None)
    return RunOutcome(proc.stdout, proc.stderr, proc.returncode)


class RehostRunner:
    """Runs ReHost programs through the bridge to one rehost-server process (C analysis)."""

    def __init__(self) -> None:
        from tests.support.rehost import ServerProcess

        self.server = ServerProcess()

    def run(self, run_dir: Path, args: Sequence[str]) -> tuple[float, RunOutcome]:
        from rehost import bridge
        from rehost.sitetable import parse

        document = (run_dir / "prog.sites.json").read_bytes()
        channel = bridge.connect(self.server.address)
        cmd = qemu_command(args)[2:]  # without "env -i": the bridge passes an empty environment itself
        start = time.perf_counter()
        try:
            outcome = bridge.run(cmd, channel, parse(document).tool, document, "prog", env={}, cwd=str(run_dir),
                                 stdin=b"")
        finally:
            channel.close()
        seconds = time.perf_counter() - start
        ok = outcome.summary is not None and outcome.summary.complete and not outcome.error
        stderr = outcome.stderr + (b"" if ok else f"rehost: {outcome.error or 'incomplete'}".encode())
        return seconds, RunOutcome(outcome.stdout, stderr, outcome.returncode if ok else -1)

    def stop(self) -> None:
        self.server.stop()


REHOST: RehostRunner | None = None  # started by main() when a ReHost tool is measured


def tool_mode(spec: str) -> tuple[str, str]:
    """'cachesim:rehost' -> ('cachesim', 'rehost'); 'inscount' -> ('inscount', 'inhost')."""
    tool, _, mode = spec.partition(":")
    return tool, mode or "inhost"


def timed_run(run_dir: Path, args: Sequence[str]) -> tuple[float, int | None]:
    """Run ``run_dir/prog`` once with output to /dev/null; return (wall seconds, exit status or None)."""
    if (run_dir / "prog.sites.json").exists():
        assert REHOST is not None
        seconds, outcome = REHOST.run(run_dir, args)
        return seconds, outcome.returncode
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            qemu_command(args),
            cwd=run_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=RUN_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, None
    return time.perf_counter() - start, proc.returncode


# Host instructions qemu-arm executes (``--host-instructions``): valgrind's count, steady
# from run to run where wall-clock time on a shared machine is not. Self-modifying code
# checks on: qemu writes the code it runs.
VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--smc-check=all", "--cachegrind-out-file=/dev/null"]
_I_REFS = re.compile(r"I\s+refs:\s+([0-9,]+)")


def host_instructions(run_dir: Path, args: Sequence[str]) -> int | None:
    """The host instructions qemu-arm executes running ``run_dir/prog`` (under valgrind, the
    same way as timed_run otherwise); None if valgrind fails or says nothing."""
    cmd = qemu_command(args, under=VALGRIND)
    try:
        proc = subprocess.run(cmd, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT * 20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _I_REFS.search(proc.stderr)
    return int(found.group(1).replace(",", "")) if found else None


def describe_difference(original: RunOutcome, instrumented: RunOutcome) -> str | None:
    """Say how an instrumented run's stdout or exit status differs from the original's, or None."""
    if instrumented.returncode is None:
        return f"timed out after {RUN_TIMEOUT:.0f} s"
    problems = []
    if instrumented.returncode != original.returncode:
        problems.append(f"exit {instrumented.returncode} instead of {original.returncode}")
    if instrumented.stdout != original.stdout:
        problems.append(f"stdout differs ({len(instrumented.stdout)} bytes instead of {len(original.stdout)})")
    if not problems:
        return None
    stderr = instrumented.stderr.decode(errors="replace").strip()
    if stderr:
        problems.append(f"stderr: {first_line(stderr, '')[:120]}")
    return "; ".join(problems)


def rewrite(tool: str, binary: Path, out: Path, result: ToolResult) -> None:
    """Instrument ``binary`` with ``tool`` into ``out``, filling in the rewrite figures of ``result``."""
    name, mode = tool_mode(tool)
    cmd = [*anvil_command(), "instrument", "--tool", name, "--mode", mode, str(binary), "-o", str(out)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=out.parent, capture_output=True, text=True, timeout=REWRITE_TIMEOUT)
    except subprocess.TimeoutExpired:
        result.failure = f"anvil instrument timed out after {REWRITE_TIMEOUT:.0f} s"
        return
    result.rewrite_wall = time.perf_counter() - start
    if proc.returncode != 0:
        result.failure = first_line(proc.stderr, f"anvil exited with status {proc.returncode}")
        return
    report_path = Path(str(out) + ".anvil.json")
    try:
        report = json.loads(report_path.read_text())
        result.instructions = int(report["instructions"])
        result.rewrite_seconds = float(report["rewrite_seconds"])
        result.output_size = out.stat().st_size
    except (OSError, ValueError, KeyError, TypeError) as exc:
        result.failure = f"unreadable {report_path.name}: {exc}"


def measure(workload: Workload, tools: Sequence[str], runs: int, work: Path, count_host: bool = False) -> Row:
    """Build, instrument and run one workload; return its row (failures recorded, never raised).
    ``count_host``: also count the host instructions of the original and the InHost tools."""
    row = Row(workload.name)
    progress(f"{workload.name}: building")
    try:
        binary = workload.build()
    except Exception as exc:  # any build problem becomes a FAILED row
        row.failure = "build: " + first_line(str(exc), type(exc).__name__)
        progress(f"{workload.name}: FAILED {row.failure}")
        return row
    row.size = binary.stat().st_size

    # Run directories of equal path length, so argv, AT_EXECFN and the stack look alike.
    original_dir = work / "run0"
    place(binary, original_dir)
    original = check_run(original_dir, workload.args)
    if original.returncode is None:
        row.run_failure = f"original timed out after {RUN_TIMEOUT:.0f} s"
        progress(f"{workload.name}: {row.run_failure}")
    elif original.returncode != workload.expected_status:
        row.run_failure = f"original exited {original.returncode}, expected {workload.expected_status}"
        progress(f"{workload.name}: {row.run_failure}")

    tool_dirs: dict[str, Path] = {}
    for index, tool in enumerate(tools, start=1):
        result = ToolResult(tool)
        row.tools[tool] = result
        progress(f"{workload.name}: anvil instrument --tool {tool}")
        rewrite(tool, binary, work / f"{tool}.inst", result)
        if result.failure is not None:
            progress(f"{workload.name}: {tool} FAILED: {result.failure}")
            continue
        progress(
            f"{workload.name}: {tool} rewritten in {result.rewrite_wall:.1f} s wall "
            f"({result.instructions} instructions in {result.rewrite_seconds:.2f} s by the report)"
        )
        run_dir = work / f"run{index}"
        place(work / f"{tool}.inst", run_dir)
        if tool_mode(tool)[1] == "rehost":
            shutil.copy2(work / f"{tool}.inst.sites.json", run_dir / "prog.sites.json")
        instrumented = check_run(run_dir, workload.args)
        result.mismatch = describe_difference(original, instrumented)
        if result.mismatch is not None:
            progress(f"{workload.name}: {tool} MISMATCH: {result.mismatch}")
        if instrumented.returncode is None:
            result.run_failure = result.mismatch
            continue
        tool_dirs[tool] = run_dir

    if original.returncode is None:
        return row
    # Timed runs, interleaved (original, then each tool) so that drift in the machine's
    # speed affects all of them alike.
    for attempt in range(1, runs + 1):
        progress(f"{workload.name}: timed run {attempt}/{runs}")
        seconds, status = timed_run(original_dir, workload.args)
        row.times.append(seconds)
        if status != original.returncode:
            row.run_failure = f"original exit status varies ({original.returncode}, then {status})"
        for tool, run_dir in tool_dirs.items():
            result = row.tools[tool]
            seconds, status = timed_run(run_dir, workload.args)
            result.times.append(seconds)
            if status != original.returncode and result.mismatch is None:
                result.mismatch = f"exit {status} instead of {original.returncode} in a timed run"
    if count_host:
        progress(f"{workload.name}: host instructions (valgrind)")
        row.host_instructions = host_instructions(original_dir, workload.args)
        for tool, run_dir in tool_dirs.items():
            if tool_mode(tool)[1] == "inhost":  # a ReHost run is the bridge's, in this process
                row.tools[tool].host_instructions = host_instructions(run_dir, workload.args)
    return row


def escape(text: str) -> str:
    """Make ``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def tool_cells(row: Row, tool: str, counted: bool = False) -> list[str]:
    """The cells of one tool in one row: size ratio, rewrite s, throughput, slowdown, and with
    ``counted`` (--host-instructions) the host instructions as a multiple of the original's."""
    result = row.tools.get(tool)
    if row.failure is not None or result is None:
        return ["–"] * (5 if counted else 4)
    if result.failure is not None:
        return [escape(f"FAILED: {result.failure}")] + ["–"] * (4 if counted else 3)
    ratio = f"{result.output_size / row.size:.2f}×" if row.size else "–"
    rewrite_s = f"{result.rewrite_wall:.1f}"
    throughput = f"{result.instructions / result.rewrite_seconds:,.0f}" if result.rewrite_seconds > 0 else "–"
    if result.times and row.times:
        slowdown = f"{statistics.median(result.times) / statistics.median(row.times):.2f}×"
    else:
        slowdown = "–"
    if result.mismatch is not None:
        slowdown = f"MISMATCH ({slowdown})" if slowdown != "–" else "MISMATCH"
    cells = [ratio, rewrite_s, throughput, slowdown]
    if counted:
        known = row.host_instructions and result.host_instructions
        cells.append(f"{result.host_instructions / row.host_instructions:.2f}×" if known else "–")
    return cells


def table(rows: Sequence[Row], tools: Sequence[str]) -> list[str]:
    """The Markdown table, one line per element."""
    counted = any(row.host_instructions is not None for row in rows)
    header = ["workload", "size (B)", "orig run (s)"] + (["orig host insn"] if counted else [])
    for tool in tools:
        header += [f"{tool} size ×", f"{tool} rewrite (s)", f"{tool} insn/s", f"{tool} slowdown"]
        header += [f"{tool} host insn ×"] if counted else []
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for row in rows:
        if row.failure is not None:
            cells = [escape(row.workload), escape(f"FAILED: {row.failure}"), "–"] + (["–"] if counted else [])
        else:
            orig = f"{statistics.median(row.times):.3f}" if row.times else "–"
            cells = [escape(row.workload), f"{row.size:,}", orig]
            if counted:
                cells.append(f"{row.host_instructions:,}" if row.host_instructions else "–")
        for tool in tools:
            cells += tool_cells(row, tool, counted)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def notes(rows: Sequence[Row], tools: Sequence[str], runs: int) -> list[str]:
    """Footnotes: how the figures were obtained and anything that went wrong."""
    lines = [
        f"Times are medians of {runs} wall-clock runs under qemu-arm (`env -i qemu-arm -L {QEMU_SYSROOT} "
        "-0 prog ./prog [args]`, output to /dev/null); slowdown = instrumented / original. "
        "Rewrite (s) is the wall time of `anvil instrument`; insn/s = `instructions / rewrite_seconds` "
        "from its `.anvil.json` report (loading, decoding, rewriting and writing the ELF)."
    ]
    if any(row.host_instructions is not None for row in rows):
        lines.append(
            "Host insn: the instructions qemu-arm executes on the host for one run (`" + " ".join(VALGRIND)
            + "`, InHost tools only), and each tool's as a multiple of the original's: steady from run to run."
        )
    short = [row.workload for row in rows if row.times and statistics.median(row.times) < SHORT_RUN_SECONDS]
    if short:
        lines.append(
            f"Original runs under {SHORT_RUN_SECONDS} s ({', '.join(short)}): qemu start-up dominates, "
            "so their slowdowns understate the cost of the instrumentation and are noisy."
        )
    for row in rows:
        if row.run_failure is not None:
            lines.append(f"{row.workload}: {row.run_failure}.")
        for tool in tools:
            result = row.tools.get(tool)
            if result is not None and result.mismatch is not None:
                lines.append(f"{row.workload}, {tool}: MISMATCH: {result.mismatch}.")
    return lines


def qemu_version() -> str:
    """The first line of ``qemu-arm --version``, without the program name."""
    try:
        proc = subprocess.run(["qemu-arm", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    line = first_line(proc.stdout, "unknown")
    return line.removeprefix("qemu-arm version ").strip()


def cpu_model() -> str:
    """The host CPU's model name (from /proc/cpuinfo, else lscpu, else platform) and core count."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "Model") and value.strip():
                model = value.strip()
                break
    except OSError:
        pass
    if not model:
        try:
            proc = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30)
            for line in proc.stdout.splitlines():
                key, _, value = line.partition(":")
                if key.strip() == "Model name" and value.strip():
                    model = value.strip()
                    break
        except (OSError, subprocess.TimeoutExpired):
            pass
    model = model or platform.processor() or platform.machine() or "unknown"
    return f"{model} ({os.cpu_count()} cores)"


def anvil_revision() -> str:
    """The repository's short commit hash, with ``+dirty`` when the work tree has changes;
    outside a git checkout (an unpacked release), the package's version."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        commit = dirty = ""
    if not commit:
        return _package_version()
    return commit + ("+dirty" if dirty else "")


def _package_version() -> str:
    """The installed anvil package's version, else the one pyproject.toml names."""
    try:
        return "version " + importlib.metadata.version("anvil-rewriter")
    except importlib.metadata.PackageNotFoundError:
        found = re.search(r'^version\s*=\s*"([^"]+)"', (REPO_ROOT / "pyproject.toml").read_text(), re.M)
        return "version " + found.group(1) if found else "unknown"


def header_line(runs: int) -> str:
    """One line saying when, where and how the table was produced."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    argv[0] = Path(argv[0]).name  # "python3", not the interpreter's full path behind a pyenv/venv shim
    command = shlex.join(argv)
    return (
        f"Measured {now} · anvil {anvil_revision()} · qemu-arm {qemu_version()} · "
        f"CPU: {cpu_model()} · median of {runs} run{'s' if runs != 1 else ''} · command: `{command}`"
    )


def print_report(header: str, table_lines: Sequence[str], note_lines: Sequence[str], rows: Sequence) -> int:
    """Print the header, table and notes; exit status 1 if any row failed or mismatched."""
    print(header)
    print()
    print("\n".join(table_lines))
    print()
    print("\n\n".join(note_lines))
    bad = any(
        row.failure or row.run_failure or any(r.failure or r.mismatch for r in row.tools.values()) for row in rows
    )
    return 1 if bad else 0


def benchmark_parser(description: str, default_tools: Sequence[str], runs_of: str) -> argparse.ArgumentParser:
    """The options every benchmark script takes: --runs, --only, --tools, --keep."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=3, metavar="N", help=f"timed runs per {runs_of} (default 3)")
    parser.add_argument("--only", metavar="NAME", help="only rows whose name contains NAME")
    parser.add_argument(
        "--tools",
        default=",".join(default_tools),
        metavar="T1,T2",
        help=f"comma-separated tools (default {','.join(default_tools)})",
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directory (path printed to stderr)")
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = benchmark_parser(__doc__.splitlines()[0], DEFAULT_TOOLS, "program")
    parser.add_argument("--host-instructions", action="store_true",
                        help="also count the host instructions qemu-arm executes (valgrind; slow: "
                             "about 30 s per run of bench.lua)")
    return parser


def checked_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv`` with a benchmark_parser; --tools becomes a list."""
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    args.tools = [tool.strip() for tool in args.tools.split(",") if tool.strip()]
    if not args.tools:
        parser.error("--tools names no tool")
    return args


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    args = checked_args(_parser(), argv)
    if args.host_instructions and shutil.which("valgrind") is None:
        _parser().error("--host-instructions needs valgrind (apt-get install valgrind)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table; exit status 1 if anything failed or mismatched."""
    args = parse_args(argv)
    chosen = [w for w in workloads() if args.only is None or args.only in w.name]
    if not chosen:
        print(f"no workload name contains {args.only!r}", file=sys.stderr)
        return 2
    header = header_line(args.runs)
    work_root = Path(tempfile.mkdtemp(prefix="anvil-bench."))
    rows: list[Row] = []
    started = time.monotonic()
    global REHOST
    if any(tool_mode(t)[1] == "rehost" for t in args.tools):
        REHOST = RehostRunner()
    try:
        for index, workload in enumerate(chosen):
            work = work_root / f"w{index:02d}"
            work.mkdir()
            rows.append(measure(workload, args.tools, args.runs, work, args.host_instructions))
    finally:
        if REHOST is not None:
            REHOST.stop()
        if args.keep:
            progress(f"working directory kept: {work_root}")
        else:
            shutil.rmtree(work_root, ignore_errors=True)
    progress(f"done in {time.monotonic() - started:.0f} s")

    return print_report(header, table(rows, args.tools), notes(rows, args.tools, args.runs), rows)


if __name__ == "__main__":
    sys.exit(main())
