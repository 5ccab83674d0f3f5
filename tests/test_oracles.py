"""Tests of the oracles themselves (tests/oracles), against answers known another way.

* cache model: hand-made address streams whose hits/misses are reasoned out,
  plus a comparison with an LRU stack-distance computation;
* qemu trace: hand-written assembly loops whose instruction counts are known
  by construction (prologue + N * body + epilogue), a dynamically linked PIE;
* unicorn: the same loops, a routine whose exact access list is known, and
  cross-checks against qemu (per-PC counts, memory-op counts, output).
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType

import pytest
from elftools.elf.elffile import ELFFile

from tests.oracles import cache_model
from tests.oracles.cache_model import ReferenceCache, simulate
from tests.oracles.freestanding import CC, build_asm, build_freestanding, compiler_available


@pytest.fixture(autouse=True)
def _toolchain() -> None:
    """The oracles need the cross compiler and qemu-arm (scripts/bootstrap.sh installs them)."""
    if not compiler_available():
        pytest.fail(f"{CC} not installed: run scripts/bootstrap.sh")
    if shutil.which("qemu-arm") is None:
        pytest.fail("qemu-arm not installed: run scripts/bootstrap.sh")


# Kept as markers on the tests that need them (documentation of the dependency).
needs_cc = pytest.mark.needs_cc
needs_qemu = pytest.mark.needs_qemu


@pytest.fixture(scope="module")
def qt() -> ModuleType:
    """The qemu oracle module."""
    from tests.oracles import qemu_trace

    return qemu_trace


@pytest.fixture(scope="module")
def ut() -> ModuleType:
    """The unicorn oracle module."""
    from tests.oracles import unicorn_trace

    return unicorn_trace


def symbol(binary: Path, name: str) -> int:
    """Return the value of symbol ``name`` in ``binary`` with the Thumb bit cleared."""
    with open(binary, "rb") as fh:
        symtab = ELFFile(fh).get_section_by_name(".symtab")
        assert symtab is not None, f"{binary} has no symbol table"
        matches = symtab.get_symbol_by_name(name)
        assert matches, f"{name} not in {binary}"
        return matches[0]["st_value"] & ~1


# --------------------------------------------------------------------------------------------
# Cache model
# --------------------------------------------------------------------------------------------


def outcomes(cache: ReferenceCache, addrs: list[int], is_store: bool = False) -> str:
    """Access ``addrs`` in order; return 'H'/'M' per access."""
    return "".join("H" if cache.access(a, is_store) else "M" for a in addrs)


def test_cache_direct_mapped_conflict() -> None:
    cache = ReferenceCache(size=256, assoc=1, line=16)  # 16 sets
    assert cache.sets == 16
    # 0x000 and 0x100 share set 0: every alternate access evicts the other.
    assert outcomes(cache, [0x000, 0x100] * 4) == "M" * 8
    # 0x010 is set 1: unaffected by the ping-pong, then hits.
    assert outcomes(cache, [0x010, 0x01F, 0x010]) == "MHH"
    assert cache.index_tag(0x1234) == ((0x1234 // 16) % 16, 0x1234 // 16 // 16)


def test_cache_same_line_and_straddling_access() -> None:
    cache = ReferenceCache(size=1024, assoc=2, line=64)
    # Any byte of a line hits after the first; an access starting at 0x3F
    # touches only line 0 even if it is 8 bytes long.
    assert outcomes(cache, [0x00, 0x3F, 0x20, 0x40]) == "MHHM"


def test_cache_lru_eviction_order() -> None:
    cache = ReferenceCache(size=64, assoc=2, line=32)  # one set, two ways
    a, b, c = 0x000, 0x100, 0x200
    # A B A C: C evicts B (least recently used), not A.
    assert outcomes(cache, [a, b, a, c]) == "MMHM"
    assert cache.contains(a) and cache.contains(c) and not cache.contains(b)
    # A hits (now C is LRU); B evicts C; C evicts A.
    assert outcomes(cache, [a, b, c]) == "HMM"
    assert cache.contains(b) and cache.contains(c) and not cache.contains(a)


def test_cache_fully_associative_cyclic() -> None:
    ways = 8
    cache = ReferenceCache(size=ways * 32, assoc=ways, line=32)
    assert cache.sets == 1
    fits = [i * 32 for i in range(ways)]
    assert outcomes(cache, fits * 3) == "M" * ways + "H" * (2 * ways)
    # One line more than the ways, cycled: LRU always evicts the next one needed.
    cache = ReferenceCache(size=ways * 32, assoc=ways, line=32)
    too_many = [i * 32 for i in range(ways + 1)]
    assert outcomes(cache, too_many * 3) == "M" * (3 * (ways + 1))


def test_cache_store_write_allocate_and_counters() -> None:
    cache = ReferenceCache(size=128, assoc=2, line=16)
    assert cache.miss_rate == 0.0
    assert not cache.access(0x40, is_store=True)  # store miss allocates...
    assert cache.access(0x44)  # ...so the load hits
    assert cache.access(0x48, is_store=True)
    assert not cache.access(0x1000)
    assert cache.stats() == {
        "loads": 2, "load_misses": 1, "stores": 2, "store_misses": 1, "accesses": 4, "misses": 2,
    }
    assert (cache.load_hits, cache.store_hits) == (1, 1)
    assert cache.miss_rate == 0.5


@pytest.mark.parametrize(
    ("size", "assoc", "line"),
    [(256, 1, 24), (96, 1, 32), (100, 2, 16), (0, 1, 16), (256, 0, 16), (256, 3, 16), (-64, 1, 16)],
)
def test_cache_rejects_bad_geometry(size: int, assoc: int, line: int) -> None:
    with pytest.raises(ValueError):
        ReferenceCache(size, assoc, line)


def test_simulate_formats() -> None:
    stream = [("L", 0x0, 4), ("S", 0x4, 4), ("L", 0x100, 1), ("S", 0x0, 8)]
    expected = {"loads": 2, "load_misses": 2, "stores": 2, "store_misses": 0, "accesses": 4, "misses": 2}
    assert simulate(stream, 1024, 4, 16) == expected
    assert simulate([(a, k == "S") for k, a, _ in stream], 1024, 4, 16) == expected
    with pytest.raises(ValueError):
        simulate([("X", 0, 4)], 1024, 4, 16)


def lru_by_stack_distance(addrs: list[tuple[int, bool]], size: int, assoc: int, line: int) -> dict[str, int]:
    """LRU computed another way: a reference hits iff fewer than ``assoc`` distinct
    other lines of its set were touched since its previous reference."""
    sets = size // (assoc * line)
    history: dict[int, list[int]] = defaultdict(list)  # set -> lines in access order
    stats = Counter()
    for addr, is_store in addrs:
        blk = addr // line
        seq = history[blk % sets]
        hit = False
        if blk in seq:
            last = len(seq) - 1 - seq[::-1].index(blk)
            hit = len(set(seq[last + 1:])) < assoc
        seq.append(blk)
        kind = "store" if is_store else "load"
        stats[kind + "s"] += 1
        stats[kind + "_misses"] += not hit
    return {
        "loads": stats["loads"], "load_misses": stats["load_misses"],
        "stores": stats["stores"], "store_misses": stats["store_misses"],
        "accesses": stats["loads"] + stats["stores"],
        "misses": stats["load_misses"] + stats["store_misses"],
    }


@pytest.mark.parametrize(("size", "assoc", "line"), [(512, 1, 32), (512, 2, 32), (1024, 4, 16), (256, 8, 32)])
def test_cache_matches_stack_distance(size: int, assoc: int, line: int) -> None:
    rng = random.Random(size * 31 + assoc * 7 + line)
    stream = [(rng.randrange(0, 4096), rng.random() < 0.3) for _ in range(3000)]
    assert simulate(stream, size, assoc, line) == lru_by_stack_distance(stream, size, assoc, line)
    assert cache_model.ReferenceCache(size, assoc, line).sets == size // (assoc * line)


# --------------------------------------------------------------------------------------------
# Hand-written freestanding programs
# --------------------------------------------------------------------------------------------

LOOP_N = 1000

# Prologue 3 + N * body 6 (IT and the mostly-failing addeq included) + epilogue 3.
THUMB_LOOP = f"""
    .syntax unified
    .thumb
    .text
    .global _start
    .thumb_func
