"""The loader stub in pieces (decision 0097).

The stub that maps the added region at start-up goes into the free end of the text
segment's last page, or whole into the bytes of a relocated procedure. GNU ld's default
layout for ARM starts the next segment in the page right after the text's last one, so
that end is as long as the text leaves of its page: any length up to 4 KiB, under the
stub's 208 bytes for about one program in 20. A small stripped program, whose procedures
are small, then has no place for it whole, and was refused ("no room for the loader
stub"). Its pieces, each ending in a jump to the next, now go where each fits.

samples/tight_text.c is built with read-only padding that ends its text segment 48 bytes
before the page in which the data segment starts (the padding is found from a first
build's layout), then stripped. Checked: the report's stub pieces are not one run, and
inscount's, cachesim's and ReHost inscount's copies print what the original prints
(addresses of a global, a heap block and a local among it) with the same exit status;
inscount counts no more than qemu's count of the executable's instructions.
"""

from __future__ import annotations

import json
from pathlib import Path

from elftools.elf.elffile import ELFFile

from rewriter.emit.target_build import stub_size
from tests.oracles.qemu_trace import exe_pcs, trace_pcs
from tests.support.rehost import run_rehost_alone
from tests.support.run import assert_same_behaviour, instrument, place, results, run_prog
from tests.support.samples import build, stripped

PAGE = 4096
SLACK = 48  # bytes the text segment leaves of its last page


def _layout(binary: Path) -> tuple[int, int]:
    """The end of the executable segment and the start of the next segment's first page."""
    with open(binary, "rb") as f:
        loads = [seg for seg in ELFFile(f).iter_segments() if seg["p_type"] == "PT_LOAD"]
    text = next(seg for seg in loads if seg["p_flags"] & 1)
    end = text["p_vaddr"] + text["p_filesz"]
    following = min(seg["p_vaddr"] for seg in loads if seg["p_vaddr"] > text["p_vaddr"])
    return end, following & ~(PAGE - 1)


def _tight_build() -> Path:
    """tight_text padded until its text segment ends SLACK bytes before the next segment's page."""
    pad = 1
    for _ in range(4):
        binary = build("tight_text", "O2-thumb-dyn", [f"-DPAD={pad}"])
        end, following = _layout(binary)
        if following - end == SLACK:
            return binary
        pad += following - end - SLACK  # the end moves with the padding, byte for byte
        if pad < 1:
            pad += PAGE
    raise AssertionError(f"the padding did not bring the text's end {SLACK} bytes before the next segment")


def test_stub_in_pieces_where_no_place_holds_it_whole(tmp_path: Path) -> None:
    binary = stripped(_tight_build(), tmp_path / "tight")
    end, following = _layout(binary)
    assert following - end < stub_size(False)  # the slack cannot hold the stub
    placed = place(binary, tmp_path, "orig")
    original = run_prog(placed)
    assert original.returncode == 0, original.stderr
    qemu_total = sum(exe_pcs(trace_pcs(placed, [], b"", argv0="prog"), placed).values())

    inst = instrument(binary, "inscount", tmp_path)
    pieces = json.loads(Path(f"{inst}.anvil.json").read_text())["loader_stub"]
    assert len(pieces) > 1, pieces  # not whole
    copy = run_prog(inst)
    assert_same_behaviour(original, copy)
    assert 0 < results(copy, "inscount")["total"] <= qemu_total

    assert_same_behaviour(original, run_prog(instrument(binary, "cachesim", tmp_path, slot="cach")))
    rehost, outcome = run_rehost_alone(instrument(binary, "inscount", tmp_path, "--mode", "rehost", slot="rhst"))
    assert_same_behaviour(original, rehost)
    assert outcome.summary is not None and outcome.summary.complete, outcome.error
