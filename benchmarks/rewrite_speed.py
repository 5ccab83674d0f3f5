"""Rewrite throughput: how fast ``anvil instrument`` rewrites real programs, end to end.

For every program and tool, ``python3 -m rewriter.cli instrument --tool T PROG -o OUT``
runs as its own process (loading, decoding, planning, emitting, compiling the analysis
library, writing: everything a user waits for, Python's start-up included), with
``ANVIL_JOBS=1`` (one process) unless ``--jobs`` says otherwise. The table gives, per
run (the median of ``--runs``):

- ``wall s``: wall seconds; ``cpu s``: user + system seconds of the process and every
  process it waited for (the C compiler of the analysis library), from ``wait4``, the
  figure to compare on a machine whose cores are shared;
- ``insn/s``: the program's decoded instructions (``anvil -v`` prints them) over the
  wall and over the CPU seconds;
- ``user s``: the user seconds alone (what decision 0118's table compares);
- ``peak MB``: the largest resident set of the process or of one it waited for.

``--baseline-rev REV`` measures the same rewrites with the code of another revision
too, in the same run, alternating the two: ``git worktree add`` puts that revision in a
temporary directory (removed at the end), and its processes run with ``PYTHONPATH``
pointing there. The ``same`` column then says whether both made the same bytes.

Programs (``--programs``, comma separated, each optionally ``NAME:TOOL+TOOL`` for other
tools than ``--tools``): ``python3.11`` (Debian 12's armhf
interpreter, stripped, 4.7 MB, 674k instructions: the largest of the corpus), ``lua``
(the Lua 5.4 interpreter built from Debian's source, with symbols) and the dynamic Debian
programs ``grep``, ``dash``, ``bc`` and ``gzip``, or any program of the corpus
(``tests/support/corpus.py``: ``perl``, ``git``, ...) by its name, or any program by its
path (a name with a ``/``, shown by its file name); downloads and builds are cached (``tests/support/samples.py``).
x86-64 programs of this machine by name (``X86_64``): ``python3.11-amd64``, ``bash-amd64``,
``gdb``, ``cc1plus`` (``gcc -print-prog-name=cc1plus``), ``node``; ``--x86-64`` rewrites
the first, ``gdb`` and ``cc1plus`` (big programs: their memory is what decision 0118 cut)::

    python3 benchmarks/rewrite_speed.py                                   # this tree only
    python3 benchmarks/rewrite_speed.py --baseline-rev a9a6a06 --runs 3   # before and after
    python3 benchmarks/rewrite_speed.py --programs lua --tools inscount --pin 0
    python3 benchmarks/rewrite_speed.py --programs python3.11:inscount,lua,grep   # cachesim: not python3.11
    python3 benchmarks/rewrite_speed.py --programs python3.11:inscount --floor    # and capstone alone
    python3 benchmarks/rewrite_speed.py --x86-64 --baseline-rev cf7971a          # x86-64: time and memory
    python3 benchmarks/rewrite_speed.py --programs python3.11-amd64,gdb --tools inscount,cachesim
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.support import corpus, samples  # noqa: E402  (needs the repo root on sys.path)

# name -> (Debian packages, the program's path in them)
DEBIAN = {
    "python3.11": (["python3.11-minimal:armhf"], "usr/bin/python3.11"),
    "grep": (["grep:armhf"], "bin/grep"),
    "dash": (["dash:armhf"], "bin/dash"),
    "bc": (["bc:armhf"], "usr/bin/bc"),
    "gzip": (["gzip:armhf"], "bin/gzip"),
}
DEFAULT_PROGRAMS = "python3.11,lua,grep"
DEFAULT_TOOLS = "inscount,cachesim"
# name -> path of the x86-64 programs of this machine (Debian 12's packages), "" for
# cc1plus (where gcc says it is)
X86_64 = {"python3.11-amd64": "/usr/bin/python3.11", "bash-amd64": "/bin/bash", "gdb": "/usr/bin/gdb",
          "cc1plus": "", "node": "/usr/bin/node"}
X86_64_PROGRAMS = "python3.11-amd64,gdb,cc1plus"
X86_64_TOOLS = "inscount"
REWRITE_TIMEOUT = 1800.0
DECODED = re.compile(r"anvil: (\d+) procedures, (\d+) instructions")


def program_path(name: str) -> Path:
    """The program called ``name`` (downloaded or built once, then cached)."""
    if "/" in name:  # a program by its path (cc1, say: larger than the corpus's)
        return Path(name)
    if name == "lua":
        return samples.build_lua()
    if name in X86_64:
        path = Path(X86_64[name] or subprocess.run(["gcc", "-print-prog-name=cc1plus"], capture_output=True,
                                                   text=True).stdout.strip())
        if not path.is_file():
            raise SystemExit(f"rewrite_speed: no {name} on this machine ({path})")
        return path
    if name not in DEBIAN and name in corpus.CORPUS:  # (any program of benchmarks/corpus.py)
        return corpus.fetch(corpus.CORPUS[name])[0]
    if name not in DEBIAN:
        raise SystemExit(f"rewrite_speed: unknown program {name!r} (known: lua, {', '.join(DEBIAN)}, "
                         "the corpus's)")
    packages, path = DEBIAN[name]
    return samples.debian_packages(f"{name}-armhf", packages, path) / path


@dataclass
class Run:
    """One rewrite: what it cost and what it made."""

    wall: float
    cpu: float
    user: float
    peak_kb: int
    instructions: int
    digest: str  # of the output file, "" if the rewrite failed
    error: str = ""


@dataclass
class Row:
    program: str
    size: int
    tool: str
    tree: str
    runs: list[Run] = field(default_factory=list)

    def median(self, key: Callable[[Run], float]) -> float:
        return statistics.median(key(r) for r in self.runs)


def rewrite(tree: Path, binary: Path, tool: str, out: Path, jobs: int, pin: list[int] | None) -> Run:
    """``anvil instrument`` of ``binary`` with ``tool`` by the code in ``tree``, measured."""
    env = {**os.environ, "PYTHONPATH": str(tree), "ANVIL_JOBS": str(jobs)}
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "rewriter.cli", "instrument", "-v", "--tool", tool, str(binary), "-o", str(out)]
    with tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, preexec_fn=(lambda: os.sched_setaffinity(0, pin)) if pin else None)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        err.seek(0)
        text = err.read().decode(errors="replace")
    found = DECODED.search(text)
    ok = proc.returncode == 0 and out.exists()
    digest = hashlib.sha256(out.read_bytes()).hexdigest() if ok else ""
    error = "" if ok else (text.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_utime, usage.ru_maxrss,
               int(found.group(2)) if found else 0, digest, error)


def baseline_tree(rev: str, where: Path) -> Path:
    """A worktree of ``rev`` (of this repository) under ``where``."""
    tree = where / f"baseline-{rev}"
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(tree), rev],
                   check=True, stdout=subprocess.DEVNULL)
    return tree


def table(rows: list[Row], baseline: str | None) -> str:
    """The Markdown table of ``rows`` (pairs of baseline and this tree when ``baseline``)."""
    head = ["program", "size MB", "instructions", "tool", "code", "wall s", "cpu s", "user s", "insn/s (wall)",
            "insn/s (cpu)", "peak MB"]
    if baseline:
        head.append("same bytes")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---|---|" + "---:|" * 6 + ("---|" if baseline else "")]
    digests: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        digests.setdefault((row.program, row.tool), set()).update(r.digest for r in row.runs)
    for row in rows:
        failed = next((r.error for r in row.runs if r.error), "")
        insns = max(r.instructions for r in row.runs)
        cells = [row.program, f"{row.size / 1e6:.1f}", str(insns or "?"), row.tool, row.tree]
        if failed:
            cells += [f"FAILED: {failed}"] + [""] * 5
        else:
            wall, cpu = row.median(lambda r: r.wall), row.median(lambda r: r.cpu)
            cells += [f"{wall:.2f}", f"{cpu:.2f}", f"{row.median(lambda r: r.user):.2f}", f"{insns / wall:,.0f}",
                      f"{insns / cpu:,.0f}",
                      f"{row.median(lambda r: r.peak_kb) / 1024:.0f}"]
        if baseline:
            got = digests[(row.program, row.tool)]
            cells.append("" if failed else ("yes" if len(got) == 1 else "NO"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def decode_floor(binary: Path) -> tuple[int, float]:
    """Capstone's decoding alone (``disasm_lite``, the rewriter's first step) of every
    executable section of ``binary`` in Thumb mode, 4 KiB at a time: (instructions, CPU
    seconds). What no rewrite that decodes through capstone's Python binding can beat."""
    import capstone
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB)
    count = 0
    started = time.process_time()
    with binary.open("rb") as f:
        for section in ELFFile(f).iter_sections():
            if not section["sh_flags"] & SH_FLAGS.SHF_EXECINSTR or section["sh_type"] != "SHT_PROGBITS":
                continue
            data, base = section.data(), section["sh_addr"]
            for offset in range(0, len(data), 4096):
                for _ in md.disasm_lite(data[offset:offset + 4096], base + offset):
                    count += 1
    return count, time.process_time() - started