_start:
    movw r0, #{LOOP_N}
    movs r1, #0
    movs r2, #0
loop:
    adds r1, #1
    cmp r1, #3
it_insn:
    it eq
pred_insn:
    addeq r2, #1
    subs r0, #1
    bne loop
    mov r0, r2
    movs r7, #1
svc_insn:
    svc #0
"""
THUMB_LOOP_COUNT = 3 + 6 * LOOP_N + 3

# Prologue 3 + N * body 5 (the mostly-failing addeq included) + epilogue 3.
ARM_LOOP = f"""
    .syntax unified
    .arm
    .text
    .global _start
_start:
    mov r0, #{LOOP_N}
    mov r1, #0
    mov r2, #0
loop:
    add r1, r1, #1
    cmp r1, #3
pred_insn:
    addeq r2, r2, #1
    subs r0, r0, #1
    bne loop
    mov r0, r2
    mov r7, #1
svc_insn:
    svc #0
"""
ARM_LOOP_COUNT = 3 + 5 * LOOP_N + 3

# One of each kind of memory instruction, then write(1, "hi\n", 3) and exit(42).
ACCESS_ROUTINE = """
    .syntax unified
    .thumb
    .fpu vfpv3-d16
    .text
    .global _start
    .thumb_func
_start:
    movw r0, #:lower16:buf
    movt r0, #:upper16:buf
