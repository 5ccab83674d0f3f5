"""Instrument every corpus program with every tool in both modes and compare it with the original.

The corpus is tests/support/corpus.py: Debian 12's own armhf programs, stripped, each with
a deterministic workload.  For each program, tool (inscount, bbcount, cachesim) and mode
(inhost, rehost) the script

- rewrites it with ``python3 -m rewriter.cli instrument --tool T --mode M`` in a child
  process on one core (``ANVIL_JOBS=1``), timing it and taking its peak resident memory
  (VmHWM);
- runs the copy the way the original runs (InHost: ``env -i ... qemu-arm``; ReHost: through
  the bridge to one ``anvil rehost-server`` with the C analysis), each in the program's one
  working directory, made afresh with the workload's files (``workdir``), and compares
  stdout, stderr and exit status with the original's;
- prints one Markdown table row: program, executable size, instructions of the rewrite
  (its ``.anvil.json``), tool/mode, identical or how not, rewrite wall seconds, instructions
  per second (the report's instructions over the wall time of the whole command), peak
  memory of the rewrite, and slowdown (median run time over the original's);
- where a tool ran in both modes and the program repeats its own counts
  (``Program.repeatable``), compares the two results files byte for byte: the analysis
  must not depend on which side ran it.

With ``--qemu-counts``, each repeatable program's original also runs once under qemu-arm
with this project's per-block count plugin (``benchmarks/plugins/blockcount.c``, built by
``benchmarks/qemu_plugins.py``): the instructions QEMU runs in the executable (the blocks
between the ``start_code`` and ``end_code`` the plugin reports) must equal inscount's InHost total,
else the row says by how much (decision 0086: how perl's and python3.11's miscounts were
found).

A program the corpus marks ``refused`` (Go's: decision 0060) must be refused by Anvil with
that one-line error; its rows say so and do not count as failures.

memtrace is a tool of Linux programs too, but not a default one: its trace of the big
programs' workloads (hundreds of millions of accesses) is gigabytes of text and over a
ReHost session's 2 GiB; ``--tools memtrace`` runs it on the programs named.

Progress and each row as it is measured go to stderr; the table, with a header line naming
the date, commit, qemu-arm and CPU, goes to stdout.  Exit status 1 if anything failed or
differed::

    python3 benchmarks/corpus.py                                    # everything (two hours on two loaded cores)
    python3 benchmarks/corpus.py --tools inscount --modes inhost    # find crashes first
    python3 benchmarks/corpus.py --programs git,sed --runs 3
    python3 benchmarks/corpus.py --tools inscount --modes inhost --qemu-counts   # counts against QEMU's
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from elftools.elf.elffile import ELFFile  # noqa: E402

from benchmarks import run as bench  # noqa: E402  (progress, first_line, escape, header_line)
from rewriter.ir.elf_loader import names_thread_start  # noqa: E402
from tests.oracles.qemu_trace import CODE_RE  # noqa: E402  (start_code/end_code lines, as -d page's)
from tests.support import corpus  # noqa: E402

TOOLS = ["inscount", "bbcount", "cachesim", "memtrace"]
#: The tools run when --tools is not given (memtrace: see the module's docstring).
DEFAULT_TOOLS = ["inscount", "bbcount", "cachesim"]
MODES = ["inhost", "rehost"]
REWRITE_TIMEOUT = 1800.0
RUN_TIMEOUT = 300.0
#: The bridge redirects a process-wide descriptor while it starts a program: one at a time.
_BRIDGE = threading.Lock()


@dataclass
class Outcome:
    """What one run printed, how it exited (None: timed out) and how long it took."""

    stdout: bytes
    stderr: bytes
    returncode: int | None
    seconds: float


@dataclass
class Result:
    """One program × tool × mode."""

    tool: str
    mode: str
    failure: str | None = None  # the rewrite failed: anvil's message
    refused: str | None = None  # anvil refused the program as the corpus expects (Program.refused): its message
    rewrite_wall: float = 0.0
    instructions: int = 0
    peak_kib: int = 0
    difference: str | None = None  # how the run differed from the original's
    note: str | None = None  # what an identical run's results showed that is worth saying
    times: list[float] = field(default_factory=list)
    run_dir: Path | None = None  # the copy's slot (the executable and its results file are there)


@dataclass
class Row:
    """One program: the original's figures and each tool/mode's."""

    program: str
    size: int = 0
    failure: str | None = None
    times: list[float] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)


def _high_water_kib(pid: int) -> int:
    """The peak resident memory of process ``pid`` so far (VmHWM, KiB), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def rewrite(binary: Path, out: Path, result: Result) -> None:
    """``anvil instrument`` in a child process on one core (ANVIL_JOBS=1); fills in the
    rewrite figures or the failure.

    The peak memory is the child's own high-water mark (VmHWM), read while it runs: the
    maxrss that wait4 reports starts from this script's resident size, which a child
    started by fork and exec inherits.
    """
    cmd = [sys.executable, "-m", "rewriter.cli", "instrument", "--tool", result.tool, "--mode", result.mode,
           "--out", str(out.parent / f"prog.{result.tool}.out"), str(binary), "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ANVIL_JOBS": "1"}
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.parent / "anvil.stderr"
    start = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=out.parent)
        deadline = start + REWRITE_TIMEOUT
        while True:
            result.peak_kib = max(result.peak_kib, _high_water_kib(proc.pid))
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
    result.rewrite_wall = time.perf_counter() - start
    if proc.returncode != 0:
        result.failure = bench.first_line(log.read_text(errors="replace"), f"anvil exited {proc.returncode}")
        return
    try:
        result.instructions = int(json.loads(Path(f"{out}.anvil.json").read_text())["instructions"])
    except (OSError, ValueError, KeyError) as exc:
        result.failure = f"unreadable report: {exc}"


