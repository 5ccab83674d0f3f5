"""Sweep firmware build variants the board tests do not use through every counting tool.

Builds each firmware program of samples/boards/ (crc, sort, filter, irq, and fpu, ctors,
big, which only the variants build; throw, C++ exceptions, which only the eh variants build)
for both MPS2 boards (or the boards a variant names) in each variant of
tests/support/firmware_variants.py (-O0/-O1/-O3/-Os/-Og, -funroll-loops, LTO,
--gc-sections, newlib-nano, clang linked by GNU ld or ld.lld, the vector table copied into
RAM, the image at a flash offset behind a boot table, functions run from RAM, .data's
initial values far from the code; picolibc with its own start-up and script; libopencm3-,
Zephyr-style and heap-less hand-written scripts; Rust's cortex-m-rt, NXP MCUXpresso and Kinetis
SDK, TI TivaWare and Corstone-300 TCM layouts, decision 0122); instruments it with each tool
(inscount, bbcount, cachesim, memtrace) in InHost and ReHost; runs the copy with ``anvil run --board`` and lists what
differs from the original (tests/support/firmware_judge.py): a refused rewrite, a hang,
other console output or exit status, counts that are not QEMU's, cache figures that are not
a reference cache's fed unicorn's accesses, a trace that is not unicorn's accesses, ReHost
results that are not InHost's.

    PYTHONPATH=. nice -n 10 python3 scripts/firmware_sweep.py [--jobs N] [--only WORD ...]
        [--tools T,T] [--programs P,P] [--boards B,B] [--variants V,V] [--modes M,M]

Prints one line per combination and a table of outcomes by variant ("not built": the
toolchain refused that program in that variant); exit status 1 when anything failed.
--only keeps the combinations whose "program variant board" holds every word given.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from variant_sweep import print_table, report_outcome  # noqa: E402 - found through the path set just above

MODES = ["inhost", "rehost"]


def run_one(program: str, variant: str, board: str, tools: list[str], modes: list[str]) -> list[tuple[str, str]]:
    """Build ``program`` for ``board`` in ``variant`` and judge each tool/mode on it."""
    from tests.support.boards import FirmwareBuildError
    from tests.support.firmware_judge import Original, judge_firmware
    from tests.support.firmware_variants import VARIANTS, build_variant

    try:
        image = build_variant(program, board, variant)
    except FirmwareBuildError as exc:
        reason = "not built: " + str(exc).strip().splitlines()[-1][:100]
        return [(f"{tool}/{mode}", reason) for tool in tools for mode in modes]
    try:
        original = Original(program, board, image)
    except Exception as exc:  # noqa: BLE001 - an oracle that cannot run the original is reported, not fatal
        return [("oracle", f"oracle: {type(exc).__name__}: {str(exc)[:120]}")]
    with tempfile.TemporaryDirectory(prefix="fwsweep.") as tmp:
        return judge_firmware(original, tools, modes, Path(tmp), VARIANTS[variant].instrument)


def sweep(combos: list[tuple[str, str, str]], tools: list[str], modes: list[str], jobs: int) -> int:
    """Run ``combos`` (program, variant, board); print each outcome and a table; the number failed."""
    start = time.monotonic()
    table: dict[str, Counter[str]] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [(c, pool.submit(run_one, *c, tools, modes)) for c in combos]
        for (program, variant, board), future in futures:
            for name, outcome in future.result():
                report_outcome(table, variant, f"{program:7} {variant:15} {board:11} {name:17}", outcome)
    return print_table(table, start)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and sweep."""
    from tests.support.boards import BOARDS
    from tests.support.firmware_judge import TOOLS
    from tests.support.firmware_variants import PROGRAMS, VARIANTS, applies

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--jobs", type=int, default=1, help="builds judged at once (default 1)")
    parser.add_argument("--only", nargs="*", default=[], help="keep combinations naming all these words")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated tools (default: %(default)s)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes (default: %(default)s)")
    parser.add_argument("--programs", default="", help="comma-separated programs (default: all, and those a "
                        "variant names: throw)")
    parser.add_argument("--boards", default="", help="comma-separated boards (default: the MPS2 AN385 and AN386, "
                        "and the boards a variant names)")
    parser.add_argument("--variants", default="", help="comma-separated variants (default: all of them)")
    opts = parser.parse_args(argv)
    chosen = opts.variants.split(",") if opts.variants else list(VARIANTS)
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    boards = opts.boards.split(",") if opts.boards else [*BOARDS, *{b for v in chosen for b in VARIANTS[v].boards}]
    programs = opts.programs.split(",") if opts.programs else [
        *PROGRAMS, *sorted({p for v in chosen for p in VARIANTS[v].programs} - set(PROGRAMS))]
    combos = [(p, v, b) for v in chosen for p in programs for b in boards
              if applies(p, v, b) and all(word in f"{p} {v} {b}" for word in opts.only)]
    return 1 if sweep(combos, opts.tools.split(","), opts.modes.split(","), opts.jobs) else 0


if __name__ == "__main__":
    sys.exit(main())
