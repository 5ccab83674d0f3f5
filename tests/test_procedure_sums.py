"""Per-procedure sums in a register (decision 0014, rewriter/emit/procedure_sums.py).

inscount reads its block counters only as per-procedure sums, so in T32 code with
d16-d31 free the emitter adds carrier weights to d31 and stores the sum into the
procedure's slot where control may leave. Checked:

- the algebra: on random procedure-shaped flow graphs walked at random, the carriers'
  weights times their counts add up to the blocks' sizes times theirs;
- end to end against ``qemu-arm -singlestep -d exec,nochain``: every procedure's count
  and the total, for a program whose flow leaves and re-enters procedures every way the
  scheme has to survive: a signal handler (entered by the kernel on top of a running
  procedure), longjmp out of nested calls, a library calling back into the program
  (qsort), recursion, switches (with and without a bounds check), the program's end inside a call chain (exit);
- the same against a shared library of ours that writes d31 (what the resets at return
  sites are for: Debian's libraries never do);
- Lua's every procedure against qemu: tests/test_lua.py.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from rewriter.emit.procedure_sums import carrier_weights
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.test_counter_placement import _random_plan, _walk


@pytest.mark.parametrize("seed", range(60))
def test_carrier_weights_add_up_to_the_weighted_sum(seed: int) -> None:
    rng = random.Random(seed)
    flow, plan = _random_plan(rng)
    if plan is None:
        return  # no plan: every block adds its own size (nothing to derive)
    sizes = [rng.randint(1, 300) for _ in flow.successors]
    weights = carrier_weights(plan, sizes)
    for _ in range(3):
        run = _walk(rng, flow, rng.randint(0, 400))
        assert run is not None
        blocks, branches = run
        counts = [branches.get(c, 0) if isinstance(c, tuple) else blocks[c] for c in plan.carriers]
        assert sum(w * n for w, n in zip(weights, counts)) == sum(s * n for s, n in zip(sizes, blocks))


FLOWS_C = r"""
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned acc;
static jmp_buf env;

static unsigned __attribute__((noinline)) work(unsigned x) {
    for (int i = 0; i < 40; i++)
        x = x * 33 + (x >> 3) + i;
    return x;
}

static void on_signal(int sig) {   /* entered by the kernel, returns through sigreturn */
    for (int i = 0; i < 3; i++)
        acc += work(sig + i);
}

static void __attribute__((noinline)) deep(int n) {
    if (n == 0)
        longjmp(env, 1);          /* skips the frames below */
    acc += work(n);
    deep(n - 1);
    acc ^= 1;                     /* never reached */
}

static int by_value(const void *a, const void *b) {   /* called back by the C library */
    return *(const int *)a - *(const int *)b;
}

static int __attribute__((noinline)) pick(int k) {
    switch (k & 7) {
    case 0: return work(k) & 3;
    case 1: return 7;
    case 2: acc += 2; /* fall through */
    case 3: return work(k + 1) & 1;
    case 5: return k * 3;
    default: return -1;
    }
}

int table_switch(int k);          /* a TBB with no bounds check before it: translated at run time */
__asm__(".text\n.thumb\n.syntax unified\n.p2align 1\n.global table_switch\n.type table_switch, %function\n"
        ".thumb_func\ntable_switch:\n"
        "  and r0, r0, #3\n  tbb [pc, r0]\n"
        "1: .byte (2f - 1b) / 2, (3f - 1b) / 2, (4f - 1b) / 2, (4f - 1b) / 2\n"
        "2: movs r0, #5\n  bx lr\n3: movs r0, #9\n  bx lr\n4: adds r0, r0, #1\n  bx lr\n"
        ".size table_switch, . - table_switch\n");

static int __attribute__((noinline)) classify(int k) {
    switch (k) {                  /* bounds-checked: TBB/TBH relocated with a table of its own */
    case 0: return work(k) & 7;
    case 1: case 4: return 11;
    case 2: acc += 5; /* fall through */
    case 3: return work(k + 2) & 3;
    case 6: return k * 5;
    case 9: acc ^= 3; return 1;
    case 12: return work(acc) & 15;
    default: return -2;
    }
}

static unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static unsigned __attribute__((noinline)) plus1(unsigned x) { return x + 1; }
static unsigned __attribute__((noinline)) times3(unsigned x) { return x * 3; }
static unsigned (*volatile ops[2])(unsigned) = {plus1, times3};

static unsigned __attribute__((noinline)) tail(unsigned x) {
    return ops[x & 1](x);         /* a jump through a register out of the procedure */
}

static unsigned __attribute__((noinline)) interp(const unsigned char *code, unsigned acc) {
    static void *const op[] = {&&add, &&dbl, &&out, &&end};
#define NEXT goto *op[*code++]    /* computed gotos within the procedure */
    NEXT;
add: acc += 3; NEXT;
dbl: acc = acc * 2 + work(acc); NEXT;
out: acc = tail(acc); NEXT;
end: return acc;
}

static const unsigned char program[] = {0, 1, 0, 2, 1, 0, 0, 2, 2, 1, 3};

static void __attribute__((noinline)) bump(void) { acc++; }
static volatile int stay[2] = {0, 0};