def workdir(binary: Path) -> Path:
    """The working directory of every run of a program: ``w`` beside the slots of its copies
    (``<work>/<program>/w``), holding the workload's files alone, made afresh for each run
    (``fresh_workdir``).

    The same path for every copy, and nothing of Anvil's there (not the rewrite's report,
    ReHost's site table or the results file, which ``--out`` puts beside the executable):
    make reads its directory's listing, and its count followed the names in it; it keeps its
    working directory's path in a hash table, and the addresses its cachesim results follow
    went with the path's letters (InHost's and ReHost's copies differed, decision 0052).
    """
    return binary.parent.parent / "w"


def fresh_workdir(program: corpus.Program, binary: Path, original: Path, env: dict[str, str]) -> None:
    """Empty ``workdir(binary)`` and fill it for ``program`` (setup run by ``original``)."""
    shutil.rmtree(workdir(binary), ignore_errors=True)
    corpus.prepare(program, workdir(binary), original, env)


def run_inhost(program: corpus.Program, binary: Path, env: dict[str, str]) -> Outcome:
    """Run ``binary`` (at its final path) with the workload under qemu-arm, in ``workdir``."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(corpus.qemu_command(binary, program, env), input=program.stdin, capture_output=True,
                              cwd=workdir(binary), timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Outcome(b"", b"", None, RUN_TIMEOUT)
    return Outcome(proc.stdout, proc.stderr, proc.returncode, time.perf_counter() - start)


STD_LINKS = {"/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"}


def std_links_spoilt() -> str | None:
    """What a run did to /dev/stdin, /dev/stdout or /dev/stderr, if anything: workloads name
    them as files, and a program run as root that renames or unlinks its output file (as
    some do on error) replaces the system's link, which every later run then misses."""
    spoilt = [name for name, target in STD_LINKS.items() if not (os.path.islink(name) and os.readlink(name) == target)]
    if not spoilt:
        return None
    return (f"replaced {', '.join(spoilt)} (restore: " +
            "; ".join(f"ln -sf {STD_LINKS[name]} {name}" for name in spoilt) + ")")


