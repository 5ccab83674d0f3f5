"""What tests read of a procedure's loops, from the rewriter's own decoding (the counts they
are compared with come from elsewhere: a program's report of its iterations)."""

from __future__ import annotations

from rewriter.ir.model import Procedure


def only_loop_start(proc: Procedure) -> int:
    """Where the one loop of ``proc`` starts: the target of its one backward branch."""
    back = [ins.branch_target for ins in proc.instructions() if ins.branch_target is not None and not ins.is_call
            and proc.address < ins.branch_target <= ins.address]
    assert len(back) == 1, [hex(target) for target in back]
    return back[0]
