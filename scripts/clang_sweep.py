"""Sweep clang/lld (and clang/GNU ld) builds of the C samples through every counting tool.

For each sample, clang variant (tests/support/samples.py CLANG_VARIANTS), unstripped and
stripped, and tool (inscount, bbcount, cachesim; InHost), instrument the program, run it under
qemu-arm next to the original and list what differs: a refused rewrite, a crash or different
output, or an inscount total that is not qemu's count (unstripped) or exceeds it (stripped).

    PYTHONPATH=. python3 scripts/clang_sweep.py [--jobs N] [--only SUBSTRING ...] [--tools T,T]

Prints one line per combination and a summary table; exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SAMPLES = ["sort", "hash", "calls", "matrix", "addresses", "jumptable", "forks"]
TOOLS = ["inscount", "bbcount", "cachesim"]
ARGS = {"calls": ["stdin", "two words"]}
STDIN = {"calls": b"some input for the calls sample\n"}


def _one(sample: str, variant: str, stripped: bool, tools: list[str]) -> list[tuple[str, str]]:
    """Outcome ('ok' or a failure text) of each tool on one build."""
    from tests.oracles.qemu_trace import exe_pcs, trace_pcs
    from tests.support.run import place, results, run_prog
    from tests.support.samples import SampleBuildError, build

    try:
        binary = build(sample, variant)
    except SampleBuildError as exc:
        return [(tool, "build: " + str(exc).strip().splitlines()[-1][:100]) for tool in tools]
    out: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="sweep.") as tmp_name:
        tmp = Path(tmp_name)
        if stripped:
            plain = tmp / "stripped"
            subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(plain), str(binary)], check=True)
            binary = plain
        args, stdin = ARGS.get(sample, []), STDIN.get(sample, b"")
        placed = place(binary, tmp, "orig")
        original = run_prog(placed, args, stdin)
        total = sum(exe_pcs(trace_pcs(placed, args, stdin, argv0="prog"), placed).values())
        for tool in tools:
            dest = tmp / "inst" / "prog"
            dest.parent.mkdir(parents=True, exist_ok=True)
            for old in dest.parent.glob("*"):
                old.unlink()
            err = tmp / "err"
            with open(err, "w") as handle:
                proc = subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", tool,
                                       "--format", "json", str(binary), "-o", str(dest)],
                                      stderr=handle, stdout=subprocess.DEVNULL, timeout=600)
            if proc.returncode != 0:
                out.append((tool, "refused: " + err.read_text().strip().splitlines()[-1][:160]))
                continue
            try:
                inst = run_prog(dest, args, stdin, timeout=120)
            except subprocess.TimeoutExpired:
                out.append((tool, "timeout"))
                continue
            if (inst.returncode, inst.stdout, inst.stderr) != (original.returncode, original.stdout, original.stderr):
                out.append((tool, f"differs: exit {inst.returncode} (orig {original.returncode}) "
                                  f"stderr {inst.stderr[-120:]!r}"))
                continue
            if tool == "inscount" and sample != "forks":
                try:
                    got = results(inst, tool)["total"]
                except AssertionError:
                    out.append((tool, "no results"))
                    continue
                if (got != total) if not stripped else not (0 < got <= total):
                    out.append((tool, f"count {got} vs qemu {total}"))
                    continue
            out.append((tool, "ok"))
    return out


def main() -> int:
    """Run the sweep and print the failures and a summary."""
    from tests.support.samples import CLANG_VARIANTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=[], help="keep combinations naming all these substrings")
    parser.add_argument("--tools", default=",".join(TOOLS))
    opts = parser.parse_args()
    tools = opts.tools.split(",")
    combos = [(s, v, st) for v in CLANG_VARIANTS for s in SAMPLES for st in (False, True)
              if all(word in f"{s} {v} {'stripped' if st else 'unstripped'}" for word in opts.only)]
    start = time.monotonic()
    ok = bad = 0
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        futures = [(c, pool.submit(_one, *c, tools)) for c in combos]
        for (sample, variant, stripped), future in futures:
            for tool, outcome in future.result():
                name = f"{sample:9} {variant:24} {'stripped  ' if stripped else 'unstripped'} {tool:8}"
                print(("ok   " if outcome == "ok" else "FAIL ") + name + ("" if outcome == "ok" else " " + outcome),
                      flush=True)
                ok += outcome == "ok"
                bad += outcome != "ok"
    print(f"{ok + bad} combinations: {ok} identical, {bad} failed ({time.monotonic() - start:.0f}s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
