"""Programs that unwind their own stack: original return addresses (decision 0013).

- The C++ sample (samples/unwind.cpp: exceptions through several frames, a virtual call
  and std::function, rethrow, destructors on the way; ``__builtin_return_address`` and
  ``backtrace``) in every build variant, instrumented with each tool (the default,
  ``auto``, picks original return addresses because it throws): identical output and
  exit status, inscount's total and bbcount's every block equal to what
  ``qemu-arm -singlestep -d exec,nochain`` executes in the original (a landing pad or
  personality routine the rewriter did not know would run uninstrumented, and be missed).
- The same sample under ReHost gives the InHost results.
- Stripped copies of it (no symbols: code found by descent, the landing pads seeded from
  the exception tables; ``auto`` picks original return addresses by the landing pads
  of a static one): identical behaviour with every tool.
- The C samples with ``--return-addresses original`` forced: still transparent and exact.
- A C program that looks at its return addresses (``backtrace``,
  ``__builtin_return_address``): ``auto`` picks original ones, and it prints the same.
- Which mode ``auto`` picks, and firmware with ``original`` forced (counted as QEMU counts).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rehost.server import Library, start_server
from rewriter.cli import main as anvil_main
from rewriter.ir.elf_loader import load_binary
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import VARIANTS, build, sample_matrix

ARGS = {"calls": ["stdin", "two words"]}
STDIN = {"calls": b"some input for the calls sample\n"}


def _report(binary: Path) -> dict:
    return json.loads(Path(str(binary) + ".anvil.json").read_text())


def _check_exact(binary: Path, tmp_path: Path, args: list[str], stdin: bytes, *extra: str) -> None:
    """Every tool: same behaviour as the original; inscount and bbcount equal qemu's log."""
    original = run_prog(place(binary, tmp_path, "orig"), args, stdin)
    pcs = exe_pcs(trace_pcs(tmp_path / "orig" / "prog", args, stdin, argv0="prog"), tmp_path / "orig" / "prog")

    inst = run_prog(instrument(binary, "inscount", tmp_path, *extra), args, stdin)
    assert_same_behaviour(original, inst)
    assert _report(tmp_path / "inst" / "prog")["return_addresses"] == "original"
    assert results(inst, "inscount")["total"] == sum(pcs.values())

    inst = run_prog(instrument(binary, "bbcount", tmp_path, *extra), args, stdin)
    assert_same_behaviour(original, inst)
    counts = results(inst, "bbcount")["counts"]
    wrong = {b["address"]: (b["count"], pcs[b["address"]]) for b in counts if b["count"] != pcs[b["address"]]}
    assert not wrong, f"blocks whose count differs from qemu's (ours, qemu): {list(wrong.items())[:5]}"
    assert sum(b["count"] * b["instructions"] for b in counts) == sum(pcs.values())

    inst = run_prog(instrument(binary, "cachesim", tmp_path, *extra), args, stdin)
    assert_same_behaviour(original, inst)
    cache = results(inst, "cachesim")
    assert cache["hits"] + cache["misses"] == cache["loads"] + cache["stores"] > 0


@pytest.mark.parametrize(("sample", "variant"), sample_matrix(["unwind"], sorted(VARIANTS)))
def test_cxx_exceptions_every_tool(sample: str, variant: str, tmp_path: Path) -> None:
    binary = build(sample, variant)
    original = run_prog(place(binary, tmp_path, "orig"))
    assert b"caught out_of_range" in original.stdout and b"rethrown 4" in original.stdout
    _check_exact(binary, tmp_path, [], b"")


@pytest.mark.parametrize("variant", ["O2-thumb-dyn", "Os-thumb-static", "O2-arm-dyn-nopie"])
def test_stripped_cxx_exceptions(variant: str, tmp_path: Path) -> None:
    stripped = tmp_path / "stripped"
    subprocess.run(["arm-linux-gnueabihf-strip", "-o", str(stripped), str(build("unwind", variant))], check=True)
    placed = place(stripped, tmp_path, "orig")
    original = run_prog(placed)
    qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())
    for tool in ("inscount", "bbcount", "cachesim"):
        inst = run_prog(instrument(stripped, tool, tmp_path))
        assert_same_behaviour(original, inst)
        assert _report(tmp_path / "inst" / "prog")["return_addresses"] == "original"
        if tool == "inscount":  # exact for the code descent finds (see test_stripped)
            assert 0 < results(inst, tool)["total"] <= qemu_total


def test_cxx_exceptions_rehost_equals_inhost(tmp_path: Path) -> None:
    binary = build("unwind", "O2-thumb-dyn")
    original = run_prog(place(binary, tmp_path, "orig"))
    srv, port = start_server(Library(None), log=None)
    try:
        for tool in ("inscount", "cachesim"):
            inhost = run_prog(instrument(binary, tool, tmp_path), [])
            rehost, outcome = run_rehost(instrument(binary, tool, tmp_path, "--mode", "rehost", slot="rhst"),
                                         f"127.0.0.1:{port}")
            assert_same_behaviour(original, inhost)
            assert_same_behaviour(original, rehost)
            assert not outcome.error and outcome.summary.complete, outcome.error
            assert (rehost.cwd / f"prog.{tool}.out").read_bytes() == (inhost.cwd / f"prog.{tool}.out").read_bytes()
    finally:
        srv.stop(None)


@pytest.mark.parametrize("sample,variant", [("calls", "O2-thumb-pie"), ("calls", "O2-arm-static"),
                                            ("hash", "Os-thumb-static"), ("sort", "O0-arm-dyn")])
