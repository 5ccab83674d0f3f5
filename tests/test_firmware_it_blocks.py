"""ARMv7-M instructions in an IT block (``ite eq; mrseq r0, msp; mrsne r0, psp``: every
CMSIS and FreeRTOS fault or SVC handler finds its exception frame so) keep their
conditions (decision 0171). The A-profile decoder stops at an MRS of MSP or PSP; the
M-profile one read it alone, without its IT, so both MRS ran in the copy and the handler
took the wrong stack's frame.

Oracles: the original image's output on the board (each SVC adds 100 to the caller's r0,
on the main stack and on the process stack), and the IT conditions of the instructions
an IT block covers, from its encoding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.ir.elf_loader import load_binary
from tests.support.boards import anvil_cli, build_firmware, instrument, run_firmware


@pytest.mark.parametrize("tool", ["inscount", "cachesim"])
def test_a_handler_picks_its_frames_stack(tool: str, tmp_path: Path) -> None:
    image = build_firmware("svc_frame", "mps2-an385")
    expected = run_firmware(image, "mps2-an385")
    assert expected == (b"main stack: 6225\nprocess stack: 6225\n", 0)
    handler = next(p for p in load_binary(str(image)).procedures if p.name == "SVC_Handler")
    moves = [ins for ins in handler.instructions() if ins.mnemonic.startswith("mrs")]
    assert [(ins.cond, ins.in_it) for ins in moves] == [(0, True), (1, True)]  # eq, ne
    out = instrument(image, tool, tmp_path / "fw")
    run = anvil_cli("run", "-q", "--board", "mps2-an385", out.name, cwd=out.parent, timeout=120)
    assert (run.stdout, run.returncode) == expected, run.stderr
