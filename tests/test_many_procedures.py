"""Programs with more procedures than a 16-bit index counts (Debian's cc1 has 99,409).

The generated program has ``FUNCTIONS`` small Thumb procedures (``f<i>``: ``movs r0,
#i & 255``, four NOPs, ``bx lr``: room for an entry patch of its own), more than 65,535,
and ``main`` calls a few of them, chosen on both sides of that bound, each a known number
of times (``_times``). bbcount names every executed block's
procedure: each called ``f<i>`` must have the count the generator says, under its own name,
and no other generated one may show up (a 16-bit procedure index would name the wrong
procedure past 65,535). InHost, and ReHost, whose host-side dispatcher gets the same facts
through the site table. The program's output is the original's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.big_program import build_generated
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog

FUNCTIONS = 70_000
CALLED = [0, 1, 65_534, 65_535, 65_536, 65_537, FUNCTIONS - 1]


def _times(i: int) -> int:
    """How often main calls ``f<i>``."""
    return 1 + i % 4


def _expected() -> tuple[bytes, int]:
    """What main prints and returns, computed here: ``long`` is 32-bit on ARM."""
    t = 0
    for i in CALLED:
        for _ in range(_times(i)):
            t = (t * 3 + (i & 255)) & 0xFFFFFFFF
    signed = t - (1 << 32) if t >> 31 else t
    return b"%d\n" % signed, t & 63


_MAIN = r"""
#include <stdio.h>
typedef int (*fn)(void);
extern fn table[];
static const int called[] = {CALLED};
int main(void) {
    long t = 0;
    for (unsigned k = 0; k < sizeof called / sizeof called[0]; k++)
        for (int n = 0; n < 1 + called[k] % 4; n++)
            t = t * 3 + table[called[k]]();
    printf("%ld\n", t);
    return (int)(t & 63);
}
"""


def _build() -> Path:
    procedures = ["\t.syntax unified", "\t.thumb", "\t.text"]
    for i in range(FUNCTIONS):
        procedures += [f"\t.global f{i}", f"\t.type f{i}, %function", "\t.thumb_func", f"f{i}:",
                       f"\tmovs r0, #{i & 255}", *["\tnop"] * 4, "\tbx lr", f"\t.size f{i}, .-f{i}"]
    procedures.append('\t.section .note.GNU-stack,"",%progbits')
    table = ("typedef int (*fn)(void);\n" + "".join(f"extern int f{i}(void);\n" for i in range(FUNCTIONS))
             + "fn table[] = {" + ", ".join(f"f{i}" for i in range(FUNCTIONS)) + "};\n")
    sources = {"main.c": _MAIN.replace("{CALLED}", "{" + ", ".join(map(str, CALLED)) + "}"),
               "table.c": table, "procedures.S": "\n".join(procedures) + "\n"}
    return build_generated("many", sources, ["-O1", "-mthumb"])


@pytest.mark.parametrize("mode", ["inhost", "rehost"])
def test_procedure_indexes_past_16_bits(mode: str, tmp_path: Path, rehost_server: str) -> None:
    program = _build()
    original = run_prog(place(program, tmp_path, "orig"))
    assert (original.stdout, original.returncode) == _expected()
    extra = ("--only", "f[0-9]*") + (("--mode", "rehost") if mode == "rehost" else ())
    image = instrument(program, "bbcount", tmp_path, *extra)
    if mode == "rehost":
        run, outcome = run_rehost(image, rehost_server)
        assert outcome.summary.complete
    else:
        run = run_prog(image)
    assert_same_behaviour(original, run)
    counts = {block["procedure"]: block["count"] for block in results(run, "bbcount")["counts"]
              if block["procedure"].startswith("f")}
    assert counts == {f"f{i}": _times(i) for i in CALLED}