push_insn:
    push {r4, r5, r6, lr}
ldm_insn:
    ldm r0, {r1, r2, r3}
    add r4, r0, #32
stm_insn:
    stm r4, {r1, r2}
ldrd_insn:
    ldrd r2, r3, [r0, #8]
strd_insn:
    strd r2, r3, [r0, #16]
    ldrb r1, [r0, #1]
    strh r1, [r0, #2]
vldr_insn:
    vldr d0, [r0]
    vstr s0, [r0, #40]
vpush_insn:
    vpush {d8, d9}
    vpop {d8, d9}
pop_insn:
    pop {r4, r5, r6, lr}
    movs r0, #1
    movw r1, #:lower16:msg
    movt r1, #:upper16:msg
    movs r2, #3
    movs r7, #4
    svc #0
    movs r0, #42
    movs r7, #1
    svc #0
    .data
    .align 3
buf:
    .word 0x11111111, 0x22222222, 0x33333333, 0x44444444
    .space 48
msg:
    .ascii "hi\\n"
"""


def expected_routine_accesses(buf: int, sp0: int) -> list[tuple[str, int, int]]:
    """The access list ACCESS_ROUTINE must produce, one entry per register transferred."""
    sp = sp0 - 16
    return [
        *[("S", sp + 4 * i, 4) for i in range(4)],  # push {r4, r5, r6, lr}
        *[("L", buf + 4 * i, 4) for i in range(3)],  # ldm r0, {r1-r3}
        ("S", buf + 32, 4), ("S", buf + 36, 4),  # stm r4, {r1, r2}
        ("L", buf + 8, 4), ("L", buf + 12, 4),  # ldrd
        ("S", buf + 16, 4), ("S", buf + 20, 4),  # strd
        ("L", buf + 1, 1),  # ldrb
        ("S", buf + 2, 2),  # strh
        ("L", buf, 8),  # vldr d0
        ("S", buf + 40, 4),  # vstr s0
        ("S", sp - 16, 8), ("S", sp - 8, 8),  # vpush {d8, d9}
        ("L", sp - 16, 8), ("L", sp - 8, 8),  # vpop {d8, d9}
        *[("L", sp + 4 * i, 4) for i in range(4)],  # pop {r4, r5, r6, lr}
    ]


# A bubble pass with a store inside an IT block: 4 iterations, 3 swaps.  Under
# unicorn 2.1 with memory hooks this loops forever unless the oracle works around
# the stale IT state (see unicorn_trace).  Prologue 4 + 4 * 8 + epilogue 3.
IT_STORE_LOOP = """
    .syntax unified
    .thumb
    .text
    .global _start
    .thumb_func
_start:
    movw r3, #:lower16:arr
    movt r3, #:upper16:arr
    add r0, r3, #16
    movs r4, #0
loop:
    ldr r2, [r3]
    ldr r1, [r3, #4]!
    cmp r2, r1
    itt gt
    strdgt r1, r2, [r3, #-4]
    addgt r4, #1
    cmp r3, r0
    bne loop
    mov r0, r4
    movs r7, #1
    svc #0
    .data
arr:
    .word 5, 9, 8, 7, 6
"""
IT_STORE_LOOP_COUNT = 4 + 4 * 8 + 3


# --------------------------------------------------------------------------------------------
# qemu trace
# --------------------------------------------------------------------------------------------


@needs_cc
@needs_qemu
def test_qemu_thumb_loop_count(qt: ModuleType) -> None:
    binary = build_asm(THUMB_LOOP, "thumb_loop")
    result = qt.trace_pcs(binary)
    assert result.returncode == 1  # addeq ran once (r1 == 3)
    assert result.load_bias == 0
    assert result.total == THUMB_LOOP_COUNT
    pcs = qt.exe_pcs(result, binary)
    assert pcs == result.pcs
    # Logged PCs have bit 0 clear although this is Thumb code.
    assert all(pc % 2 == 0 for pc in pcs)
    assert pcs[symbol(binary, "it_insn")] == LOOP_N  # the IT instruction itself is counted
    assert pcs[symbol(binary, "pred_insn")] == LOOP_N  # also when its condition fails
    assert pcs[symbol(binary, "svc_insn")] == 1  # the exit svc is counted
    assert pcs[symbol(binary, "_start")] == 1


@needs_cc
@needs_qemu
def test_qemu_arm_loop_count(qt: ModuleType) -> None:
    binary = build_asm(ARM_LOOP, "arm_loop")
    result = qt.trace_pcs(binary)
    assert result.returncode == 1
    assert result.total == ARM_LOOP_COUNT
    pcs = qt.exe_pcs(result, binary)
    assert pcs[symbol(binary, "pred_insn")] == LOOP_N  # failing conditional A32 instructions count
    assert pcs[symbol(binary, "svc_insn")] == 1


@needs_cc
@needs_qemu
def test_qemu_memory_ops_one_per_register(qt: ModuleType) -> None:
    binary = build_asm(ACCESS_ROUTINE, "access_routine")
    result = qt.trace_pcs(binary, memory_ops=True)
    assert result.returncode == 42
    assert result.stdout == b"hi\n"
    ops = result.mem_ops
    assert ops[symbol(binary, "push_insn")] == (0, 4)
    assert ops[symbol(binary, "ldm_insn")] == (3, 0)
    assert ops[symbol(binary, "stm_insn")] == (0, 2)
    assert ops[symbol(binary, "ldrd_insn")] == (2, 0)
    assert ops[symbol(binary, "strd_insn")] == (0, 2)
    assert ops[symbol(binary, "vldr_insn")] == (1, 0)
    assert ops[symbol(binary, "vpush_insn")] == (0, 2)
    assert ops[symbol(binary, "pop_insn")] == (4, 0)
    expected = expected_routine_accesses(0, 0)
    assert qt.access_counts(result) == Counter(kind for kind, _, _ in expected)


def test_qemu_log_parser_chunking() -> None:
    from tests.oracles.qemu_trace import _LogParser

    log = (
        b"host mmap_min_addr=0x1000\nstart    end      size     prot\n"
        b"00010000-00011000 00001000 r-x\nend_code    0x00010548\nstart_code  0x00010000\n"
        b"entry       0x3fff1760\n"
        b"Trace 0: 0x7f00000000c0 [00800480/00010098/00000000/00000201] _start\n"
        b"Trace 0: 0x7f00000001c0 [00000480/0001009c/00000000/00000201] \n"
        b" ---- 0001009c 00000000 00000000\n qemu_ld_i32 tmp5,tmp6,al+leul,0\n"
        b" qemu_st_i64 tmp6,tmp7,al4+leq,0\n ---- 000100a0 00000000 00000000\n"
        b"Trace 0: 0x7f00000001c0 [c8800480/00010098/00000000/00000201]\n"
    ) * 3
    whole = _LogParser(True, None)
    whole.feed(log)
    whole.close()
    assert whole.pcs() == Counter({0x10098: 6, 0x1009C: 3})
    assert whole.code == {b"end_code": 0x10548, b"start_code": 0x10000}
    assert whole.ops == {0x1009C: (1, 1), 0x100A0: (0, 0)}
    rng = random.Random(7)
    for _ in range(20):
        parser = _LogParser(True, None)
        pos = 0
        while pos < len(log):
            step = rng.randrange(1, 90)
            parser.feed(log[pos:pos + step])
            pos += step
        parser.close()
        assert (parser.pcs(), parser.code, parser.ops) == (whole.pcs(), whole.code, whole.ops)


def test_qemu_log_parser_interrupted_block() -> None:
    """-d int in system mode: a Trace line followed by an interrupt whose handler returns to
    the same PC did not run (the block stopped before its first instruction); one followed
    by a return to the next PC did. Semihosting calls are not interrupts."""
    from tests.oracles.qemu_trace import _LogParser

    def trace(pc: int) -> bytes:
        return f"Trace 0: 0x7f0000000000 [00800408/{pc:08x}/00000010/ff000201] main\n".encode()

    def interrupt(body: bytes) -> bytes:
        return (b"Taking exception 5 [IRQ] on CPU 0\n...taking pending nonsecure exception 15\n" + body
                + b"Taking exception 8 [QEMU v7M exception exit] on CPU 0\n"
                  b"Exception return: magic PC fffffff9 previous exception 15\n...successful exception return\n")

    def stopped(pc: int) -> bytes:
        return f"Stopped execution of TB chain before 0x7f0000000040 [{pc:08x}] main\n".encode()

    handler = trace(0x1B8) + trace(0x1BA)
    log = (trace(0x230) + interrupt(handler) + trace(0x232)  # ran, then the handler
           + trace(0x234) + interrupt(handler) + trace(0x234)  # stopped before it ran
           + trace(0x236) + b"Taking exception 16 [Semihosting call] on CPU 0\n" + trace(0x236)
           # QEMU says it stopped: with an interrupt after it, or none (masked, a timer or I/O)
           + trace(0x238) + stopped(0x238) + interrupt(handler) + trace(0x238)
           + trace(0x23A) + stopped(0x23A) + trace(0x23A))
    expected = Counter({0x230: 1, 0x232: 1, 0x234: 1, 0x236: 2, 0x238: 1, 0x23A: 1, 0x1B8: 3, 0x1BA: 3})
    for interrupts in (True, False):
        parser = _LogParser(False, None, interrupts=interrupts)
        for i in range(0, len(log), 37):
            parser.feed(log[i:i + 37])
        parser.close()
        if interrupts:
            assert parser.pcs() == expected
        else:  # without -d int only QEMU's own word is used: the 0x234 case is not seen
            assert parser.pcs() == expected + Counter({0x234: 1})


HELLO_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    char buf[64] = {0};
    fgets(buf, sizeof buf, stdin);
    printf("%s argc=%d in=%s", argv[0], argc, buf);
    return 3;
}
"""


@needs_cc
@needs_qemu
@pytest.mark.parametrize("pie", [True, False])
def test_qemu_dynamic_executable(qt: ModuleType, tmp_path: Path, pie: bool) -> None:
    src = tmp_path / "hello.c"
    src.write_text(HELLO_C)
    binary = tmp_path / "hello"
    subprocess.run([CC, "-O2", "-pie" if pie else "-no-pie", "-o", str(binary), str(src)], check=True)
    result = qt.trace_pcs(binary, args=["a", "b"], stdin=b"xyz\n", argv0="myprog")
    assert result.returncode == 3
    assert result.stdout == b"myprog argc=3 in=xyz\n"
    if pie:
        assert result.load_bias != 0 and result.load_bias % 0x1000 == 0
    else:
        assert result.load_bias == 0
    pcs = qt.exe_pcs(result, binary)
    _, ranges = qt.executable_segments(binary)
    assert pcs and all(any(s <= pc < e for s, e in ranges) for pc in pcs)
    assert pcs[symbol(binary, "main")] == 1
    # ld.so and libc dominate; the executable itself runs only ~100 instructions.
    assert result.total > 10 * sum(pcs.values())


# --------------------------------------------------------------------------------------------
# unicorn
# --------------------------------------------------------------------------------------------


@needs_cc
@pytest.mark.parametrize(("source", "count"), [(THUMB_LOOP, THUMB_LOOP_COUNT), (ARM_LOOP, ARM_LOOP_COUNT)])
def test_unicorn_loop_count(ut: ModuleType, source: str, count: int) -> None:
    binary = build_asm(source, "loop")
    result = ut.run_freestanding(binary, count_instructions=True)
    assert result.exit_status == 1
    assert result.instructions == count
    assert result.pcs[symbol(binary, "pred_insn")] == LOOP_N
    assert result.pcs[symbol(binary, "svc_insn")] == 1
    assert result.accesses == []


@needs_cc
def test_unicorn_access_list(ut: ModuleType) -> None:
    binary = build_asm(ACCESS_ROUTINE, "access_routine")
    result = ut.run_freestanding(binary)
    assert result.exit_status == 42
    assert result.stdout == b"hi\n"
    assert result.stderr == b""
    assert result.accesses == expected_routine_accesses(symbol(binary, "buf"), ut.INITIAL_SP)
    assert result.counts() == Counter({"L": 13, "S": 12})
    assert result.instructions is None


@needs_cc
def test_unicorn_store_in_it_block(ut: ModuleType) -> None:
    binary = build_asm(IT_STORE_LOOP, "it_store")
    result = ut.run_freestanding(binary, count_instructions=True, timeout_s=10)
    assert result.exit_status == 3
    assert result.counts() == Counter({"L": 8, "S": 6})
    assert result.instructions == IT_STORE_LOOP_COUNT


@needs_cc
def test_unicorn_rejects_dynamic(ut: ModuleType, tmp_path: Path) -> None:
    src = tmp_path / "m.c"
    src.write_text("int main(void) { return 0; }\n")
    binary = tmp_path / "m"
    subprocess.run([CC, "-o", str(binary), str(src)], check=True)
    with pytest.raises(ut.UnicornError):
        ut.run_freestanding(binary)


# --------------------------------------------------------------------------------------------
# Cross-checks between the oracles on the freestanding C samples
# --------------------------------------------------------------------------------------------


@needs_cc
@needs_qemu
@pytest.mark.parametrize("flags", [(), ("-marm",)], ids=["thumb", "arm"])
def test_memwalk_unicorn_agrees_with_qemu(qt: ModuleType, ut: ModuleType, flags: tuple[str, ...]) -> None:
    binary = build_freestanding("memwalk", flags)
    q = qt.trace_pcs(binary, memory_ops=True)
    u = ut.run_freestanding(binary, count_instructions=True)
    assert (u.exit_status, u.stdout) == (q.returncode, q.stdout) == (0, q.stdout)
    assert u.stdout.startswith(b"memwalk checksum 0x")
    assert u.pcs == qt.exe_pcs(q, binary)  # same instructions, same number of times
    assert u.instructions == q.total
    # memwalk has no predicated memory instructions, so qemu's count is exact.
    assert u.counts() == qt.access_counts(q)
    sizes = Counter(size for _, _, size in u.accesses)
    assert set(sizes) == {1, 2, 4, 8}


@needs_cc
@needs_qemu
def test_bubble_under_unicorn(ut: ModuleType) -> None:
    binary = build_freestanding("bubble")
    reference = subprocess.run(["qemu-arm", str(binary)], capture_output=True, check=False)
    assert reference.returncode == 0
    result = ut.run_freestanding(binary, timeout_s=60)
    assert (result.exit_status, result.stdout) == (0, reference.stdout)
    # 500 ints: fill stores 500, the final scan loads 2 * 499 + 1, bubble sort far more.
    assert result.counts()["L"] > 500 * 499 // 2


@needs_cc
def test_cache_model_on_memwalk_compulsory_misses(ut: ModuleType) -> None:
    accesses = ut.run_freestanding(build_freestanding("memwalk")).accesses
    line, size = 64, 1 << 20
    lines = {addr // line for _, addr, _ in accesses}
    sets = size // line
    # Direct mapped, 1 MiB: if no two touched lines share a set, only compulsory misses happen.
    assert len({blk % sets for blk in lines}) == len(lines)
    stats = simulate(accesses, size, 1, line)
    assert stats["misses"] == len(lines)
    assert stats["accesses"] == len(accesses)
    # A 1 KiB cache cannot hold the 64 KiB array: each of the four full sweeps
    # (two at stride 1 word, two at stride 16 words = 1 line) misses on all 1024 lines.
    small = simulate(accesses, 1024, 2, line)
    assert small["misses"] >= 4 * 1024
