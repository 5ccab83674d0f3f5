"""A landing pad that bytes decoded from a literal pool read as a literal keeps its jump
(decision 0106).

A call that never returns (a throwing helper) is followed by its function's literal pool;
a descent that does not know the call ends there decodes the pool as code, and a word of
it that reads as a PC-relative load made the rewriter take what it loads for a pool too.
In Debian's dar_static that was a C++ landing pad: "internal error: no room for a jump".
samples/pad_after_pool.cpp puts such a word after a call to die(); the test writes the
load's offset so that it names guarded()'s landing pad, found in the unstripped build.

The oracle: the original's output and exit status under qemu-arm, and qemu's count of the
executable's instructions.
"""

from __future__ import annotations

import shutil
import struct

from elftools.elf.elffile import ELFFile

from rewriter.ir.elf_loader import load_binary
from tests.support.rehost import assert_counted_exactly
from tests.support.run import traced_original
from tests.support.samples import build, stripped, symbol_span

FLAGS = ["-fno-reorder-blocks-and-partition", "-fno-toplevel-reorder"]


def _file_offset(path, address: int) -> int:
    with path.open("rb") as fh:
        for segment in ELFFile(fh).iter_segments():
            if segment["p_type"] == "PT_LOAD" and segment["p_vaddr"] <= address < \
                    segment["p_vaddr"] + segment["p_filesz"]:
                return address - segment["p_vaddr"] + segment["p_offset"]
    raise AssertionError(f"{address:#x} is in no loaded segment")


def test_landing_pad_read_by_a_pool_decoded_as_code(tmp_path, rehost_server: str) -> None:
    built = tmp_path / "built"
    shutil.copy(build("pad_after_pool", "O2-thumb-dyn", FLAGS), built)
    word, _ = symbol_span(built, "stopper_word")
    start, end = symbol_span(built, "_Z7guardedi")
    pads = sorted(pad for pad in load_binary(str(built)).unwinder_entries if start <= pad < end)
    assert pads, "guarded() has a landing pad"
    base = (word + 4) & ~3  # Thumb's PC for a literal load
    offset = (pads[0] & ~3) - base
    assert 0 <= offset < 1024 and offset % 4 == 0
    with built.open("r+b") as fh:
        fh.seek(_file_offset(built, word))
        fh.write(struct.pack("<H", 0x4C00 | offset // 4))  # ldr r4, [pc, #offset]: the pad's word

    binary = stripped(built, tmp_path / "pads")
    original, pcs, _ = traced_original(binary, tmp_path)
    assert original.returncode == 3 and b"caught too big for 105\n" in original.stdout, original

    assert_counted_exactly(binary, original, pcs, tmp_path, rehost_server)