def floor_table(programs: list[tuple[str, Path]]) -> str:
    """The Markdown table of decode_floor for each program."""
    lines = ["| program | decoded by capstone alone | cpu s | insn/s (cpu) |", "|---|---:|---:|---:|"]
    for name, path in programs:
        count, seconds = decode_floor(path)
        lines.append(f"| {name} | {count} | {seconds:.2f} | {count / seconds:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", help=f"comma separated (default {DEFAULT_PROGRAMS}; "
                                           f"with --x86-64, {X86_64_PROGRAMS})")
    parser.add_argument("--tools", help=f"comma separated (default {DEFAULT_TOOLS}; with --x86-64, {X86_64_TOOLS})")
    parser.add_argument("--x86-64", action="store_true", dest="x86_64",
                        help="this machine's big x86-64 programs by default (their time and peak memory)")
    parser.add_argument("--runs", type=int, default=1, help="rewrites of each, the median is shown (default 1)")
    parser.add_argument("--jobs", type=int, default=1, help="ANVIL_JOBS of each rewrite (default 1: one core)")
    parser.add_argument("--pin", help="CPUs to run the rewrites on, comma separated (as taskset -c)")
    parser.add_argument("--baseline-rev", metavar="REV", help="also rewrite with the code of git revision REV")
    parser.add_argument("--floor", action="store_true",
                        help="also time capstone's decoding alone of each program (the floor of any rewrite)")
    args = parser.parse_args(argv)
    pin = [int(c) for c in args.pin.split(",")] if args.pin else None
    if args.programs is None:
        args.programs = X86_64_PROGRAMS if args.x86_64 else DEFAULT_PROGRAMS
    if args.tools is None:
        args.tools = X86_64_TOOLS if args.x86_64 else DEFAULT_TOOLS
    tools = [t for t in args.tools.split(",") if t]
    wanted = [(spec.split(":")[0], spec.split(":")[1].split("+") if ":" in spec else tools)
              for spec in args.programs.split(",") if spec]
    programs = [(Path(name).name, program_path(name)) for name, _ in wanted]
    work = Path(tempfile.mkdtemp(prefix="rewrite-speed."))
    trees = [("this", REPO_ROOT)]
    try:
        if args.baseline_rev:
            trees.insert(0, (args.baseline_rev, baseline_tree(args.baseline_rev, work)))
        rows = [Row(name, path.stat().st_size, tool, label)
                for (name, path), (_, its_tools) in zip(programs, wanted) for tool in its_tools for label, _ in trees]
        for _ in range(args.runs):  # the trees alternate, so a change of the machine's load hits both
            for row in rows:
                tree = dict(trees)[row.tree]
                path = dict(programs)[row.program]
                print(f"rewrite_speed: {row.program} {row.tool} ({row.tree})", file=sys.stderr, flush=True)
                row.runs.append(rewrite(tree, path, row.tool, work / f"{row.program}.{row.tool}.out",
                                        args.jobs, pin))
    finally:
        if args.baseline_rev:
            subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force",
                            str(work / f"baseline-{args.baseline_rev}")], stdout=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    print(f"{datetime.date.today()}, {platform.machine()} {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, this tree at {head}, ANVIL_JOBS={args.jobs}"
          f"{', CPUs ' + args.pin if args.pin else ''}, median of {args.runs}: "
          f"`python3 benchmarks/{Path(__file__).name} {shlex.join(argv if argv is not None else sys.argv[1:])}`\n")
    print(table(rows, args.baseline_rev))
    if args.floor:
        print("\nCapstone's decoding alone (`disasm_lite`, Thumb, every executable section), in this process:\n")
        print(floor_table(programs))
    return 1 if any(r.error for row in rows for r in row.runs) else 0


if __name__ == "__main__":
    sys.exit(main())
