"""The start of every procedure's copy kept inside one 4 KiB page (decision 0028).

QEMU chains a translation block's direct jump straight to the next block only when the
target lies on the page the block starts on (translator_use_goto_tb); any other jump
looks its target up (helper_lookup_tb_ptr) each time it runs. Where a page boundary
falls decides which of a program's jumps pay that: Lua's ``__udivmoddi4``, a 410-byte
copy running 12 M instructions, straddled one and cost inscount 7 % of its host
instructions; a boundary in the first 512 bytes of ``luaV_execute``'s copy, 3 %.

The code a call runs first is the code every call runs. So a copy's first
``KEPT_TOGETHER`` bytes (all of a smaller copy) stay in one page. A copy's size is known
only once it is emitted (hooks make a copy 2-6 times its original), so a procedure is
emitted where the code is and, if its start crosses a boundary, rolled back and emitted
again from the next page.
"""

from __future__ import annotations

from collections.abc import Callable

from .code import Code

PAGE = 4096  # qemu-arm's guest page (TARGET_PAGE_SIZE)

# Moving a copy wastes KEPT_TOGETHER / 2 bytes on average, with probability
# KEPT_TOGETHER / PAGE: Lua's inscount image grows 1.3 % (with 1024, 2.6 %).
KEPT_TOGETHER = 512


def emit_inside_a_page(code: Code, emit: Callable[[], None], save: Callable[[], Callable[[], None]]) -> None:
    """``emit()`` a procedure's copy into ``code``; if its first KEPT_TOGETHER bytes straddle
    a page boundary, again from the next page. ``save()`` keeps what else the emission
    changes and returns the function putting it back."""
    code.keep_aligned(PAGE)  # the pages are the link address's: the code moves by whole pages
    mark, restore = code.mark(), save()
    start = code.here()
    emit()
    if start // PAGE == (min(code.here(), start + KEPT_TOGETHER) - 1) // PAGE:
        return
    code.rollback(mark)
    restore()
    code.align(PAGE)
    emit()
