"""x86-64 programs lifted into the IR (decision 0105): every instruction the program runs is
one the lift found, against QEMU's own record of what ran.

The samples are built with this machine's gcc and clang (-O0 to -O3, PIE, fixed-address,
static, CET's end-branch marks), with their symbols and stripped, and run under
``qemu-x86_64 -singlestep -d exec,nochain``: each executed address in the program's code
(not the libraries') must be the start of an instruction of a lifted procedure, which
shows the procedures' starts, the recursive descent, the switch tables of both compilers,
computed gotos' labels, C++ landing pads and GCC's ``.cold`` parts are found, and that
nothing is decoded out of step; so must every instruction Debian's own stripped `ls`, `sed`
and `bash` run. The lift's instructions never overlap, and the program's
``anvil instrument`` and ``anvil run`` say in one line that x86-64 is not instrumented yet
(tests/test_bad_input.py).
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import capstone
import pytest
from elftools.dwarf.callframe import FDE
from elftools.elf.elffile import ELFFile

from rewriter.arch.x86_64 import flags
from rewriter.arch.x86_64.decode import branch_form, direct_branch, instruction_of, make_disassembler
from rewriter.ir.elf_loader import load_binary
from rewriter.ir.exception_tables import eh_frame_functions
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples

ARGS = {"goto": ["7"], "calls": ["a", "b"], "addresses": ["x"]}
DYNAMIC = ("x64-gcc-O0", "x64-gcc-O2", "x64-gcc-O3-nopie", "x64-gcc-Os-cet", "x64-clang-O2")
STATIC = ("x64-gcc-O2-static", "x64-clang-O3-static")
CASES = [
    *((sample, variant) for sample in ("sort", "goto", "unwind", "containers") for variant in DYNAMIC),
    *(("unwind", variant) for variant in STATIC),
]


# Stripped, every build; with symbols, one of each kind (a stripped lift finds everything
# a symbol would name too, and test_x86_64_counts runs these builds with their symbols).
LIFTS = [(sample, variant, True) for sample, variant in CASES] + [
    ("goto", "x64-gcc-O2", False), ("unwind", "x64-clang-O2", False), ("unwind", "x64-gcc-O2-static", False)]
# goto and containers stripped by gcc -O0, -O3 and -Os too: the extended tier (decision 0129).
MORE = {("goto", v) for v in DYNAMIC[:1] + DYNAMIC[2:4]} | {("containers", v) for v in DYNAMIC[:1] + DYNAMIC[2:4]}


@pytest.mark.parametrize(("sample", "variant", "stripped"),
                         [pytest.param(s, v, x, marks=(pytest.mark.extended,) if x and (s, v) in MORE else ())
                          for s, v, x in LIFTS],
                         ids=[f"{s}-{v}-{'stripped' if x else 'symbols'}" for s, v, x in LIFTS])
def test_every_executed_instruction_is_lifted(sample: str, variant: str, stripped: bool, tmp_path: Path) -> None:
    program = built = samples.build_x86_64(sample, variant)
    if stripped:
        subprocess.run(["strip", "-o", str(tmp_path / "prog"), str(program)], check=True)
        program = tmp_path / "prog"
    _assert_lifted_as_run(program, ARGS.get(sample, []), tmp_path, built)


def _assert_lifted_as_run(program: Path | str, args: list[str], cwd: Path, traced: Path | str | None = None) -> None:
    """The lift of ``program`` has no overlapping instructions and holds every instruction
    QEMU runs in the program's own code when it is run with ``args`` in ``cwd``. ``traced``:
    the program QEMU runs, if not ``program`` (the build ``program`` was stripped from runs
    the same instructions at the same addresses, and test_x86_64_counts traces it too)."""
    binary = load_binary(str(program))
    instructions = sorted((ins.address, ins.end) for proc in binary.procedures for ins in proc.instructions())
    overlaps = [(a, b) for (a, end), (b, _) in zip(instructions, instructions[1:]) if b < end]
    assert not overlaps, f"instructions overlap: {[(hex(a), hex(b)) for a, b in overlaps[:5]]}"
    traced = traced or program
    executed = exe_pcs(trace_pcs(traced, args, cwd=cwd, reuse=True), traced)
    assert executed, "the trace holds none of the program's own instructions"
    starts = {address for address, _ in instructions}
    missing = sorted(pc for pc in executed if pc not in starts)
    assert not missing, f"{len(missing)} of {len(executed)} ran, not lifted: {[hex(m) for m in missing[:8]]}"


#: Debian's own amd64 programs, stripped as shipped, with work to do.
DEBIAN = {
    "ls": ["/bin/ls", "-la", str(samples.SAMPLES_DIR)],  # its option switch's table is set up before its loop
    "sed": ["/bin/sed", "-e", "s/[aeiou]/_/g", str(samples.SAMPLES_DIR / "sort.c")],
    "bash": ["/bin/bash", "-c", "for i in 1 2 3; do echo $((i * 7)); done; x=abc; echo ${x^^}"],
}


@pytest.mark.parametrize("name", sorted(DEBIAN))
def test_debian_programs_are_lifted(name: str, tmp_path: Path) -> None:
    program, *args = DEBIAN[name]
    _assert_lifted_as_run(program, args, tmp_path)


@pytest.mark.parametrize("variant", ["x64-gcc-O2", "x64-gcc-O2-static"])
def test_symbols_are_read_as_pyelftools_reads_them(variant: str) -> None:
    """The loader reads symbol tables with ``struct`` (fast); a 64-bit entry is 24 bytes
    with its fields in another order than a 32-bit one's, and read as 32-bit entries an
    x86-64 program's names came out wrong (its threads went unseen: counters without lock,
    decision 0112). Every name, value and section index against pyelftools' own reading."""

    from rewriter.ir.elf_tables import symbol_entries

    path = samples.build_x86_64("x64_thread_counts", variant)
    data = path.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    for section in (".symtab", ".dynsym"):
        table = elf.get_section_by_name(section)
        if table is None:
            continue
        ours = [(name, value, shndx) for name, value, _, _, shndx in symbol_entries(table, data)]
        theirs = [(s.name, s["st_value"], s["st_shndx"]) for s in table.iter_symbols()]
        theirs = [(n, v, {"SHN_UNDEF": 0, "SHN_ABS": 0xFFF1, "SHN_COMMON": 0xFFF2}.get(x, x)) for n, v, x in theirs]
        assert ours == theirs
    assert load_binary(str(path)).threaded


