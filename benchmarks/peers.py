"""Set Anvil beside QEMU's own TCG plugins, in one run on the same emulator, and print a Markdown table.

One row per workload, one column per way of running it, each cell the median wall time
of ``--runs`` runs over the original's median (the original's own column is in seconds):

- **QEMU's plugins**, built from Debian's source of the installed qemu
  (``benchmarks/qemu_plugins.py``): ``insn`` (instruction count, ``inline=on``), ``bb``
  (block count, ``inline=on``), ``mem`` (a callback per memory access, ``callback=on``),
  ``cache`` (``contrib/plugins/cache.c``, its default caches), each given to QEMU as
  ``-plugin LIB,ARGS -d plugin -D LOG``;
- **Anvil's tools** (``inscount``, ``bbcount``, ``cachesim``), InHost and ReHost
  (``T:rehost``: records through the real bridge to one ``anvil rehost-server`` process
  with the C analysis, started once; a run is timed until the server's results are back).

Workloads of 0.5-3 s originals, so that QEMU's start-up does not hide the cost:

- firmware: ``samples/boards/crc.c`` and ``sort.c`` built with ``-DREPEAT=5000`` (``-O2``),
  crc for mps2-an385 (Cortex-M3) and sort for mps2-an386 (Cortex-M4F) by default (``--all``:
  both programs on both boards), run under ``qemu-system-arm``
  (``tests.support.boards.run_firmware``'s command line);
- Linux, under ``qemu-arm``: the same ``crc.c`` kernel built static for armhf
  (``-O2 -mthumb -static``, glibc), and Debian's Lua (``samples/lua_driver.c`` linked with
  Debian's ``liblua5.4.a``) running ``samples/lua/heavy.lua``.

Every variant runs once untimed first: its console output and exit status must equal the
original's (else ``MISMATCH``), and the counts are read: QEMU's ``insn`` plugin's total
beside Anvil inscount's (InHost results file), which must agree on a firmware image
(both count every instruction the core executes). Timed runs are interleaved (original,
then every variant, ``--runs`` times) so that a loaded machine slows all alike; the load
average before and after goes into the notes.

Progress to stderr, the report (header line, table, notes) to stdout::

    python3 benchmarks/peers.py                          # everything, median of 3 runs
    python3 benchmarks/peers.py --only an385,lua --runs 5   # rows whose name has one of these
    python3 benchmarks/peers.py --only lua --tools inscount,cachesim --plugins insn,cache
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import firmware, qemu_plugins  # noqa: E402
from benchmarks import run as bench  # noqa: E402
from tests.support import boards, build_cache, samples  # noqa: E402

#: QEMU plugin -> the arguments it gets (``-plugin libNAME.so,ARGS``).
PLUGIN_ARGS: dict[str, str] = {"insn": "inline=on", "bb": "inline=on", "mem": "callback=on", "cache": ""}
DEFAULT_PLUGINS: list[str] = list(PLUGIN_ARGS)
DEFAULT_TOOLS: list[str] = ["inscount", "inscount:rehost", "bbcount", "bbcount:rehost", "cachesim",
                            "cachesim:rehost"]
#: Rounds of the firmware kernels (and of the Linux crc): 0.5-0.6 s under QEMU on a loaded 2-core EPYC.
REPEAT = 5000
#: The firmware rows run by default (``--all``: every program on every board).
DEFAULT_FIRMWARE: tuple[str, ...] = ("crc/mps2-an385", "sort/mps2-an386")
LINUX_KERNEL_FLAGS: list[str] = ["-O2", "-mthumb", "-static"]
RUN_TIMEOUT = 600.0
_INSNS = re.compile(r"^insns: (\d+)", re.MULTILINE)
_INSCOUNT = re.compile(r"^inscount: (\d+)", re.MULTILINE)


@dataclass
class Workload:
    """A program to measure: on a board (``board``) or under qemu-arm (``board`` None)."""

    name: str
    build: Callable[[], Path]
    board: str | None = None
    args: list[str] = field(default_factory=list)


@dataclass
class Column:
    """One way of running a workload and what it measured."""

    label: str
    plugin: str | None = None  # a QEMU plugin's name
    tool: str | None = None  # an Anvil tool spec, "T" or "T:rehost"
    failure: str | None = None
    mismatch: str | None = None
    count: int | None = None  # instructions counted (insn plugin, inscount InHost)
    times: list[float] = field(default_factory=list)
    program: Path | None = None
    run_dir: Path | None = None
    results_file: str = ""

    @property
    def rehost(self) -> bool:
        return self.tool is not None and bench.tool_mode(self.tool)[1] == "rehost"


@dataclass
class Row:
    """One workload and its columns (the first is the original)."""

    workload: Workload
    columns: list[Column]
    failure: str | None = None

    @property
    def run_failure(self) -> str | None:  # for bench.print_report
        return None

    @property
    def tools(self) -> dict[str, Column]:  # for bench.print_report: failures and mismatches
        return {c.label: c for c in self.columns}


def build_linux_kernel(name: str) -> Path:
    """``samples/boards/<name>.c`` built for armhf Linux with ``-DREPEAT`` (cached)."""
    source = boards.BOARDS_DIR / f"{name}.c"
    cc = build_cache.require_tool(samples.CC, samples.SampleBuildError, "run scripts/bootstrap.sh")
    flags = [*LINUX_KERNEL_FLAGS, f"-DREPEAT={REPEAT}u"]
    key = build_cache.cache_key("peers-1", build_cache.compiler_identity(cc), source.read_bytes(), "\0".join(flags))
    out = samples.cache_dir() / f"{name}-linux-repeat-{key}"
    if out.is_file():
        return out
    return build_cache.compile_to([cc, *flags], [str(source)], out, samples.SampleBuildError, 0o755)


def workloads(every_board: bool = False) -> list[Workload]:
    """The workloads, in table order; ``every_board``: each firmware program on every board."""
    result = [
        Workload(f"{name}/{board}", lambda name=name, board=board: boards.build_firmware(
            name, board, "-O2", [f"-DREPEAT={REPEAT}u"]), board=board)
        for name in ("crc", "sort") for board in boards.BOARDS
        if every_board or f"{name}/{board}" in DEFAULT_FIRMWARE
    ]
    result.append(Workload("crc/linux", lambda: build_linux_kernel("crc")))
    result.append(Workload("lua heavy.lua/linux", samples.build_lua, args=[str(samples.LUA_HEAVY)]))
    return result


def plugin_options(column: Column, plugins: dict[str, Path]) -> list[str]:
    """The qemu options that load a column's plugin, its output logged to ``plugin.log``."""
    if column.plugin is None:
        return []
    args = PLUGIN_ARGS[column.plugin]
    spec = str(plugins[column.plugin]) + (f",{args}" if args else "")
    assert column.run_dir is not None
    return ["-plugin", spec, "-d", "plugin", "-D", str(column.run_dir / "plugin.log")]


