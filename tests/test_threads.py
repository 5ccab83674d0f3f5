"""Programs that start threads: counters add with LDREX/STREX, and a thread's exit does
not end the program (decision 0003, runtime_stubs/arm/anvil_rt.c).

Four threads run the same loop at once under qemu-arm (which runs guest threads in
parallel). With plain load/add/store counters a fifth of the counts went missing; a
static program also wrote its results when the first thread exited (glibc ends a thread
with the exit system call). Checked against ``qemu-arm -singlestep -d exec,nochain``:
dynamic, every block's count; static (where glibc's own lock paths vary from run to
run), the threads' procedure and main exactly.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog

THREADS_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4
static unsigned results[N];

static void *work(void *arg) {
    int id = (int)(long)arg;
    unsigned *buf = calloc(4096, sizeof *buf);
    unsigned h = id;
    for (int r = 0; r < 60; r++)
        for (int i = 0; i < 4096; i++) {
            buf[i] = buf[(i * 7) & 4095] + h;
            h = h * 31 + buf[i];
        }
    results[id] = h;
    free(buf);
    return 0;
}

int main(void) {
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < N; i++) pthread_join(t[i], 0);
    unsigned total = 0;
    for (int i = 0; i < N; i++) total ^= results[i];
    printf("total %u\n", total);
    return 0;
}
"""


def _build(tmp_path: Path, flags: list[str]) -> Path:
    source = tmp_path / "threads.c"
    source.write_text(THREADS_C)
    binary = tmp_path / "threads"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", *flags, str(source), "-o", str(binary), "-lpthread"],
                   check=True)
    return binary


@pytest.mark.parametrize("flags", [["-mthumb"], ["-mthumb", "-static"]], ids=["dyn", "static"])
def test_counts_of_threads(flags: list[str], tmp_path: Path) -> None:
    binary = _build(tmp_path, flags)
    ir = load_binary(str(binary))
    assert ir.threaded
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    pcs = exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed)

    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert json.loads((tmp_path / "inst" / "prog.anvil.json").read_text())["block_counters"]["atomic"]
    counted = results(inst, "inscount")
    for proc in ir.procedures:
        if proc.name in ("work", "main"):
            expected = sum(n for pc, n in pcs.items() if proc.address <= pc < proc.end)
            assert counted["procedures"][proc.name] == expected, proc.name
    if "-static" in flags:
        return
    assert counted["total"] == sum(pcs.values())
    inst = run_prog(instrument(binary, "bbcount", tmp_path))
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    wrong = {b["address"]: (b["count"], pcs[b["address"]]) for b in counts if b["count"] != pcs[b["address"]]}
    assert not wrong, f"blocks whose count differs from qemu's (ours, qemu): {list(wrong.items())[:5]}"
