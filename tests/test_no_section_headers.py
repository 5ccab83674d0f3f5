"""Programs without section headers (decision 0132).

``sstrip`` and ``llvm-objcopy --strip-sections`` drop the section header table, which
only linkers and debuggers read; the program runs as before. Anvil makes the table again
from the program headers and the dynamic table (rewriter/ir/section_headers.py): the
sections it makes must be where the linker put them, and every tool in both modes must
behave as the original and count as qemu does."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rewriter.ir.section_headers import with_section_headers
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support import samples
from tests.support.run import anvil_instrument, assert_same_behaviour, instrument, place, results, run_prog
from tests.support.sweep import judge_build

#: Sections made from the program headers and the dynamic table, which must be the linker's.
MADE = (".interp", ".dynsym", ".dynstr", ".hash", ".rel.dyn", ".rel.plt", ".rela.dyn", ".rela.plt", ".plt",
        ".init_array", ".fini_array", ".preinit_array", ".dynamic", ".ARM.exidx", ".eh_frame_hdr", ".eh_frame",
        ".tdata", ".tbss")
BUILDS = [("calls", "O2-thumb-dyn"), ("hash", "O2-arm-dyn-nopie"), ("calls", "Os-thumb-static"),
          ("calls", "x64-gcc-O2"), ("calls", "x64-clang-O2"), ("calls", "x64-gcc-O2-static")]


def _without_sections(data: bytes) -> bytes:
    """``data`` with its ELF header naming no section table (what sstrip and
    ``llvm-objcopy --strip-sections`` do to the header; the bytes stay)."""
    out = bytearray(data)
    if out[4] == 1:
        struct.pack_into("<I", out, 0x20, 0)
        struct.pack_into("<HH", out, 0x30, 0, 0)
    else:
        struct.pack_into("<Q", out, 0x28, 0)
        struct.pack_into("<HH", out, 0x3C, 0, 0)
    return bytes(out)


def _build(sample: str, variant: str) -> Path:
    return samples.build_x86_64(sample, variant) if variant.startswith("x64") else samples.build(sample, variant)


def _code_span(elf: ELFFile) -> tuple[int, int]:
    spans = [(s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections() if s["sh_flags"] & 0x4]
    return min(lo for lo, _ in spans), max(hi for _, hi in spans)


@pytest.mark.parametrize(("sample", "variant"), BUILDS)
def test_sections_made_are_the_linkers(sample: str, variant: str) -> None:
    """Every section made from the headers has the address and size the linker gave it, and
    the code spans what the linker's executable sections span (static programs too, whose
    ``.init`` and ``.fini`` no dynamic tag names)."""
    data = _build(sample, variant).read_bytes()
    linked = ELFFile(io.BytesIO(data))
    made = ELFFile(io.BytesIO(with_section_headers("prog", _without_sections(data))))
    theirs = {s.name: (s["sh_addr"], s["sh_size"]) for s in linked.iter_sections()}
    ours = {s.name: (s["sh_addr"], s["sh_size"]) for s in made.iter_sections() if s.name in MADE}
    assert ours and {name: theirs.get(name) for name in ours} == ours
    expected = {".dynsym", ".rel.plt" if variant[:3] != "x64" else ".rela.plt", ".plt", ".dynamic"}
    if "static" not in variant:
        assert expected <= set(ours)
    assert _code_span(made) == _code_span(linked)


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "O2-arm-dyn-nopie"])
def test_arm_program_without_sections(variant: str, rehost_server: str, tmp_path: Path) -> None:
    """A PIE (Thumb) and a fixed-address program (A32) without section headers:
    inscount, cachesim and memtrace behave as the original (addresses printed included) and
    count as qemu does, ReHost's results are InHost's. Before: refused ("no executable
    section in the section table"). (qemu-arm 7.2 does not start a static program without
    section headers at all, so none is run here; test_sections_made_are_the_linkers reads one.)"""
    program = tmp_path / "prog-without-sections"
    program.write_bytes(_without_sections(samples.build("addresses", variant).read_bytes()))
    program.chmod(0o755)
    assert ELFFile(io.BytesIO(program.read_bytes()))["e_shnum"] == 0
    work = tmp_path / "work"
    work.mkdir()
    outcomes = judge_build("addresses", program, False, ["inscount", "cachesim", "memtrace"], ["inhost", "rehost"],
                           work, server=rehost_server)
    assert all(outcome == "ok" for _, outcome in outcomes), outcomes


@pytest.mark.parametrize("variant", ["x64-gcc-O2", "x64-clang-O2"])
def test_x86_64_program_without_sections(variant: str, tmp_path: Path) -> None:
    """An x86-64 PIE without section headers: its inscount and cachesim copies print what
    the original prints (its addresses, under ``setarch -R`` at a path as long) and
    inscount counts what qemu runs of the executable."""
    plain = tmp_path / "a" / "prog"
    plain.parent.mkdir()
    plain.write_bytes(_without_sections(samples.build_x86_64("addresses", variant).read_bytes()))
    plain.chmod(0o755)
    original = subprocess.run(["setarch", "-R", str(plain), "x"], capture_output=True, cwd=tmp_path, timeout=60,
                              env={"PATH": "/usr/bin:/bin"})
    for tool, folder in (("inscount", "b"), ("cachesim", "c")):
        copy = tmp_path / folder / "prog"
        copy.parent.mkdir()
        done = subprocess.run(["anvil", "instrument", "--tool", tool, "--format", "json", str(plain), "-o", str(copy)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run = subprocess.run(["setarch", "-R", str(copy), "x"], capture_output=True, cwd=tmp_path, timeout=60,
                             env={"PATH": "/usr/bin:/bin"})
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
    counted = json.loads((tmp_path / "prog.inscount.out").read_text())
    assert counted["total"] == sum(exe_pcs(trace_pcs(plain, ["x"], cwd=tmp_path), plain).values())


def test_a_program_upx_packed_is_refused(tmp_path: Path) -> None:
    """A program UPX packed (its loader header's magic after the program headers, no section
    headers) unpacks its code as it runs, where a rewrite cannot see it: one line saying so
    and how to unpack it, exit status 2, no output file. (UPX is not in Debian 12: the
    magic is written where UPX writes it, into a program stripped of its sections.)"""
    program = tmp_path / "packed"
    data = bytearray(_without_sections(samples.build("calls", "O2-thumb-dyn").read_bytes()))
    elf = ELFFile(io.BytesIO(bytes(data)))
    after_headers = elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"]
    data[after_headers + 4:after_headers + 8] = b"UPX!"  # l_info: l_checksum, then l_magic
    program.write_bytes(data)
    out = tmp_path / "packed.inst"
    proc = subprocess.run([sys.executable, "-m", "rewriter.cli", "instrument", "--tool", "inscount", str(program),
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"anvil: error: {program}: packed by UPX") and "upx -d" in proc.stderr
    assert not out.exists()


def test_musl_program_without_sections(tmp_path: Path) -> None:
    """A program of musl's libc.so (Alpine's, OpenWrt's, whose sstrip drops the section
    headers): its DT_FINI is musl's Thumb ``_fini`` (``push {r0, lr}; pop {r0, pc}``), where
    glibc's is A32. The code's end was read one byte into it, and the descent, cut there at
    an address that is no entry, was done again round after round: ``anvil instrument`` never
    ended (decision 0181). Now it ends after the Thumb ``pop``, and a cut at no entry drops
    nothing and ends the round. The copy behaves as the original and counts as qemu does."""
    root = str(samples.musl_root())
    program = tmp_path / "prog-without-sections"
    program.write_bytes(_without_sections(samples.build_musl("addresses", "shared").read_bytes()))
    program.chmod(0o755)
    placed = place(program, tmp_path, "orig")
    original = run_prog(placed, lib_root=root)
    copy = tmp_path / "inst" / "prog"
    copy.parent.mkdir()
    done = subprocess.run(["anvil", "instrument", "--tool", "inscount", "--format", "json", str(program), "-o",
                           str(copy)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    counted = run_prog(copy, lib_root=root)
    assert_same_behaviour(original, counted)
    qemu = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog", lib_root=root), placed).values())
    assert results(counted, "inscount")["total"] == qemu


@pytest.mark.parametrize("isa", ["arm", "x86-64"])
def test_code_after_data_without_sections(isa: str, tmp_path: Path) -> None:
    """addresses.c linked with .text after .data (one last segment of data and code,
    writable and executable), its section headers dropped: the code span made from the
    program headers took the GOT for code, and a pointer to it (DT_PLTGOT's) made a
    procedure whose entry's jump was written over the GOT: SIGSEGV on both ISAs (decision
    0188). The GOT is now data: every copy prints the original's addresses, and on ARM
    inscount counts what qemu runs. (On x86-64 the code shares its pages with the data the
    program writes, and QEMU's plugin counts an instruction twice where a store goes into
    its page: no count there.)"""
    linker, compiler = ("arm-linux-gnueabihf-ld", "arm-linux-gnueabihf-gcc") if isa == "arm" else ("ld", "gcc")
    script = samples.code_after_data_script(linker, tmp_path / "code_after_data.x")
    linked = tmp_path / "linked"
    subprocess.run([compiler, "-O2", "-no-pie", "-fno-pie", str(samples.SAMPLES_DIR / "addresses.c"),
                    f"-Wl,-T,{script}", "-o", str(linked)], check=True, capture_output=True)
    plain = tmp_path / "a" / "prog"
    plain.parent.mkdir()
    plain.write_bytes(_without_sections(linked.read_bytes()))
    plain.chmod(0o755)
    if isa == "arm":
        original = run_prog(place(plain, tmp_path, "orig"), ["x"])
        copies = {tool: run_prog(instrument(plain, tool, tmp_path, slot=tool[:4]), ["x"])
                  for tool in ("inscount", "cachesim")}
        for copy in copies.values():
            assert_same_behaviour(original, copy)
        counted = results(copies["inscount"], "inscount")
        assert counted["total"] == sum(exe_pcs(trace_pcs(plain, ["x"], cwd=tmp_path), plain).values())
        return
    original = subprocess.run(["setarch", "-R", str(plain), "x"], capture_output=True, cwd=tmp_path, timeout=60,
                              env={"PATH": "/usr/bin:/bin"})
    assert original.returncode == 0 and b"heap=" in original.stdout, original
    for tool, folder in (("inscount", "b"), ("cachesim", "c"), ("memtrace", "d")):
        copy = anvil_instrument(plain, tmp_path / folder / "prog", "--tool", tool)
        run = subprocess.run(["setarch", "-R", str(copy), "x"], capture_output=True, cwd=tmp_path, timeout=60,
                             env={"PATH": "/usr/bin:/bin"})
        assert (run.returncode, run.stdout, run.stderr) == (original.returncode, original.stdout, original.stderr)