@contextlib.contextmanager
def _captured_stdio(run_dir: Path) -> Iterator[list[bytes]]:
    """Point fds 1 and 2 at files in ``run_dir`` (the bridge's emulator shares ours) and
    chdir there (semihosting opens the records' pipe relative to it); yields a list that
    receives stdout's bytes when done."""
    got: list[bytes] = []
    saved = [os.dup(1), os.dup(2)]
    old_cwd = os.getcwd()
    sys.stdout.flush()
    sys.stderr.flush()
    out_path, err_path = run_dir / "console.out", run_dir / "console.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        os.chdir(run_dir)
        try:
            yield got
        finally:
            os.chdir(old_cwd)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
    got.append(out_path.read_bytes())


class Runner:
    """Runs every column of a workload; one rehost-server for all ReHost columns."""

    def __init__(self, plugins: dict[str, Path]) -> None:
        self.plugins = plugins
        self.server = None

    def run(self, workload: Workload, column: Column) -> tuple[float, bytes | None, int | None]:
        """Run a column once: (wall seconds, stdout, exit status); None twice on a timeout or a lost ReHost run."""
        assert column.program is not None and column.run_dir is not None
        options = plugin_options(column, self.plugins)
        if workload.board is not None:
            cmd = [*boards.qemu_command(column.program, workload.board), *options]
        else:
            cmd = ["env", "-i", "qemu-arm", *options, "-L", samples.SYSROOT, "-0", "prog", "./prog", *workload.args]
        if column.rehost:
            return self._run_rehost(workload, column, cmd)
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=column.run_dir, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            return time.perf_counter() - start, None, None
        return time.perf_counter() - start, proc.stdout, proc.returncode

    def _run_rehost(self, workload: Workload, column: Column, cmd: list[str]) -> tuple[float, bytes | None, int | None]:
        from rehost import bridge
        from rehost.sitetable import parse
        from rewriter.emit.rehost import SITE_TABLE_SUFFIX, channel_path

        if self.server is None:
            from tests.support.rehost import ServerProcess

            self.server = ServerProcess()
        assert column.program is not None and column.run_dir is not None
        document = Path(str(column.program) + SITE_TABLE_SUFFIX).read_bytes()
        tool = parse(document).tool
        channel = bridge.connect(self.server.address)
        start = time.perf_counter()
        try:
            if workload.board is not None:
                with _captured_stdio(column.run_dir) as stdout:
                    outcome = bridge.run_with_pipe(cmd, channel_path(str(column.program)), channel, tool, document,
                                                   column.program.name)
                console = stdout[0]
            else:
                outcome = bridge.run(cmd[2:], channel, tool, document, "prog", env={}, cwd=str(column.run_dir),
                                     stdin=b"")
                console = outcome.stdout
        finally:
            channel.close()
        seconds = time.perf_counter() - start
        if outcome.summary is None or not outcome.summary.complete or outcome.error:
            return seconds, None, None
        return seconds, console, outcome.returncode

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def columns(plugins: Sequence[str], tools: Sequence[str]) -> list[Column]:
    """The original, then the plugins, then Anvil's tools."""
    return [Column("original"), *(Column(f"qemu {p}", plugin=p) for p in plugins), *(Column(t, tool=t) for t in tools)]


