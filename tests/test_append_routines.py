"""Page-local copies of the record append routine (rewriter/arch/arm/appends.py, AppendRoutines).

A record site's BL must go to a copy on its own 4 KiB page when the code placed one there
(QEMU chains only same-page direct branches), and to the image's routine otherwise; the
copies are placed only where nothing falls through. The end-to-end tests (test_deferred,
test_rehost) check that records still arrive whole and in order.
"""

from __future__ import annotations

import capstone

from rewriter.arch.arm import encode as enc
from rewriter.arch.arm.appends import AppendRoutines, append_routine, emit_append_routine
from rewriter.arch.code import Code
from rewriter.emit.page_layout import PAGE


def _bl_targets(data: bytes, base: int) -> dict[int, int]:
    """Address of each BL in ``data`` (T32) -> its target, decoded by capstone."""
    md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB)
    return {i.address: int(i.op_str.lstrip("#"), 16) for i in md.disasm(data, base) if i.mnemonic == "bl"}


def test_sites_call_their_own_pages_copy_or_the_images_routine() -> None:
    routine = append_routine(2, False)
    labels = {("sym", "anvil_rh_state"): 0x900000, ("callstub", "anvil_rh_flush"): 0x800000}
    code = Code(0)
    appends = AppendRoutines()
    nop = enc.t32_nop()

    first = code.here()
    appends.call(code, routine)            # page 0: a copy follows at the next jump
    code.emit(nop * 100)
    appends.place(code)                    # after an unconditional jump on page 0
    island = code.labels[("island", 0, routine)]
    after = code.here()
    appends.call(code, routine)            # page 0 again: the same copy
    code.emit(nop * ((2 * PAGE - code.here()) // 2))
    third = code.here()
    appends.call(code, routine)            # page 2: no copy placed, the image's routine
    code.emit(nop * 10)
    emit_append_routine(code, routine)
    code.rebase(16 * PAGE)

    data = code.finish(lambda key: code.labels[key] if key in code.labels else labels[key])
    targets = _bl_targets(data, code.base)
    shift = 16 * PAGE
    assert island // PAGE == first // PAGE == 0
    assert targets[first + shift] == island + shift
    assert targets[after + shift] == island + shift
    assert targets[third + shift] == code.labels[routine]


def test_code_with_page_copies_moves_by_whole_pages_only() -> None:
    code = Code(0)
    AppendRoutines().call(code, append_routine(2, False))
    assert code.alignment % PAGE == 0
    try:
        code.rebase(PAGE + 16)
    except AssertionError:
        return
    raise AssertionError("a page-local copy would have ended up on another page")