def test_c_samples_with_original_return_addresses(sample: str, variant: str, tmp_path: Path) -> None:
    _check_exact(build(sample, variant), tmp_path, ARGS.get(sample, []), STDIN.get(sample, b""),
                 "--return-addresses", "original")


BACKTRACE_C = r"""
#include <execinfo.h>
#include <stdio.h>

__attribute__((noinline)) static void *caller(void) { return __builtin_return_address(0); }

__attribute__((noinline)) static int depth(int n) {
    void *frames[32];
    if (n > 0) return depth(n - 1) + 1;
    int got = backtrace(frames, 32);
    for (int i = 0; i < got && i < 6; i++) printf("frame %d: %p\n", i, frames[i]);
    return got;
}

int main(void) {
    printf("called from %p\n", caller());
    return depth(3) > 4 ? 0 : 1;
}
"""


@pytest.mark.parametrize("flags", [["-O1", "-mthumb"], ["-O1", "-marm", "-static"]])
def test_c_program_reading_its_return_addresses(flags: list[str], tmp_path: Path) -> None:
    source = tmp_path / "bt.c"
    source.write_text(BACKTRACE_C)
    binary = tmp_path / "bt"
    subprocess.run(["arm-linux-gnueabihf-gcc", *flags, "-funwind-tables", str(source), "-o", str(binary)],
                   check=True)
    original = run_prog(place(binary, tmp_path, "orig"))
    assert original.returncode == 0 and original.stdout.count(b"frame ") >= 5
    inst = run_prog(instrument(binary, "inscount", tmp_path))
    assert _report(tmp_path / "inst" / "prog")["return_addresses"] == "original"
    assert_same_behaviour(original, inst)


def test_auto_choice(tmp_path: Path) -> None:
    """``auto``: original return addresses for a program that throws, relocated ones for a C
    program (faster); the report says which, and how many places got a jump."""
    assert load_binary(str(build("unwind", "O2-thumb-dyn"))).unwinds
    assert not load_binary(str(build("hash", "O2-thumb-dyn"))).unwinds
    instrument(build("hash", "O2-thumb-dyn"), "inscount", tmp_path)
    assert _report(tmp_path / "inst" / "prog")["return_addresses"] == "relocated"
    instrument(build("unwind", "Os-thumb-static"), "inscount", tmp_path)
    report = _report(tmp_path / "inst" / "prog")
    assert report["return_addresses"] == "original"
    assert report["return_sites"]["original"] > 1000 and report["return_sites"]["unwinder_entries"] > 10


def test_inspect_says_where_the_unwinder_enters(capsys) -> None:
    """``anvil inspect`` marks the program and the blocks the unwinder enters: in the C++
    sample's main, each of its catch clauses' landing pads (one per catch below)."""
    assert anvil_main(["inspect", str(build("unwind", "O2-thumb-dyn")), "--proc", "main"]) == 0
    out = capsys.readouterr().out
    assert "unwinds its stack" in out.splitlines()[0]
    assert out.count("(the unwinder enters here)") >= 4
    assert anvil_main(["inspect", str(build("hash", "O2-thumb-dyn"))]) == 0
    assert "unwinds" not in capsys.readouterr().out


def test_firmware_with_original_return_addresses(tmp_path: Path) -> None:
    """A firmware image takes --return-addresses original too (refused before decision 0122;
    the default for images that throw C++ exceptions now): every call leaves the original
    return address and every return site jumps to its copy with a 4-byte branch. crc so
    instrumented runs as the original does, and inscount's total is QEMU's count."""
    from tests.support.boards import build_firmware
    from tests.support.firmware_judge import Original, judge_firmware

    original = Original("crc", "mps2-an385", build_firmware("crc", "mps2-an385"))
    outcome = judge_firmware(original, ["inscount"], ["inhost"], tmp_path, ("--return-addresses", "original"))
    assert outcome == [("inscount/inhost", "ok")]
    report = json.loads((tmp_path / "inscount-inhost" / "fw.anvil.json").read_text())
    assert report["return_addresses"] == "original" and report["return_sites"]["original"] > 0


def test_forced_relocated_return_addresses_on_a_program_that_throws_are_warned(tmp_path: Path) -> None:
    """``--return-addresses relocated`` asked for on the C++ sample, which throws: the copy
    is made as asked, and ``anvil instrument`` warns that an exception thrown through
    instrumented code will not be caught (the copy then ends as the original does not:
    std::terminate); the default, and the option on a C program, warn of nothing."""
    from tests.support.rehost import CLI

    def stderr_of(binary: Path, *extra: str) -> list[str]:
        done = subprocess.run([*CLI, "instrument", "--tool", "inscount", *extra, str(binary), "-o",
                               str(tmp_path / "prog")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stderr.splitlines()

    throws, plain = build("unwind", "O2-thumb-dyn"), build("hash", "O2-thumb-dyn")
    warned = stderr_of(throws, "--return-addresses", "relocated")
    assert len(warned) == 2 and warned[0].startswith("anvil: warning:") and "not caught" in warned[0], warned
    assert _report(tmp_path / "prog")["return_addresses"] == "relocated"
    original = run_prog(place(throws, tmp_path, "orig"))
    assert run_prog(tmp_path / "prog").returncode != original.returncode
    assert len(stderr_of(throws)) == 1
    assert len(stderr_of(plain, "--return-addresses", "relocated")) == 1