static unsigned __attribute__((noinline)) hop(unsigned x, int n) {
    static void *const where[] = {&&after, &&fin};
    bump();
after:                            /* a return site (its sum is reset there) and a goto's target */
    x = x * 5 + 1;
    if (n-- > 0)
        goto *where[stay[n & 1]];
    goto *where[1];
fin:
    return x;
}

static void __attribute__((noinline)) finish(unsigned v) {
    printf("%u %u\n", acc, v);
    exit(v & 1);                  /* the program ends two calls down */
}

int main(int argc, char **argv) {
    (void)argv;
    int v[300];
    signal(SIGUSR1, on_signal);
    for (int i = 0; i < 300; i++)
        v[i] = (i * 7919) % 300;
    for (int r = 0; r < 12 + argc; r++) {
        acc += work(r);
        if (r % 3 == 0)
            raise(SIGUSR1);
        if (!setjmp(env))
            deep(4 + r % 3);
        acc += pick(r);
        acc += classify(r * 7 % 15);
        acc += table_switch(r);
        acc += interp(program + r % 4, r);
        acc += hop(r, r % 5);
        v[r] = -v[r];
        qsort(v, 300, sizeof v[0], by_value);
    }
    finish(acc + v[17] + fib(15));
    return 0;
}
"""


def _build(tmp_path: Path, flags: list[str]) -> Path:
    source = tmp_path / "flows.c"
    source.write_text(FLOWS_C)
    binary = tmp_path / "flows"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", "-mthumb", *flags, str(source), "-o", str(binary)], check=True)
    return binary


@pytest.mark.parametrize("flags", [[], ["-static"], ["-fpie", "-pie"], ["-O1", "-fno-omit-frame-pointer"]],
                         ids=["dyn", "static", "pie", "O1-fp"])
def test_every_procedure_sum_equals_qemu(flags: list[str], tmp_path: Path) -> None:
    binary = _build(tmp_path, flags)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    pcs = exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed)

    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    report = json.loads((tmp_path / "inst" / "prog.anvil.json").read_text())
    assert report["block_counters"]["in_register_sums"] > 0  # the register scheme is what ran
    counted = results(inst, "inscount")
    assert counted["total"] == sum(pcs.values())
    expected = {}
    for proc in load_binary(str(binary)).procedures:
        n = sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end)
        if n:
            expected[proc.name] = n
    assert counted["procedures"] == expected



CLOBBER_LIB_C = r"""
/* A shared library (it runs as it is, never instrumented) that writes the register the
 * instrumented program keeps its running sums in: what the resets at return sites are for. */
void clobber(unsigned x) {
    if (x & 2)
        __asm__ volatile("vmov.i64 d31, #0xff00ff00ff00ff00" ::: "d31");
    else
        __asm__ volatile("vmov.i64 d31, #0x00000000000000ff" ::: "d31");
}
"""

CLOBBER_MAIN_C = r"""
#include <stdio.h>
void clobber(unsigned x);
static unsigned __attribute__((noinline)) mixed(unsigned x) {
    for (int i = 0; i < 30; i++) {
        x = x * 33 + (x >> 3) + i;
        if (x & 1)
            clobber(x);           /* the sum so far is stored before; d31 comes back wrong */
        x ^= x >> 5;              /* counted after the return */
    }
    return x;
}
int main(void) {
    unsigned acc = 0;
    for (int r = 0; r < 20; r++) {
        acc += mixed(acc + r);
        clobber(acc);
        acc ^= r;
    }
    printf("%u\n", acc);
    return 0;
}
"""


def build_with_clobber_library(tmp_path: Path, library_source: str) -> Path:
    """CLOBBER_MAIN_C linked with a shared library ``libclobber.so`` built from ``library_source``
    (which may use d16-d31); returns the program."""
    (tmp_path / "clobber.c").write_text(library_source)
    (tmp_path / "main.c").write_text(CLOBBER_MAIN_C)
    gcc = ["arm-linux-gnueabihf-gcc", "-O2", "-mthumb"]
    subprocess.run([*gcc, "-mfpu=neon", "-shared", "-fPIC", str(tmp_path / "clobber.c"),
                    "-o", str(tmp_path / "libclobber.so")], check=True)
    binary = tmp_path / "main"
    subprocess.run([*gcc, str(tmp_path / "main.c"), f"-L{tmp_path}", "-lclobber", f"-Wl,-rpath,{tmp_path}",
                    "-o", str(binary)], check=True)
    return binary


def test_sums_survive_a_library_that_writes_d31(tmp_path: Path) -> None:
    """Where a call returns from code that is not instrumented (a shared library), the sum
    starts again from zero: a library that writes d31 would otherwise add its garbage to
    the next store. Every procedure's count against qemu's."""
    binary = build_with_clobber_library(tmp_path, CLOBBER_LIB_C)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 0, original.stderr
    pcs = exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed)
    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    report = json.loads((tmp_path / "inst" / "prog.anvil.json").read_text())
    assert report["block_counters"]["in_register_sums"] > 0
    counted = results(inst, "inscount")
    assert counted["total"] == sum(pcs.values())
    for proc in load_binary(str(binary)).procedures:
        n = sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end)
        assert counted["procedures"].get(proc.name, 0) == n, proc.name
