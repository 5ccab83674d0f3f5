"""x86-64 programs instrumented by Anvil, run natively, beside Valgrind and QEMU on the same
machine in one run: the slowdown of each against the original.

Workloads (each about 0.5-2 s natively; Debian's own stripped programs and a sample):

- ``gzip``: Debian's ``gzip -9`` compressing 24 MiB of generated text to stdout;
- ``sha256sum``: Debian's ``sha256sum`` of 96 MiB of it, eight times over (coreutils' own
  SHA-256);
- ``grep``: Debian's ``grep -c`` of a pattern with alternatives in 64 MiB of it, sixteen
  times over (grep's own matchers; ``sed``, ``xz`` or ``bzip2`` would spend their time in
  shared libraries, which are not instrumented).

Columns: the original's median wall seconds, then per runner its median wall time over the
original's: Anvil inscount, bbcount and cachesim (InHost, default geometry: 16 KiB,
8-way, 64-byte lines), inscount and cachesim ReHost (``anvil run``: the program natively,
its records to a server of its own on loopback, whose analysis runs on the other core;
the client's and the server's start-up, about half a second, included),
``valgrind --tool=none`` (its translation alone), ``valgrind
--tool=cachegrind --cache-sim=yes`` (its I1/D1/LL cache simulation), ``valgrind
--tool=lackey`` (its instruction count, ``--basic-counts=yes``; on ``--lackey`` only:
50-150x), ``qemu-x86_64`` (plain user-mode emulation); with ``--memtrace``, memtrace beside
Lackey's trace of every access (``--trace-mem=yes``). Every run's standard output is
compared with the original's, and its exit status: a runner that differs is marked ``DIFF``.

    python3 benchmarks/x86_64.py                 # median of 3 runs
    python3 benchmarks/x86_64.py --runs 5 --only gzip --lackey
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REHOST = {"inscount ReHost": "inscount", "cachesim ReHost": "cachesim"}  # column -> tool


def _text(path: Path, mib: float) -> Path:
    """``mib`` MiB of deterministic text with repeats (compressible, as text is)."""
    words = [f"word{k * 7919 % 10007}" for k in range(4096)]
    with open(path, "w") as f:
        written, k = 0, 0
        while written < mib * (1 << 20):
            line = " ".join(words[(k + j * 31) % len(words)] for j in range(12)) + "\n"
            f.write(line)
            written += len(line)
            k += 1
    return path


def _workloads(tmp: Path, scale: float = 1.0) -> dict[str, tuple[Path, list[str]]]:
    data = _text(tmp / "input.txt", 24 * scale)
    big = _text(tmp / "big.txt", 96 * scale)
    middle = _text(tmp / "middle.txt", 64 * scale)
    return {
        "gzip": (Path("/bin/gzip"), ["-9", "-c", str(data)]),
        # The same file several times over: a run long enough to time (0.5-3 s) without
        # writing gigabytes first.
        "sha256sum": (Path("/usr/bin/sha256sum"), [str(big)] * 8),
        "grep": (Path("/bin/grep"), ["-c", "-E", "word1[0-9]7|word99[0-9]+ word2", *[str(middle)] * 16]),
    }


def _time(cmd: list[str], cwd: Path) -> tuple[float, bytes]:
    """Wall seconds of ``cmd``, and what it did: its standard output and exit status."""
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, done.stdout + f"\nexit status {done.returncode}".encode()


def _instrument(program: Path, tool: str, out: Path, mode: str = "inhost") -> Path:
    subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", tool, "--mode", mode, str(program),
                    "-o", str(out)], check=True, capture_output=True, cwd=REPO_ROOT)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each (the median is shown; default 3)")
    parser.add_argument("--only", help="workloads whose name holds this")
    parser.add_argument("--lackey", action="store_true", help="also valgrind --tool=lackey (slow)")
    parser.add_argument("--memtrace", action="store_true",
                        help="also memtrace, beside Lackey's trace of every access (--trace-mem=yes, to a file)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="the inputs' sizes times this (default 1: 24-96 MiB of text; tracing wants less)")
    args = parser.parse_args()
    if platform.machine() != "x86_64":
        parser.error("x86-64 programs run natively: this machine is " + platform.machine())
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        workloads = {k: v for k, v in _workloads(tmp, args.scale).items() if not args.only or args.only in k}
        runners = ["inscount", "bbcount", "cachesim", *REHOST, "valgrind none", "valgrind cachegrind"] \
            + (["valgrind lackey"] if args.lackey else []) \
            + (["qemu-x86_64"] if shutil.which("qemu-x86_64") else []) \
            + (["memtrace", "lackey trace"] if args.memtrace else [])
        print(f"{datetime.date.today()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"median of {args.runs}: `{' '.join(['python3', 'benchmarks/x86_64.py', *sys.argv[1:]])}`\n")
        print("| workload | original (s) | " + " | ".join(f"{r} ×" for r in runners) + " |")
        print("|---|---:|" + "---:|" * len(runners))
        for name, (program, argv) in workloads.items():
            local = tmp / name
            local.mkdir()
            plain = local / "prog"
            shutil.copy(program, plain)
            commands = {"original": [str(plain), *argv]}
            for tool in ("inscount", "bbcount", "cachesim") + (("memtrace",) if args.memtrace else ()):
                (local / tool).mkdir()
                commands[tool] = [str(_instrument(plain, tool, local / tool / "prog")), *argv]
            for runner, tool in REHOST.items():
                (local / runner.replace(" ", "-")).mkdir()
                rehost = _instrument(plain, tool, local / runner.replace(" ", "-") / "prog", "rehost")
                commands[runner] = [sys.executable, "-m", "rewriter.cli", "run", "-q", str(rehost), "--", *argv]
            commands["valgrind none"] = ["valgrind", "--tool=none", "-q", str(plain), *argv]
            commands["valgrind cachegrind"] = ["valgrind", "--tool=cachegrind", "-q", "--cache-sim=yes",
                                               "--cachegrind-out-file=/dev/null", str(plain), *argv]
            commands["valgrind lackey"] = ["valgrind", "--tool=lackey", "-q", "--basic-counts=yes", str(plain), *argv]
            commands["qemu-x86_64"] = ["qemu-x86_64", str(plain), *argv]
            commands["lackey trace"] = ["valgrind", "--tool=lackey", "-q", "--trace-mem=yes",
                                        f"--log-file={local / 'lackey.trace'}", str(plain), *argv]
            times: dict[str, list[float]] = {}
            outputs: dict[str, bytes] = {}
            for _ in range(args.runs):
                for runner in ["original", *runners]:
                    seconds, out = _time(commands[runner], local)
                    times.setdefault(runner, []).append(seconds)
                    outputs[runner] = out
                    print(f"{name} {runner}: {seconds:.2f} s", file=sys.stderr)
            base = statistics.median(times["original"])
            cells = []
            for runner in runners:
                ratio = statistics.median(times[runner]) / base
                cells.append(f"{ratio:.2f}" + ("" if outputs[runner] == outputs["original"] else " DIFF"))
            print(f"| {name} | {base:.2f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
