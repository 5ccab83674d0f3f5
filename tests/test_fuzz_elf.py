"""Mutated ELF files never crash Anvil: each gives an instrumented file, or one line on
stderr, exit status 2 and no output file (benchmarks/fuzz_elf.py; decision 0036).

A fixed seed and a size that runs in about a minute on one core: the dynamic glibc
sample, a firmware image and the sample built for x86-64, mutated in every way the fuzzer knows (bit flips, header
fields, string and symbol tables, section contents, truncation), through ``anvil
instrument`` (inscount, cachesim, InHost and ReHost), ``anvil inspect`` and ``anvil
image``, each in a process of its own whose stderr, exit status and files are checked
as a user would see them. The longer run (thousands of mutants, the static sample too)
is the script's: docs/performance.md, "Fuzzing".
"""

from __future__ import annotations

import collections

import pytest

from benchmarks import fuzz_elf
from tests.support.boards import build_firmware
from tests.support.samples import build, build_x86_64

SEED = 36
COUNT = 100


def test_mutated_elf_files_give_output_or_one_line_error() -> None:
    inputs = [("sort O2-thumb-dyn", build("sort", "O2-thumb-dyn").read_bytes(), 2.0),
              ("crc mps2-an385 firmware", build_firmware("crc", "mps2-an385").read_bytes(), 1.0),
              ("sort x64-gcc-O2", build_x86_64("sort", "x64-gcc-O2").read_bytes(), 1.0)]
    cases = [fuzz_elf.make_case(n, SEED, inputs) for n in range(COUNT)]
    outcomes = fuzz_elf.run_cases(cases, jobs=1, timeout=120)
    assert not [o for o in outcomes if o.failed], fuzz_elf.table(outcomes)
    verdicts = collections.Counter(o.verdict for o in outcomes)
    # Both answers occur often: mutants that still rewrite, and mutants refused.
    assert verdicts["ok"] >= COUNT // 5 and verdicts["refused"] >= COUNT // 10, fuzz_elf.table(outcomes)


def test_the_classification_sees_each_kind_of_failure(tmp_path) -> None:
    """The checks the test above relies on: a traceback, a second line, another status and
    a file left behind are each a failure; one 'anvil: error:' line with status 2 is not."""
    case = fuzz_elf.Case(0, "x", "bit flips", "", b"", ["instrument", "--tool", "inscount", "INPUT", "-o", "OUTPUT"])
    (tmp_path / "input.elf").write_bytes(b"")
    one_line = "anvil: error: x: malformed ELF file (why)\n"
    assert fuzz_elf.classify(case, tmp_path, 2, one_line)[0] == "refused"
    assert fuzz_elf.classify(case, tmp_path, 2, one_line + "more\n")[0] == "FAILURE: stderr"
    assert fuzz_elf.classify(case, tmp_path, 1, "Traceback (most recent call last):\n  x\nValueError: y\n")[0] \
        == "FAILURE: traceback"
    assert fuzz_elf.classify(case, tmp_path, 70, "anvil: error: internal error: ValueError: y\n")[0] \
        == "FAILURE: status 70"
    assert fuzz_elf.classify(case, tmp_path, None, "")[0] == "FAILURE: timeout"
    assert fuzz_elf.classify(case, tmp_path, 0, "")[0] == "FAILURE: status 0 without output"
    (tmp_path / "out.inst.anvil.json").write_text("{}")
    assert fuzz_elf.classify(case, tmp_path, 2, one_line)[0] == "FAILURE: files left"


def _with_field(data: bytes, at: int, size: int, value: int) -> bytes:
    out = bytearray(data)
    out[at:at + size] = value.to_bytes(size, "little")
    return bytes(out)


def _section_field(data: bytes, name: str, field: str, value: int) -> bytes:
    section = fuzz_elf.Layout.of(data).named(name)[0]
    offset, size = fuzz_elf.SHDR_FIELDS[field]
    return _with_field(data, section.header + offset, size, value)


def _no_code(data: bytes) -> bytes:
    """No section executable and no symbols in .symtab (its size made 0), so that the
    loader looks for code by recursive descent, in no section."""
    out = _section_field(data, ".symtab", "sh_size", 0)
    for section in fuzz_elf.Layout.of(data).sections:
        offset, size = fuzz_elf.SHDR_FIELDS["sh_flags"]
        flags = fuzz_elf._get(out, section.header + offset, size)
        out = _with_field(out, section.header + offset, size, flags & ~4)
    return out


def _call_outside_code(data: bytes) -> bytes:
    """A stripped x86-64 program whose first direct call in .text (main's, gcc puts it
    first) is made to call far past every section of code."""
    import capstone

    text = fuzz_elf.Layout.of(data).named(".text")[0]
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    at = next(offset for offset, size, name, _ in md.disasm_lite(data[text.offset:text.offset + text.size], 0)
              if name == "call" and size == 5 and data[text.offset + offset] == 0xE8)
    return _with_field(data, text.offset + at + 1, 4, 0x40000000)


# One mutant of each fault class the fuzzer found (decision 0036), and the answer it must get.
FAULTS = {
    "section-name table out of range": (lambda d: _with_field(d, 50, 2, 0x35), "refused", "e_shstrndx 53"),
    "symbol table linked to a non-string table": (lambda d: _section_field(d, ".symtab", "sh_link", 1), "refused",
                                                  "links to section 1, not a string table"),
    "section called .symtab of another type": (lambda d: _section_field(d, ".symtab", "sh_type", 0x5BD31),
                                               "refused", "(.symtab) is of type 0x5bd31"),
    "PLT relocations without a symbol table": (lambda d: _section_field(d, ".rel.plt", "sh_link", 0), "ok", ""),
    "no executable section, no symbols": (_no_code,
                                          "refused", "no code to rewrite"),
    "code section outside the segments": (lambda d: _section_field(d, ".text", "sh_addr", 0x91A43B90), "refused",
                                          "is not where a loaded segment puts it"),
    "garbage build attributes": (lambda d: _section_field(d, ".ARM.attributes", "sh_offset", 0), "refused",
                                 "malformed ELF file"),
}


# The same on x86-64 programs.
FAULTS_X86_64 = {
    # a procedure without a size split at a callee outside the code (a StopIteration)
    "call past the code in a stripped program": (_call_outside_code, "ok", ""),
}


@pytest.mark.parametrize("source, faults", [("arm", FAULTS), ("x86_64", FAULTS_X86_64)])
def test_each_fault_class_found_gets_its_answer(source: str, faults: dict) -> None:
    name_of = {"arm": "sort O2-thumb-dyn", "x86_64": "sort x64-gcc-Os-nounwind-stripped"}[source]
    original = (build("sort", "O2-thumb-dyn") if source == "arm"
                else build_x86_64("sort", "x64-gcc-Os-nounwind-stripped")).read_bytes()
    cases = [fuzz_elf.Case(n, name_of, name, name, make(original),
                           ["instrument", "--tool", "inscount", "INPUT", "-o", "OUTPUT", "-j", "1"])
             for n, (name, (make, _, _)) in enumerate(faults.items())]
    for outcome, (name, (_, verdict, needle)) in zip(fuzz_elf.run_cases(cases, timeout=120), faults.items()):
        assert outcome.verdict == verdict and needle in outcome.stderr, (name, outcome.verdict, outcome.stderr)