def run_rehost(program: corpus.Program, binary: Path, env: dict[str, str], address: str) -> Outcome:
    """Run the ReHost ``binary`` through the bridge to the server at ``address``."""
    from tests.support.rehost import run_rehost as bridge_run

    start = time.perf_counter()
    with _BRIDGE:
        try:
            run, outcome = bridge_run(binary, address, list(program.args), program.stdin, env=env,
                                      argv0=program.argv0, cwd=workdir(binary), lib_root=corpus.lib_root(program))
        except Exception as exc:  # a bridge failure is this row's result, not the script's end
            return Outcome(b"", f"bridge: {exc}".encode(), -1, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    complete = outcome.summary is not None and outcome.summary.complete and not outcome.error
    stderr = run.stderr + (b"" if complete else f"\nrehost: {outcome.error or 'results incomplete'}".encode())
    return Outcome(run.stdout, stderr, run.returncode if complete else -1000, seconds)


def qemu_count(program: corpus.Program, binary: Path, env: dict[str, str], plugin: Path) -> int | None:
    """The instructions QEMU runs in ``binary``'s own code with the workload (per-block
    count plugin, which also says where the code was loaded); None if the run timed out or
    left no counts (a program killed by a signal: QEMU 7.2 runs no plugin's exit callback
    then, and the row is not compared with QEMU).

    No ``-d page -D log``: the log would be a descriptor of QEMU's open in the program, which
    a program that walks its descriptors sees (decision 0119)."""
    counts = binary.parent / "blockcount.txt"
    cmd = corpus.qemu_command(binary, program, env)
    at = cmd.index("qemu-arm") + 1
    cmd[at:at] = ["-plugin", f"{plugin},out={counts}"]
    try:
        subprocess.run(cmd, input=program.stdin, capture_output=True, cwd=workdir(binary), timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    if not counts.is_file():
        return None
    text = counts.read_bytes()
    code = {name: int(value, 16) for name, value in CODE_RE.findall(text)}
    low, high = code[b"start_code"], code[b"end_code"]
    total = 0
    for line in text.decode().splitlines():
        if line.startswith(("start_code", "end_code")):
            continue
        address, instructions, executions = line.split()
        if low <= int(address, 16) < high:
            total += int(instructions) * int(executions)
    return total


def counted_total(results: Path) -> int:
    """inscount's total from its results file (text or JSON)."""
    text = results.read_text()
    if text.lstrip().startswith("{"):
        return int(json.loads(text)["total"])
    return int(re.search(r"(\d+) instructions executed", text).group(1))


def difference(original: Outcome, copy: Outcome) -> str | None:
    """How ``copy`` differs from ``original`` (None: identical)."""
    if copy.returncode is None:
        return f"timed out after {RUN_TIMEOUT:.0f} s"
    problems = []
    if copy.returncode == -1000:
        problems.append("ReHost results incomplete")
    elif copy.returncode != original.returncode:
        signal = f" (signal {-copy.returncode})" if copy.returncode < 0 else ""
        problems.append(f"exit {copy.returncode}{signal} instead of {original.returncode}")
    if copy.stdout != original.stdout:
        problems.append(f"stdout differs ({len(copy.stdout)} bytes, not {len(original.stdout)})")
    if copy.stderr != original.stderr:
        text = copy.stderr.decode(errors="replace").strip().splitlines()
        problems.append(f"stderr: {text[-1][:160] if text else '(empty)'}")
    return "; ".join(problems) or None


def measure(name: str, tools: Sequence[str], modes: Sequence[str], runs: int, work: Path,
            address: str | None, plugin: Path | None = None) -> Row:
    """Everything for one program; failures are recorded in the row, never raised.
    ``plugin``: the per-block count plugin, to compare inscount with QEMU (``qemu_count``)."""
    program = corpus.CORPUS[name]
    row = Row(name)
    try:
        binary, root = corpus.fetch(program)
        env = corpus.environment(program, root)
        row.size = binary.stat().st_size
        original_dir = work / name / "orig"
        original_dir.mkdir(parents=True)
        shutil.copy2(binary, original_dir / "prog")
        fresh_workdir(program, original_dir / "prog", binary, env)
    except Exception as exc:  # a download or setup problem becomes the row's failure
        row.failure = bench.first_line(str(exc), type(exc).__name__)
        bench.progress(f"{name}: FAILED {row.failure}")
        return row
    original = run_inhost(program, original_dir / "prog", env)
    row.times.append(original.seconds)
    if spoilt := std_links_spoilt():
        row.failure = f"the original {spoilt}"
        bench.progress(f"{name}: FAILED {row.failure}")
        return row
    executed = None
    if plugin is not None and program.repeatable:
        fresh_workdir(program, original_dir / "prog", binary, env)
        executed = qemu_count(program, original_dir / "prog", env, plugin)
    copies: list[tuple[Result, Path, Outcome]] = []
    for index, (tool, mode) in enumerate((t, m) for m in modes for t in tools):
        result = Result(tool, mode)
        row.results.append(result)
        run_dir = work / name / f"t{index:03d}"
        bench.progress(f"{name}: {tool} {mode}: rewriting")
        rewrite(binary, run_dir / "prog", result)
        expect_refusal(program, result)
        if result.failure is None and result.refused is None:
            fresh_workdir(program, run_dir / "prog", binary, env)
            outcome = (run_rehost(program, run_dir / "prog", env, address) if mode == "rehost"
                       else run_inhost(program, run_dir / "prog", env))
            result.times.append(outcome.seconds)
            result.difference = std_links_spoilt() or difference(original, outcome)
            if mode == "inhost" and result.difference is None and not (run_dir / f"prog.{tool}.out").is_file():
                # (ReHost's copy says so itself: its results are incomplete.)
                result.difference = "no results file: the program's end was not seen"
            elif (executed is not None and tool == "inscount" and mode == "inhost" and result.difference is None
                  and counted_total(run_dir / "prog.inscount.out") != executed):
                got = counted_total(run_dir / "prog.inscount.out")
                result.difference = f"counts {got - executed:+,} instructions against QEMU's {executed:,}"
            result.run_dir = run_dir
            copies.append((result, run_dir, outcome))
        bench.progress(f"{name}: {tool} {mode}: " + " | ".join(cells(row, result)))
    if program.repeatable:
        compare_results(row)
    for _ in range(runs - 1):  # more timed runs, interleaved so drift hits all alike
        fresh_workdir(program, original_dir / "prog", binary, env)
        row.times.append(run_inhost(program, original_dir / "prog", env).seconds)
        for result, run_dir, _ in copies:
            if result.difference is None:
                run = run_rehost if result.mode == "rehost" else run_inhost
                extra = (address,) if result.mode == "rehost" else ()
                fresh_workdir(program, run_dir / "prog", binary, env)
                result.times.append(run(program, run_dir / "prog", env, *extra).seconds)
    return row


def expect_refusal(program: corpus.Program, result: Result) -> None:
    """For a program Anvil must refuse (``Program.refused``): a rewrite that failed with that
    one-line error is the expected outcome (``result.refused``); one that succeeded, or
    failed otherwise, is a failure."""
    if not program.refused:
        return
    expected = f"anvil: error: {corpus.fetch(program)[0]}: {program.refused}"
    if result.failure is not None and result.failure.startswith(expected):
        result.refused, result.failure = result.failure, None
    elif result.failure is None:
        result.failure = f"rewritten, but Anvil must refuse it ({program.refused})"


def compare_results(row: Row) -> None:
    """Mark each ReHost result whose results file differs from the same tool's InHost one.

    Only runs that behaved like the original are compared (the others are already marked).
    """
    runs = {(r.tool, r.mode): r for r in row.results
            if r.failure is None and r.difference is None and r.refused is None}
    for (tool, mode), rehost in runs.items():
        inhost = runs.get((tool, "inhost"))
        if mode != "rehost" or inhost is None:
            continue
        files = [r.run_dir / f"prog.{tool}.out" for r in (inhost, rehost)]
        if not all(f.is_file() for f in files):
            rehost.difference = "results missing: " + ", ".join(f.parent.name for f in files if not f.is_file())
        elif tool == "memtrace" and not _same_file(*files) and _threads(files[0].parent.parent / "orig" / "prog") \
                and _same_lines(*files):
            rehost.note = "the threads' records in another order"
        elif not _same_file(*files):
            rehost.difference = f"results differ from InHost's ({files[1].stat().st_size} bytes, " \
                                f"not {files[0].stat().st_size})"
        if rehost.difference is not None:
            bench.progress(f"{row.program}: {tool} rehost: {rehost.difference}")


def _threads(binary: Path) -> bool:
    """Whether the program starts threads: then a trace's records come in the order its
    threads were scheduled, which differs from run to run."""
    data = binary.read_bytes()
    return names_thread_start(ELFFile(io.BytesIO(data)), data)


def _same_lines(a: Path, b: Path) -> bool:
    """Whether two text files hold the same lines, in any order."""
    with a.open("rb") as fa, b.open("rb") as fb:
        return sorted(fa) == sorted(fb)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes (read in pieces: a memtrace may be large)."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def cells(row: Row, result: Result) -> list[str]:
    """The table cells of one result (after program and size)."""
    rate = f"{result.instructions / result.rewrite_wall:,.0f}" if result.instructions else "–"
    if result.failure is not None:
        verdict = f"REWRITE FAILED: {result.failure}"
    elif result.refused is not None:
        verdict = f"refused, as it must be: {result.refused.removeprefix('anvil: error: ')}"
    else:
        verdict = (("identical" if result.note is None else f"identical ({result.note})") if result.difference is None
                   else f"DIFFERS: {result.difference}")
    slowdown = (f"{statistics.median(result.times) / statistics.median(row.times):.2f}×"
                if result.times and row.times else "–")
    return [f"{result.instructions:,}" if result.instructions else "–", f"{result.tool}/{result.mode}",
            bench.escape(verdict[:300]), f"{result.rewrite_wall:.1f}", rate,
            f"{result.peak_kib / 1024:.0f}" if result.peak_kib else "–", slowdown]


HEADER = ["program", "size (B)", "instructions", "tool/mode", "behaviour", "rewrite (s)", "insn/s",
          "peak MiB", "slowdown"]


def table(rows: Sequence[Row]) -> list[str]:
    """The Markdown table, one line per element."""
    lines = ["| " + " | ".join(HEADER) + " |", "|---|---:|---:|---|---|---:|---:|---:|---:|"]
    for row in rows:
        if row.failure is not None:
            lines.append(f"| {row.program} | – | – | – | {bench.escape('FAILED: ' + row.failure)} | – | – | – | – |")
        for result in row.results:
            lines.append("| " + " | ".join([row.program, f"{row.size:,}", *cells(row, result)]) + " |")
    return lines


def summary(rows: Sequence[Row]) -> str:
    """How many program × tool × mode combinations behaved identically."""
    results = [r for row in rows for r in row.results]
    good = sum(r.failure is None and r.difference is None and r.refused is None for r in results)
    failed = sum(r.failure is not None for r in results)
    refused = sum(r.refused is not None for r in results)
    originals = ", ".join(f"{row.program} {statistics.median(row.times):.2f} s" for row in rows if row.times)
    return (f"{good} of {len(results) - refused} identical; {failed} rewrites failed, "
            f"{len(results) - good - failed - refused} runs differed; {refused} refused as the corpus expects. "
            f"Original run times under qemu-arm: {originals}.")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: subsets of programs, tools and modes; parallel programs; timed runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(corpus.CORPUS), metavar="P1,P2",
                        help="comma-separated corpus programs (default: all)")
    parser.add_argument("--tools", default=",".join(DEFAULT_TOOLS), metavar="T1,T2",
                        help=f"default: {','.join(DEFAULT_TOOLS)}; known: {','.join(TOOLS)}")
    parser.add_argument("--modes", default=",".join(MODES), metavar="M1,M2", help="default: " + ",".join(MODES))
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="programs measured at once (default 1)")
    parser.add_argument("--runs", type=int, default=1, metavar="N", help="timed runs of each copy (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (path printed to stderr)")
    parser.add_argument("--qemu-counts", action="store_true",
                        help="compare inscount's InHost totals with QEMU's count of the executable's instructions")
    args = parser.parse_args(argv)
    for name, known in (("programs", corpus.CORPUS), ("tools", TOOLS), ("modes", MODES)):
        chosen = [x.strip() for x in getattr(args, name).split(",") if x.strip()]
        unknown = [x for x in chosen if x not in known]
        if unknown or not chosen:
            parser.error(f"--{name}: unknown {', '.join(unknown) or 'nothing given'}; known: {', '.join(known)}")
        setattr(args, name, chosen)
    if args.jobs < 1 or args.runs < 1:
        parser.error("--jobs and --runs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the chosen part of the corpus and print the table; 1 if anything failed or differed."""
    args = parse_args(argv)
    header = bench.header_line(args.runs)
    work = Path(tempfile.mkdtemp(prefix="anvil-corpus."))
    server = None
    plugin = None
    if args.qemu_counts:
        from benchmarks.qemu_plugins import own_plugin

        plugin = own_plugin("blockcount")
    if "rehost" in args.modes:
        from tests.support.rehost import ServerProcess

        server = ServerProcess()
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(lambda name: measure(name, args.tools, args.modes, args.runs, work,
                                                      server.address if server else None, plugin), args.programs))
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            bench.progress(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(header)
    print()
    print("\n".join(table(rows)))
    print()
    print(summary(rows))
    bad = any(row.failure or any(r.failure or r.difference for r in row.results) for row in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
