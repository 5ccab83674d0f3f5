"""What a signal costs an instrumented program: samples/signal_loop.c sends itself SIGUSR1
COUNT times (handler and return each time), the original and its copies timed alike.

Every signal of an instrumented Linux program goes to a wrapper first (decision 0143:
whether the signal found the thread inside the analysis; decision 0203: the PC the handler
sees), and the handler's return comes back through the program's restorer. The table gives
the median wall time of ``--runs`` runs of each (x86-64 natively under ``setarch -R``, ARM
under qemu-arm), the ratio to the original, and the extra time per signal. Progress on
stderr, the table with benchmarks/run.py's header line (date, commit, qemu, CPU, command)
on stdout::

    python3 benchmarks/signal_cost.py
    python3 benchmarks/signal_cost.py --count 100000 --runs 3 --tools inscount
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import run as bench  # noqa: E402  (progress, place, qemu_command, anvil_command, header_line)
from tests.support import samples  # noqa: E402

# (ISA, build variant): x86-64 builds of samples.X86_64_VARIANTS, ARM ones of samples.VARIANTS.
BUILDS = [("x86-64", "x64-gcc-O2-static"), ("x86-64", "x64-gcc-O2"), ("ARM", "Os-thumb-static"),
          ("ARM", "O2-thumb-dyn")]


def _command(isa: str, count: int) -> list[str]:
    """The command that runs ``./prog`` (its directory the working one) sending ``count`` signals."""
    if isa == "x86-64":
        return ["setarch", "-R", "env", "-i", "./prog", str(count)]
    return bench.qemu_command([str(count)])


def _median_seconds(command: list[str], cwd: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=600)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"signal_cost: {' '.join(command)} exited {done.returncode}: {done.stderr[-300:]!r}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300000, help="signals a run sends itself (default 300000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each, the median is given (default 5)")
    parser.add_argument("--tools", default="inscount,cachesim",
                        help="tools, comma-separated (default inscount,cachesim)")
    args = parser.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    rows = []
    with tempfile.TemporaryDirectory(prefix="anvil-signal-cost-") as tmp:
        for isa, variant in BUILDS:
            build = samples.build_x86_64 if isa == "x86-64" else samples.build
            original = bench.place(build("signal_loop", variant), Path(tmp) / variant / "orig")
            bench.progress(f"{variant}: original")
            base = _median_seconds(_command(isa, args.count), original.parent, args.runs)
            rows.append((isa, variant, "(original)", base, base))
            for tool in tools:
                copy = Path(tmp) / variant / tool / "prog"
                copy.parent.mkdir()
                done = subprocess.run([*bench.anvil_command(), "instrument", "--tool", tool, str(original),
                                       "-o", str(copy)], capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"signal_cost: instrumenting {variant} with {tool}: {done.stderr.strip()[-300:]}")
                bench.progress(f"{variant}: {tool}")
                rows.append((isa, variant, tool, base, _median_seconds(_command(isa, args.count), copy.parent,
                                                                       args.runs)))
    print(bench.header_line(args.runs))
    print()
    print("| ISA | build | tool | wall s (median) | × original | extra µs a signal |")
    print("|---|---|---|---:|---:|---:|")
    for isa, variant, tool, base, seconds in rows:
        extra = (seconds - base) / args.count * 1e6
        print(f"| {isa} | {variant} | {tool} | {seconds:.3f} | {seconds / base:.2f} | {extra:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