@pytest.mark.parametrize("program", ["/bin/bash", "/usr/bin/sed"])
def test_direct_branches_read_from_their_bytes_are_capstones(program: str) -> None:
    """Direct calls and jumps are read from their bytes (``decode.direct_branch``, their
    flags from ``flags._branch_effect``): for every one in a Debian program's text, the same
    facts as capstone's detailed decoding gives."""
    with open(program, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        data, base = text.data(), text["sh_addr"]
    lite, detailed = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64), make_disassembler()
    lite.skipdata = True
    seen = 0
    for address, size, mnemonic, op_str in lite.disasm_lite(data, base):
        raw = data[address - base:address - base + size]
        fast = direct_branch(raw, address, mnemonic, op_str)
        if fast is None:
            continue
        seen += 1
        assert fast == instruction_of(next(detailed.disasm(raw, address, 1))), (hex(address), mnemonic)
        if branch_form(raw)[0] != "call":
            assert flags._branch_effect(raw) == flags._decoded_effect(raw), (hex(address), mnemonic)
    assert seen > 4000


@pytest.mark.parametrize("program", ["/bin/bash", ("unwind", "x64-gcc-O2"), ("containers", "x64-clang-O2"),
                                     ("unwind", "x64-gcc-O2-static")])
def test_eh_frame_functions_are_pyelftools(program: str | tuple[str, str]) -> None:
    """The lift reads ``.eh_frame``'s FDEs itself (``eh_frame_functions``: their functions'
    first addresses, sizes and LSDAs, without the call-frame instructions): the same, in the
    same order, as pyelftools' full parse, on Debian's bash and C++ samples with landing pads."""
    path = program if isinstance(program, str) else str(samples.build_x86_64(*program))
    with open(path, "rb") as f:
        elf = ELFFile(f)
        section = elf.get_section_by_name(".eh_frame")
        ours = [(fde.first, fde.size, fde.lsda) for fde in eh_frame_functions(section.data(), section["sh_addr"])]
        theirs = [(entry.header["initial_location"], entry.header["address_range"],
                   getattr(entry, "lsda_pointer", None) or 0)
                  for entry in elf.get_dwarf_info(follow_links=False).EH_CFI_entries() if isinstance(entry, FDE)]
    assert ours == theirs
    assert len(ours) > 5
    if "unwind" in path or "containers" in path:
        assert any(lsda for _, _, lsda in ours)  # C++: functions with landing pads


def test_a_got_anchor_is_no_code_pointer() -> None:
    """clang's -mcmodel=large starts a function that reads the GOT with ``lea rax, [rip -
    7]``, the address of that ``lea`` itself, to which it adds the GOT's offset: a base for
    offsets, not a place anything jumps to. Taken for a code pointer, it made an entry one
    byte into a function that saves one register first, too close to the function's own
    entry for its jump: calls through pointers ran that byte in place (decision 0175).
    Oracle: capstone's reading of each such ``lea``, whose target is its own address."""
    binary = load_binary(str(samples.build_x86_64("x64_switch_in_loop", "x64-clang-O2-large")))
    anchors = [ins.address for proc in binary.procedures for ins in proc.instructions()
               if ins.name == "lea" and ins.op_str.endswith("[rip - 7]")]
    assert len(anchors) >= 2
    assert not [hex(address) for address in anchors if address in binary.code_pointers]