def prepare(workload: Workload, column: Column, binary: Path, work: Path) -> None:
    """Put the column's program in its own run directory (rewriting it for an Anvil tool)."""
    run_dir = work / column.label.replace(" ", "-").replace(":", "-")
    run_dir.mkdir()
    column.run_dir = run_dir
    program = run_dir / ("prog" if workload.board is None else "image.elf")
    if column.tool is None:
        shutil.copy2(binary, program)
        column.program = program
        return
    name, mode = bench.tool_mode(column.tool)
    cmd = [sys.executable, "-m", "rewriter.cli", "instrument", "--tool", name, "--mode", mode, str(binary),
           "-o", str(program)]
    proc = subprocess.run(cmd, cwd=run_dir, env=firmware._anvil_env(), capture_output=True, text=True,
                          timeout=bench.REWRITE_TIMEOUT)
    if proc.returncode != 0:
        column.failure = bench.first_line(proc.stderr, f"anvil exited with status {proc.returncode}")
        return
    column.program = program
    column.results_file = str(json.loads(Path(f"{program}.anvil.json").read_text()).get("results_file") or "")


def read_count(column: Column) -> int | None:
    """The instructions a column counted: QEMU's insn plugin's log or inscount's InHost results."""
    assert column.run_dir is not None
    if column.plugin == "insn":
        path, pattern = column.run_dir / "plugin.log", _INSNS
    elif column.tool == "inscount" and column.results_file:
        path, pattern = column.run_dir / column.results_file, _INSCOUNT
    else:
        return None
    try:
        found = pattern.search(path.read_text())
    except OSError:
        return None
    return int(found.group(1)) if found else None


def measure(workload: Workload, cols: list[Column], runner: Runner, runs: int, work: Path) -> Row:
    """Build, rewrite, check and time one workload; failures are recorded, never raised."""
    row = Row(workload, cols)
    bench.progress(f"{workload.name}: building")
    try:
        binary = workload.build()
    except Exception as exc:  # any build problem becomes a FAILED row
        row.failure = "build: " + bench.first_line(str(exc), type(exc).__name__)
        return row
    live: list[Column] = []
    reference: tuple[bytes | None, int | None] = (None, None)
    for column in cols:
        bench.progress(f"{workload.name}: {column.label}: preparing and checking")
        prepare(workload, column, binary, work)
        if column.failure is not None:
            bench.progress(f"{workload.name}: {column.label} FAILED: {column.failure}")
            continue
        _, *outcome = runner.run(workload, column)
        if column.label == "original":
            reference = (outcome[0], outcome[1])
            if outcome[1] is None:
                row.failure = "the original timed out"
                return row
        else:
            column.mismatch = firmware.difference(reference, (outcome[0], outcome[1]))
        column.count = read_count(column)
        live.append(column)
    for attempt in range(1, runs + 1):
        bench.progress(f"{workload.name}: timed run {attempt}/{runs}")
        for column in live:
            seconds, _, status = runner.run(workload, column)
            column.times.append(seconds)
            if status != reference[1] and column.mismatch is None:
                column.mismatch = f"exit {status} instead of {reference[1]} in a timed run"
    return row


def cell(row: Row, column: Column) -> str:
    """A column's cell: seconds for the original, else the ratio of medians."""
    if column.failure is not None:
        return bench.escape(f"FAILED: {column.failure}")
    if not column.times:
        return "–"
    original = statistics.median(row.columns[0].times)
    if column is row.columns[0]:
        return f"{original:.2f} s"
    ratio = f"{statistics.median(column.times) / original:.2f}×"
    return ratio if column.mismatch is None else f"MISMATCH ({ratio})"


