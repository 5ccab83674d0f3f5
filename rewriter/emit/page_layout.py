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

from collections.abc import Callable, Hashable

from ..arch.arm import encode as enc
from ..arch.code import Code

PAGE = 4096  # qemu-arm's guest page (TARGET_PAGE_SIZE)
# qemu-system-arm's page for M-profile cores (TARGET_PAGE_SIZE; they may have an MPU with
# small regions): its translation blocks end at a 1 KiB boundary and chain within one.
M_PAGE = 1024

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


class PageCopies:
    """Shared routines that sites BL to, with a copy on each 4 KiB page whose sites call them.

    QEMU chains a direct branch only to the page its translation block starts on
    (translator_use_goto_tb), so a BL to one routine for the whole image costs a TB lookup
    each time it runs. Where the code passes a point nothing falls through to (``place``:
    after an unconditional jump), the routines that sites on the current page have asked
    for are copied there, and a site's BL goes to its own page's copy when there is one,
    else to the image's routine (emitted after the code by the owner, from ``routines``).
    Pages are the link address's, which is why the code asks to stay page aligned
    (Code.keep_aligned). A routine is a hashable key, also the label of the image's copy;
    ``emit_copy`` writes one copy under a given label.
    """

    def __init__(self) -> None:
        self.routines: set[Hashable] = set()  # the image's copies, emitted after the code
        self.wanted: dict[int, set[Hashable]] = {}  # page -> routines its sites call
        # page -> routine -> the label of the page's copy: one label, not one per site
        # (every branch holds it until the code is encoded).
        self._copy_labels: dict[int, dict[Hashable, tuple]] = {}
        self._one_of_each: dict[Hashable, Hashable] = {}  # routine -> the equal one branches keep

    def emit_copy(self, code: Code, routine: Hashable, label: Hashable) -> None:
        """Write a copy of ``routine`` labelled ``label`` (by the subclass)."""
        raise NotImplementedError

    def call(self, code: Code, routine: Hashable) -> None:
        """BL to ``routine``: this page's copy if one is placed, else the image's."""
        code.keep_aligned(PAGE)
        routine = self._one_of_each.setdefault(routine, routine)  # (sites make equal ones of their own)
        self.routines.add(routine)
        page = code.here() // PAGE
        self.wanted.setdefault(page, set()).add(routine)
        labels = self._copy_labels.get(page)
        if labels is None:
            labels = self._copy_labels[page] = {}
        label = labels.get(routine)
        if label is None:
            label = labels[routine] = ("island", page, routine)
        code.branch(routine, enc.t32_bl, True, prefer=label)

    def place(self, code: Code) -> None:
        """Nothing falls through to here: copy the routines this page's sites want and lacks."""
        if not self.wanted:
            return
        page = code.here() // PAGE
        for stale in [p for p in self.wanted if p < page]:
            del self.wanted[stale]
        for routine in sorted(self.wanted.pop(page, ()), key=repr):
            if ("island", page, routine) not in code.labels:
                self.emit_copy(code, routine, ("island", page, routine))

    def saved(self) -> Callable[[], None]:
        """A function putting back the pages' wants as they are now (emit_inside_a_page)."""
        wanted = {page: set(routines) for page, routines in self.wanted.items()}

        def restore() -> None:
            self.wanted = wanted
        return restore
