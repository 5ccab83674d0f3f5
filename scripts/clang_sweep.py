"""Sweep clang/lld (and clang/GNU ld) builds of the C samples through every counting tool.

The clang variants of tests/support/samples.py (CLANG_VARIANTS), judged as
scripts/variant_sweep.py judges its variants (same options): each sample unstripped and
stripped through inscount, bbcount and cachesim, run under qemu-arm next to the original.

    PYTHONPATH=. python3 scripts/clang_sweep.py [--jobs N] [--only WORD ...] [--tools T,T]

Prints one line per combination and a summary table; exit status 1 when anything failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SAMPLES = "sort,hash,calls,matrix,addresses,jumptable,forks"

if __name__ == "__main__":
    from variant_sweep import main

    from tests.support.samples import CLANG_VARIANTS

    sys.exit(main(["--samples", SAMPLES, "--rehost", "none", *sys.argv[1:]], CLANG_VARIANTS))