def table(rows: Sequence[Row]) -> list[str]:
    """The Markdown table, one line per element."""
    header = ["workload", *(c.label for c in rows[0].columns)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for row in rows:
        cells = [row.workload.name]
        if row.failure is not None:
            cells += [bench.escape(f"FAILED: {row.failure}")] + ["–"] * (len(header) - 2)
        else:
            cells += [cell(row, column) for column in row.columns]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def notes(rows: Sequence[Row], runs: int, load: tuple[tuple[float, ...], tuple[float, ...]]) -> list[str]:
    """How the figures were obtained and the counts that check one another."""
    lines = [
        f"The original's column: median wall seconds of {runs} runs; every other cell: that column's median over "
        "the original's. `qemu X`: QEMU's plugin X built from Debian's source of the installed qemu "
        "(`benchmarks/qemu_plugins.py`), loaded with `-plugin libX.so,ARGS -d plugin -D LOG` ("
        + ", ".join(f"{p}: `{a or 'defaults'}`" for p, a in PLUGIN_ARGS.items()) + "). `T:rehost`: Anvil's tool T "
        "in ReHost, records through the bridge (in this process) to one `anvil rehost-server` with the C analysis, "
        "timed until its results are back. Firmware runs as `qemu-system-arm -M BOARD -nographic -monitor none "
        "-serial none -no-reboot -semihosting-config enable=on,target=native -kernel IMAGE`, Linux programs as "
        "`env -i qemu-arm -L /usr/arm-linux-gnueabihf -0 prog ./prog ARGS`.",
        "Load average (1, 5, 15 min) before: " + ", ".join(f"{x:.2f}" for x in load[0])
        + "; after: " + ", ".join(f"{x:.2f}" for x in load[1]) + ".",
    ]
    for row in rows:
        counts = {c.label: c.count for c in row.columns if c.count is not None}
        if counts:
            lines.append(f"{row.workload.name}: instructions counted: "
                         + ", ".join(f"{label} {count:,}" for label, count in counts.items()) + ".")
        for column in row.columns:
            if column.mismatch is not None:
                lines.append(f"{row.workload.name}, {column.label}: MISMATCH: {column.mismatch}.")
    return lines


def header_line(runs: int) -> str:
    """One line saying when, where and how the table was produced."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    argv[0] = Path(argv[0]).name
    return (f"Measured {now} · anvil {bench.anvil_revision()} · qemu {bench.qemu_version()} · "
            f"CPU: {bench.cpu_model()} · median of {runs} run{'s' if runs != 1 else ''} · "
            f"command: `{shlex.join(argv)}`")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = bench.benchmark_parser(__doc__.splitlines()[0], DEFAULT_TOOLS, "variant")
    parser.add_argument("--plugins", default=",".join(DEFAULT_PLUGINS), metavar="P1,P2",
                        help=f"QEMU plugins (default {','.join(DEFAULT_PLUGINS)}; empty for none)")
    parser.add_argument("--all", action="store_true", help="every firmware program on every board")
    args = bench.checked_args(parser, argv)
    args.plugins = [p.strip() for p in args.plugins.split(",") if p.strip()]
    unknown = [p for p in args.plugins if p not in PLUGIN_ARGS]
    if unknown:
        parser.error(f"unknown plugin {unknown[0]!r}; known: {', '.join(PLUGIN_ARGS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the report; exit status 1 if anything failed or mismatched."""
    args = parse_args(argv)
    wanted = None if args.only is None else [part for part in args.only.split(",") if part]
    chosen = [w for w in workloads(args.all) if wanted is None or any(part in w.name for part in wanted)]
    if not chosen:
        print(f"no workload name contains {args.only!r}", file=sys.stderr)
        return 2
    try:
        plugins = qemu_plugins.build() if args.plugins else {}
    except (qemu_plugins.PluginBuildError, OSError) as exc:
        print(f"peers: error: {exc}", file=sys.stderr)
        return 2
    header = header_line(args.runs)
    load_before = os.getloadavg()
    work_root = Path(tempfile.mkdtemp(prefix="anvil-peers."))
    runner = Runner(plugins)
    rows = []
    started = time.monotonic()
    try:
        for index, workload in enumerate(chosen):
            work = work_root / f"w{index:02d}"
            work.mkdir()
            rows.append(measure(workload, columns(args.plugins, args.tools), runner, args.runs, work))
    finally:
        runner.stop()
        if args.keep:
            bench.progress(f"working directory kept: {work_root}")
        else:
            shutil.rmtree(work_root, ignore_errors=True)
    bench.progress(f"done in {time.monotonic() - started:.0f} s")
    return bench.print_report(header, table(rows), notes(rows, args.runs, (load_before, os.getloadavg())), rows)


if __name__ == "__main__":
    sys.exit(main())
