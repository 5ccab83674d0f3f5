"""Sweep build variants the test suite does not run through every counting tool.

Builds each sample (samples/*.c, samples/*.cpp) in each variant of tests/support/samples.py
SWEEP_VARIANTS (-O3, -funroll-loops, -flto, -fno-pic -mlong-calls, --gc-sections,
-z [no]separate-code, --hash-style=sysv, -z norelro, -Ttext-segment, a linker script with
.rodata first, NEON, -mno-unaligned-access; the sanitizers, -pg, --coverage, hardening,
-O0/-Og/-Os, frame pointers; gcc, clang and Debian's armel gcc), unstripped and stripped;
instruments it with each tool (inscount, bbcount, cachesim, memtrace) in InHost and, for the
variants named by --rehost, in ReHost too (through one rehost-server); runs the copy under
qemu-arm next to the original (with the variant's environment and loader root:
samples.run_environment, samples.lib_root) and lists what differs: a refused rewrite, a
crash, other output or exit status, other files written (gcov's .gcda, gprof's call arcs),
an inscount total that is not qemu's count, ReHost results that are not InHost's.

    PYTHONPATH=. nice -n 10 python3 scripts/variant_sweep.py [--jobs N] [--only WORD ...]
        [--tools T,T] [--samples S,S] [--variants V,V] [--strip both|yes|no] [--rehost V,V|all|none]

Prints one line per combination and a table of outcomes by variant ("not built": the
toolchain refused that sample in that variant); exit status 1 when anything failed. A full
sweep is long (hours on a busy 2-core machine): narrow it with --only (every word must
appear in "sample variant"), --samples, --variants and --strip.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SAMPLES = ["addresses", "sort", "hash", "matrix", "calls", "goto", "jumptable", "it_word", "forks", "unwind",
           "containers"]
TOOLS = ["inscount", "bbcount", "cachesim", "memtrace"]
#: Variants also run in ReHost by default (one of each kind: PIE, LTO, static with a linker script, clang).
REHOST_VARIANTS = ["O3-unroll", "O2-lto", "O2-rodata-first-static", "clang-O2-lto-lld"]


def run_one(sample: str, variant: str, stripped: bool, tools: list[str], modes: list[str],
            server: str | None) -> list[tuple[str, str]]:
    """Build ``sample`` in ``variant`` and judge each tool/mode on it (tests/support/sweep.py)."""
    from tests.support.samples import SampleBuildError, build, lib_root, run_environment
    from tests.support.sweep import judge_build

    try:
        binary = build(sample, variant)
    except SampleBuildError as exc:
        reason = "not built: " + str(exc).strip().splitlines()[-1][:100]
        return [(f"{tool}/{mode}", reason) for tool in tools for mode in modes]
    with tempfile.TemporaryDirectory(prefix="sweep.") as tmp:
        return judge_build(sample, binary, stripped, tools, modes, Path(tmp), server, run_environment(variant),
                           lib_root(variant))


def sweep(combos: list[tuple[str, str, bool]], tools: list[str], rehost: set[str], jobs: int) -> int:
    """Run ``combos`` (sample, variant, stripped); print each outcome and a table; the number failed."""
    from tests.support.rehost import ServerProcess

    server = ServerProcess() if rehost & {v for _, v, _ in combos} else None
    start = time.monotonic()
    table: dict[str, Counter[str]] = {}
    try:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [(c, pool.submit(run_one, *c, tools, ["inhost", "rehost"] if c[1] in rehost else ["inhost"],
                                       server.address if server else None)) for c in combos]
            for (sample, variant, stripped), future in futures:
                for name, outcome in future.result():
                    label = f"{sample:10} {variant:30} {'stripped  ' if stripped else 'unstripped'} {name:17}"
                    report_outcome(table, variant, label, outcome)
    finally:
        if server is not None:
            server.stop()
    return print_table(table, start)


def report_outcome(table: dict[str, Counter[str]], variant: str, label: str, outcome: str) -> None:
    """Print one combination's ``outcome`` ('ok' or what failed) after ``label`` and count its
    kind (its first word) in ``table`` under ``variant``."""
    print(("ok   " if outcome == "ok" else "FAIL ") + label + ("" if outcome == "ok" else outcome), flush=True)
    kind = "ok" if outcome == "ok" else outcome.split(":")[0].split(" ")[0]
    table.setdefault(variant, Counter())[kind] += 1


def print_table(table: dict[str, Counter[str]], start: float) -> int:
    """Print the outcomes by variant (``table``: variant -> kind of outcome -> count) and a
    summary line (time since ``start``, a monotonic clock's); return the number failed."""
    kinds = sorted({k for counts in table.values() for k in counts}, key=lambda k: (k != "ok", k))
    print(f"\n| variant | {' | '.join(kinds)} |\n|---|{'---:|' * len(kinds)}")
    for variant, counts in table.items():
        print(f"| {variant} | {' | '.join(str(counts[k]) for k in kinds)} |")
    runs = sum(sum(c.values()) for c in table.values())
    unbuilt = sum(c["not"] for c in table.values())  # "not built": the toolchain refused the variant
    bad = runs - unbuilt - sum(c["ok"] for c in table.values())
    print(f"\n{runs} runs: {runs - bad - unbuilt} identical, {bad} failed, {unbuilt} not built "
          f"({time.monotonic() - start:.0f}s)")
    return bad


def main(argv: list[str] | None = None, variants: dict | None = None) -> int:
    """Parse the command line (``variants``: the build variants to choose from) and sweep."""
    from tests.support.samples import SWEEP_VARIANTS

    variants = SWEEP_VARIANTS if variants is None else variants
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--jobs", type=int, default=1, help="builds judged at once (default 1)")
    parser.add_argument("--only", nargs="*", default=[], help="keep combinations naming all these words")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated tools (default: %(default)s)")
    parser.add_argument("--samples", default=",".join(SAMPLES), help="comma-separated samples (default: all)")
    parser.add_argument("--variants", default="", help="comma-separated variants (default: all of them)")
    parser.add_argument("--strip", choices=("both", "yes", "no"), default="both",
                        help="stripped builds, unstripped ones or both (default)")
    parser.add_argument("--rehost", default=",".join(REHOST_VARIANTS),
                        help="variants also run in ReHost, 'all' or 'none' (default: %(default)s)")
    opts = parser.parse_args(argv)
    chosen = opts.variants.split(",") if opts.variants else list(variants)
    unknown = [v for v in chosen if v not in variants]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(variants)}")
    rehost = set(variants) if opts.rehost == "all" else set() if opts.rehost == "none" else set(opts.rehost.split(","))
    strip = {"both": (False, True), "yes": (True,), "no": (False,)}[opts.strip]
    combos = [(s, v, st) for v in chosen for s in opts.samples.split(",") for st in strip
              if all(word in f"{s} {v}" for word in opts.only)]
    return 1 if sweep(combos, opts.tools.split(","), rehost, opts.jobs) else 0


if __name__ == "__main__":
    sys.exit(main())
