"""Programs built by clang 14 and linked by ld.lld or GNU ld (tests/support/samples.py
CLANG_VARIANTS) behave as the original under every counting tool, and inscount's total is
qemu's count of executed instructions (at most that, stripped).

ld.lld packs the file: the next segment's bytes follow the text segment's directly, so
there is no slack for the loader stub. The small O0 A32 program, stripped, has no
relocated procedure big enough to hold the stub either: it was refused until a gap is
opened in the file (rewriter/emit/file_gap.py, decision 0049).
"""

from __future__ import annotations

import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, stripped

ARGS = ["stdin", "two words"]
STDIN = b"some input for the calls sample\n"


def _loads(path) -> list[tuple[int, int, int, int]]:
    with open(path, "rb") as f:
        return [(s["p_offset"], s["p_vaddr"], s["p_filesz"], s["p_align"])
                for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]


@pytest.mark.parametrize("variant, stripped", [("clang-O2-thumb-pie-lld", False), ("clang-O0-arm-pie-lld", True),
                                               ("clang-O2-arm-pie-bfd", False)])
def test_clang_builds(variant: str, stripped: bool, tmp_path) -> None:
    binary = build("calls", variant)
    if stripped:
        plain = tmp_path / "stripped"
        subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(plain), str(binary)], check=True)
        binary = plain
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, ARGS, STDIN)
    assert original.returncode == 3 and original.stdout
    qemu_total = sum(exe_pcs(trace_pcs(placed, ARGS, STDIN, argv0="prog"), placed).values())
    for tool in ("inscount", "bbcount", "cachesim"):
        out = instrument(binary, tool, tmp_path)
        inst = run_prog(out, ARGS, STDIN)
        assert_same_behaviour(original, inst)
        if tool == "inscount":
            total = results(inst, tool)["total"]
            assert 0 < total <= qemu_total if stripped else total == qemu_total
    # Every segment but the text keeps its address; each maps its file bytes as before
    # (offset congruent to address modulo its alignment), wherever the file moved them.
    before, after = _loads(binary), _loads(out)
    assert [vaddr for _, vaddr, _, _ in after[:len(before)]] == [vaddr for _, vaddr, _, _ in before]
    assert all(offset % align == vaddr % align for offset, vaddr, _, align in after)


def _assert_every_plt_entry_named(binary, linker: bytes = b"") -> None:
    """The PLT reader names the function of every R_ARM_JUMP_SLOT relocation of ``binary``
    (linked by ``linker``, as its .comment says)."""
    from rewriter.ir.plt import plt_functions

    with open(binary, "rb") as f:
        elf = ELFFile(f)
        assert linker in elf.get_section_by_name(".comment").data()
        rel = elf.get_section_by_name(".rel.plt")
        symbols = elf.get_section(rel["sh_link"])
        slots = sorted(symbols.get_symbol(r["r_info_sym"]).name for r in rel.iter_relocations())
        assert sorted(plt_functions(elf).values()) == slots


@pytest.mark.parametrize("variant, strip", [("clang-O2-thumb-mold", False), ("clang-O2-thumb-static-mold", False),
                                            ("clang-O2-thumb-static-mold", True)])
def test_mold_plt_entries_are_decoded_and_counted(variant: str, strip: bool, tmp_path) -> None:
    """mold writes no mapping symbols in its ARM PLT and pads PLT0 with NOPs: the entries
    were not read, so not decoded, and every call through them went uncounted (62
    instructions of a small program). A static program's calls of IFUNC'd functions
    (memcpy, memchr) go through its ``.plt.got``, unmarked too, which took the kind of the
    last mark before it (a literal pool's): never decoded, 3 instructions short a call.
    Stripped, Thumb code reaches those A32 entries and ``.fini`` through mold's veneers,
    ``mov ip, pc; bx ip`` with the A32 part after it, whose target the descent did not
    follow (3 instructions short a call). Oracles: the PLT's R_ARM_JUMP_SLOT relocations
    name every entry; qemu's count of the executable's instructions, inscount's and
    bbcount's."""
    binary = build("calls", variant)
    if "static" in variant:
        with open(binary, "rb") as f:
            elf = ELFFile(f)
            assert b"mold" in elf.get_section_by_name(".comment").data()
            assert elf.get_section_by_name(".plt.got") is not None, "no .plt.got: not the layout this is about"
    else:
        _assert_every_plt_entry_named(binary, b"mold")
    if strip:
        binary = stripped(binary, tmp_path / "stripped")
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed, ARGS, STDIN)
    pcs = exe_pcs(trace_pcs(placed, ARGS, STDIN, argv0="prog"), placed)
    inst = run_prog(instrument(binary, "inscount", tmp_path), ARGS, STDIN)
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == sum(pcs.values())
    blocks = run_prog(instrument(binary, "bbcount", tmp_path, slot="bbco"), ARGS, STDIN)
    assert_same_behaviour(original, blocks)
    assert all(pcs.get(block["address"]) == block["count"] for block in results(blocks, "bbcount")["counts"])


def test_lld_plt_entries_are_read(tmp_path) -> None:
    """ld.lld pads PLT0 and each entry with 0xd4d4d4d4 words: its PLT was read as empty, so
    unstripped it stayed one procedure and the entry the C++ exception tables name as the
    personality routine (``__gxx_personality_v0@plt``) ran in place, uncounted (decision 0054).
    Oracles: the PLT's R_ARM_JUMP_SLOT relocations name every entry; qemu's count."""
    binary = build("containers", "clang-O3-thumb-pie-lld")
    _assert_every_plt_entry_named(binary)
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert_same_behaviour(original, inst)
    assert results(inst, "inscount")["total"] == qemu_total
