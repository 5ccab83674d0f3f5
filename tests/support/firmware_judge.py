"""One firmware image through the counting tools, judged against the original under qemu-system-arm.

What scripts/firmware_sweep.py and tests/test_firmware_variants.py share: run the original
(its console output and exit status), count what it executes (QEMU's ``-singlestep`` trace)
and, where unicorn can run it (no SysTick), its data accesses through a reference cache;
instrument it with each tool in each mode, run the copy with ``anvil run --board`` and say
what differs: a refused rewrite, a hang, other output or exit status, an inscount total or a
bbcount block count that is not QEMU's, cachesim figures that are not the reference cache's
(or that do not add up), ReHost results that are not InHost's.

The console is what QEMU prints on stdout (newlib writes to the ``:tt`` file, SYS_WRITE) and
on stderr (SYS_WRITEC and SYS_WRITE0, how picolibc's semihosting prints), Anvil's own
``anvil:`` lines left out.

Programs with a timer interrupt (firmware_variants.INTERRUPTS) run with ``--icount 0``,
so ticks fall between any two instructions, hooks included; the procedure whose work
depends on where they fall (firmware_variants.TIMING) is left uninstrumented and
uncounted, and cachesim's hits and misses (which depend on where the handler's accesses
fall among main's) are not compared between modes, its loads and stores are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from rewriter.ir.elf_loader import load_binary
from tests.oracles.cache_model import simulate
from tests.oracles.qemu_trace import trace_firmware
from tests.oracles.unicorn_firmware import CPUS as UNICORN_BOARDS
from tests.oracles.unicorn_firmware import run_firmware_unicorn
from tests.support.boards import REPO_ROOT, qemu_command
from tests.support.firmware_variants import INTERRUPTS, TIMING
from tests.support.run import run_in_own_group

TOOLS = ["inscount", "bbcount", "cachesim", "memtrace"]
GEOMETRY = (1024, 2, 32)
_GEOMETRY_OPT = "size={},assoc={},line={}".format(*GEOMETRY)
_CACHE_KEYS = ("loads", "stores", "load_misses", "store_misses")
_NAME = "fw"  # every image, original and copies, runs as "-kernel fw" in its directory


def console(stdout: bytes, stderr: bytes) -> bytes:
    """The program's console from a run's stdout and stderr: QEMU's semihosting console
    writes SYS_WRITE to ``:tt`` on stdout, SYS_WRITEC/SYS_WRITE0 on stderr; Anvil's
    ``anvil:`` lines are not the program's."""
    said = b"".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(b"anvil: "))
    return stdout + said


