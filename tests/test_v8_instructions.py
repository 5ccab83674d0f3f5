"""ARMv8's additions to A32/T32, and code the decoder cannot read (decision 0052).

samples/v8_code.c: ``crc_words`` is a CRC-32 loop of CRC32W between a PUSH and a POP (as in
Debian's 7zz), ``step`` has SB (ARMv8.5's speculation barrier, which capstone does not
know) between two blocks, the block after it reached by a branch too. The program is
stripped, as 7zz is: the descent finds the code. The oracle for the output is Python's
zlib; for the counts, qemu's single-step trace of the original.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, stripped, symbol_span


def _expected(argc: int) -> bytes:
    """What v8_code prints for ``argc`` arguments (argv[0] included), computed here."""
    words = b"".join(struct.pack("<I", (i * 0x9E3779B9 + argc) & 0xFFFFFFFF) for i in range(64))
    return b"%08x %d %d\n" % (zlib.crc32(words), argc + 1 + 2 + 4, 4)


def test_v8_instructions_and_unreadable_ones_run_as_in_the_original(tmp_path: Path) -> None:
    built = build("v8_code", "O2-thumb-dyn")
    program = stripped(built, tmp_path / "stripped")
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed)
    assert (original.returncode, original.stdout) == (0, _expected(1))
    trace = trace_pcs(placed, argv0="prog")
    executed = exe_pcs(trace, placed)

    # CRC32W decodes: the loop is found whole, and counted as qemu counts it.
    crc_start, crc_end = symbol_span(built, "crc_words")
    found = {ins.address for proc in load_binary(str(program)).procedures for ins in proc.instructions()}
    assert all(pc in found for pc in executed if crc_start <= pc < crc_end)

    image = instrument(program, "inscount", tmp_path)
    inst = run_prog(image)
    # SB does not decode: the block before it runs on into the original code at SB (left
    # in place), not into the copy of the block after it.
    assert_same_behaviour(original, inst)
    # ... and the report names it as code that ran uncounted: SB's encoding (T32 F3BF 8F70)
    # in step's bytes, where the unstripped build's symbol puts it, and nothing else.
    step_start, step_end = symbol_span(built, "step")
    with open(built, "rb") as elf:
        section = next(s for s in ELFFile(elf).iter_sections()
                       if s["sh_addr"] <= step_start < s["sh_addr"] + s["sh_size"])
        step_bytes = section.data()[step_start - section["sh_addr"]:step_end - section["sh_addr"]]
    sb = step_start + step_bytes.index(bytes.fromhex("bff3708f"))
    report = json.loads(Path(str(image) + ".anvil.json").read_text())
    assert [(u["address"], u["end"]) for u in report["undecodable"]] == [(sb, sb + 4)]
    counted = results(inst, "inscount")["procedures"]
    assert counted[f"sub_{crc_start:x}"] == sum(n for pc, n in executed.items() if crc_start <= pc < crc_end)