def _anvil(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """``anvil ARGS`` in ``cwd``; on a timeout its whole process group is killed, QEMU with
    it (killing ``anvil run`` alone left a hung image's QEMU spinning for good)."""
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    return run_in_own_group([sys.executable, "-m", "rewriter.cli", *args], cwd, env, timeout)


class Original:
    """What the original image does: console output, exit status, executed PCs of its
    code (QEMU's count, the timing-dependent procedure left out) and, when unicorn can
    run it, the reference cache's figures."""

    def __init__(self, program: str, board: str, image: Path) -> None:
        self.program, self.board, self.image = program, board, image
        # Run as judge_firmware runs the copies: "-kernel fw" in the working directory (a
        # start-up that reads its command line, picolibc's crt0-semihost, walks that path).
        with tempfile.TemporaryDirectory(prefix="fworig.") as tmp:
            shutil.copy(image, Path(tmp) / _NAME)
            ran = subprocess.run(qemu_command(_NAME, board), stdin=subprocess.DEVNULL, capture_output=True,
                                 timeout=60, cwd=tmp)
            self.expected = (console(ran.stdout, ran.stderr), ran.returncode)
            trace = trace_firmware(_NAME, board, cwd=tmp)
            if (console(trace.stdout, trace.stderr), trace.returncode) != self.expected:
                raise RuntimeError(f"the traced original differs: {trace.stdout!r} {trace.stderr!r} "
                                   f"{trace.returncode}")
            # (unicorn models the MPS2 boards only)
            oracle, unicorn_failed = None, ""
            if program not in INTERRUPTS and board in UNICORN_BOARDS:
                try:
                    oracle = run_firmware_unicorn(_NAME, board, cwd=tmp, with_pc=True)
                except Exception as exc:  # noqa: BLE001 - unicorn's faults (UcError) are its own: no reference
                    unicorn_failed = f"unicorn failed: {exc}"
        binary = load_binary(str(image))
        code = [(s.vaddr, s.vaddr + s.memsz) for s in binary.segments if s.executable]
        skipped = [(p.address, p.end) for p in binary.procedures if p.name == TIMING.get(program)]
        self.pcs = {pc: n for pc, n in trace.pcs.items() if any(lo <= pc < hi for lo, hi in code)
                    and not any(lo <= pc < hi for lo, hi in skipped)}
        self.cache: dict | None = None
        self.cache_note = unicorn_failed
        self.strays: list[int] = []  # where unicorn ran an instruction less often than QEMU
        self.accesses: list[tuple[str, int, int, int]] | None = None  # unicorn's (kind, address, size, pc)
        if oracle is not None:
            # Unicorn 2.1.4 now and then skips the instruction after a conditional branch not
            # taken (seen in newlib's malloc on a heap start that is not 8-aligned): its run
            # then takes paths QEMU's never did, and its accesses are not the program's.
            strayed = [pc for pc, n in oracle.executed.items() if n > trace.pcs.get(pc, 0)]
            # It may run an instruction less often than QEMU, too (in newlib's malloc, most
            # images), and mostly still make the same accesses; but not always: under
            # cortex-m-rt's layout, whose heap start is 4-aligned, malloc's chunks moved by
            # 0x414 bytes. Such strays (any count that is not QEMU's, but for instructions in
            # IT blocks, which QEMU counts when their condition fails and unicorn does not)
            # let the reference's hits and misses go: its loads and stores still count.
            predicated = {ins.address for proc in binary.procedures for ins in proc.instructions() if ins.in_it}
            self.strays = sorted(pc for pc in {*oracle.executed, *trace.pcs} - predicated
                                 if oracle.executed.get(pc, 0) != trace.pcs.get(pc, 0))
            if (oracle.output, oracle.status) != self.expected:
                self.cache_note = f"unicorn differs: {oracle.output[-60:]!r} {oracle.status}"
            elif strayed:
                self.cache_note = f"unicorn strayed from QEMU's path at {min(strayed):#x}"
            else:
                self.cache = simulate([a[:3] for a in oracle.accesses], *GEOMETRY)
                self.accesses = [tuple(a) for a in oracle.accesses]

    def judge(self, tool: str, results: dict) -> str:
        """'ok' or what is wrong with ``tool``'s ``results`` of an instrumented run."""
        if tool == "inscount":
            total = sum(self.pcs.values())
            return "ok" if results["total"] == total else f"count {results['total']} vs qemu {total}"
        if tool == "bbcount":
            wrong = [(b["address"], b["count"], self.pcs.get(b["address"], 0)) for b in results["counts"]
                     if b["count"] != self.pcs.get(b["address"], 0)]
            if wrong:
                return "blocks differ from qemu's (address, ours, qemu): " + ", ".join(
                    f"{a:#x} {o} {q}" for a, o, q in wrong[:3]) + f" ({len(wrong)} in all)"
            return "ok"
        if tool == "memtrace":
            return self._judge_trace([(kind, address, size, pc) for pc, address, size, kind in results["records"]])
        if not results["hits"] + results["misses"] == results["loads"] + results["stores"] > 0:
            return f"cache figures do not add up: {results}"
        if self.cache is not None:
            wrong = [k for k in _CACHE_KEYS if results[k] != self.cache[k]]
            if wrong and self.strays:  # (above) then only its counts of loads and stores are the program's
                wrong = [k for k in ("loads", "stores") if results[k] != self.cache[k]]
            if wrong:
                return "cache differs from the reference: " + ", ".join(
                    f"{k} {results[k]} vs {self.cache[k]}" for k in wrong)
        return "ok"


    def _judge_trace(self, got: list[tuple[str, int, int, int]]) -> str:
        """memtrace's records (as unicorn's accesses: kind, address, size, instruction) against
        unicorn's, in order; where they differ and unicorn strayed, only how many loads and stores."""
        if self.accesses is None:
            return "ok" if got else "no records"
        if got == self.accesses:
            return "ok"
        if self.strays:
            ours, theirs = Counter(a[0] for a in got), Counter(a[0] for a in self.accesses)
            return "ok" if ours == theirs else f"loads and stores {dict(ours)} vs unicorn's {dict(theirs)}"
        at = next((i for i, (a, b) in enumerate(zip(got, self.accesses)) if a != b), min(len(got), len(self.accesses)))
        return (f"trace differs from unicorn's at access {at} of {len(self.accesses)} ({len(got)} recorded): "
                f"{got[at:at + 1]} vs {self.accesses[at:at + 1]}")


def _comparable(program: str, tool: str, results: dict) -> object:
    """What ReHost must reproduce of InHost's results: all of them, but with ticks falling
    anywhere only cachesim's loads and stores (its hits depend on the interleaving)."""
    if tool == "cachesim" and program in TIMING:
        return {k: results[k] for k in ("loads", "stores")}
    if tool == "memtrace" and program in TIMING:
        return Counter(record[3] for record in results["records"])
    return results


def judge_firmware(original: Original, tools: list[str], modes: list[str], tmp: Path,
                   extra: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Outcome ('ok' or a failure text) of each ``tool/mode`` on ``original``'s image;
    ``tmp``: an empty scratch directory; ``extra``: more ``anvil instrument`` options (a
    variant's Variant.instrument). ReHost runs after InHost and must match it."""
    program, board = original.program, original.board
    skip = ["--skip", TIMING[program]] if program in TIMING else []
    icount = ["--icount", "0"] if program in TIMING else []
    out: list[tuple[str, str]] = []
    for tool in tools:
        inhost = None
        for mode in modes:
            name = f"{tool}/{mode}"
            work = tmp / f"{tool}-{mode}"
            work.mkdir(parents=True)
            opts = ["--opt", _GEOMETRY_OPT] if tool == "cachesim" else []
            made = _anvil("instrument", "--tool", tool, "--mode", mode, "--format", "json", *opts, *skip, *extra,
                          str(original.image), "-o", _NAME, cwd=work, timeout=900)
            if made.returncode:
                lines = made.stderr.decode(errors="replace").strip().splitlines() or [f"exit {made.returncode}"]
                out.append((name, "refused: " + lines[-1][:200]))
                continue
            try:
                run = _anvil("run", "-q", "--board", board, *icount, _NAME, cwd=work, timeout=300)
            except subprocess.TimeoutExpired:
                out.append((name, "timeout"))
                continue
            if (console(run.stdout, run.stderr), run.returncode) != original.expected:
                out.append((name, f"differs: exit {run.returncode} (orig {original.expected[1]}) "
                                  f"out {run.stdout[-80:]!r} err {run.stderr[-120:]!r}"))
                continue
            result_file = work / f"{_NAME}.{tool}.out"
            if not result_file.is_file():
                out.append((name, "no results"))
                continue
            results = json.loads(result_file.read_text())
            if mode == "inhost":
                inhost = _comparable(program, tool, results)
                out.append((name, original.judge(tool, results)))
            elif inhost is not None and _comparable(program, tool, results) != inhost:
                out.append((name, "results differ from InHost's"))
            else:
                out.append((name, original.judge(tool, results)))
    return out
