"""Control flow inside a procedure: which blocks follow which, and what enters or leaves it.

Everything that is not a branch between two blocks of the same procedure goes through
the *outside*: calls and system calls leave, and their return sites are entered from
outside; returns, indirect jumps and tail calls leave; procedure entries, code whose
address is stored in data and targets of other procedures' branches are entered from
outside. Counter placement (emit/counter_placement.py) relies on this being complete:
a block entered some way the model does not know of breaks its arithmetic, which is
why procedures with computed jumps (``add pc, ...``: any instruction may be a target)
are reported as having no usable flow.
"""

from __future__ import annotations

import operator
import struct
from dataclasses import dataclass, field

from ..arch.arm.jump_tables import has_computed_jump
from .model import Binary, Instruction, Procedure


@dataclass
class ProcedureFlow:
    """Edges between a procedure's blocks, by their position in ``proc.blocks``."""

    successors: list[list[int]]
    from_outside: set[int] = field(default_factory=set)  # blocks entered from outside the procedure
    to_outside: set[int] = field(default_factory=set)  # blocks that may leave it (or stop the program)
    # (from, to) edges of a conditional direct branch (taken or not) that code can be put on
    splittable: set[tuple[int, int]] = field(default_factory=set)


def entries_from_elsewhere(binary: Binary) -> dict[int, set[int]]:
    """Per procedure address: addresses in it that other code enters directly (calls, other
    procedures' branches), besides the entry and the addresses stored in data."""
    owner = block_owners(binary)
    out: dict[int, set[int]] = {p.address: set() for p in binary.procedures}
    for proc in binary.procedures:
        for ins in proc.instructions():
            target = ins.branch_target
            if target is None:
                continue
            where = owner.get(target)
            if where is not None and (ins.is_call or where is not proc):
                out[where.address].add(target)
    return out


def block_owners(binary: Binary) -> dict[int, Procedure]:
    """The procedure each block address belongs to."""
    return {block.address: proc for proc in binary.procedures for block in proc.blocks}


def _falls_through(ins: Instruction) -> bool:
    """Execution may continue at the next address after ``ins`` without leaving the procedure."""
    if ins.is_call or ins.is_syscall:
        return ins.is_conditional  # a call that is not made; a made one returns through outside
    return ins.falls_through


def procedure_flow(proc: Procedure, entered: set[int], table_targets: dict[int, set[int]],
                   stops: set[int]) -> ProcedureFlow | None:
    """The flow of ``proc``, or None when it cannot be known (computed jumps).

    ``entered``: addresses in ``proc`` entered from outside (see entries_from_elsewhere,
    plus addresses stored in data). ``table_targets``: TBB/TBH instruction -> its cases.
    ``stops``: addresses of instructions where the program may end (program-end hooks);
    their blocks count as leaving, since the end is observed part-way through them.
    """
    if has_computed_jump(proc.instructions()) or proc.jumped_into:
        return None
    index = {b.address: i for i, b in enumerate(proc.blocks)}
    flow = ProcedureFlow(successors=[[] for _ in proc.blocks])
    flow.from_outside.add(0)
    for i, block in enumerate(proc.blocks):
        if block.address in entered:
            flow.from_outside.add(i)
        last = block.instructions[-1]
        targets: list[int] = []
        if last.is_call or last.is_syscall:
            flow.to_outside.add(i)
            if last.end in index:
                flow.from_outside.add(index[last.end])  # the return site
            # A Thumb-1 switch's helper returns into one of the cases its table names.
            targets.extend(table_targets.get(last.address, ()))
        elif last.address in table_targets:  # a switch (TBB/TBH, or a table of offsets)
            targets.extend(table_targets[last.address])
        elif last.branch_target is not None and last.is_branch:
            targets.append(last.branch_target)
        elif last.is_branch or last.writes_pc or last.name == "udf":
            # Returns, and indirect jumps: their targets in this procedure are entered from
            # outside too, as compilers keep jump tables (and computed-goto tables) in data.
            flow.to_outside.add(i)
        if _falls_through(last):
            targets.append(last.end)
        branch = last.name in ("b", "cbz", "cbnz") and last.branch_target is not None and _falls_through(last)
        for target in targets:
            if target in index:
                if index[target] not in flow.successors[i]:
                    flow.successors[i].append(index[target])
                if branch:
                    flow.splittable.add((i, index[target]))
            else:
                flow.to_outside.add(i)  # a tail call, or running into the next procedure
        if stops and not stops.isdisjoint(map(_ADDRESS, block.instructions)):  # (in C: every instruction)
            flow.to_outside.add(i)
    has_predecessor = {s for succ in flow.successors for s in succ}
    # A block nothing reaches is entered some way the model does not see: say so.
    flow.from_outside.update(i for i in range(len(proc.blocks)) if i not in has_predecessor)
    return flow


def loop_depths(flow: ProcedureFlow) -> list[int]:
    """How many loops contain each block (natural_loops)."""
    depth = [0] * len(flow.successors)
    for body in natural_loops(flow).values():
        for b in body:
            depth[b] += 1
    return depth


def natural_loops(flow: ProcedureFlow) -> dict[int, set[int]]:
    """Each loop's header -> the blocks of its body (the header's included): the union of
    its back edges' loops (back_edge_loops)."""
    loops: dict[int, set[int]] = {}
    for header, _, body in back_edge_loops(flow):
        loops.setdefault(header, set()).update(body)
    return loops


def back_edge_loops(flow: ProcedureFlow) -> list[tuple[int, int, set[int]]]:
    """Each back edge's loop as ``(header, latch, body)``: back edges found by depth-first
    search from the blocks entered from outside, the body by walking back from the latch
    to the header (both included). A header with several latches has a loop for each: a
    self loop inside a larger one is a loop of its own here."""
    n = len(flow.successors)
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    back_edges: list[tuple[int, int]] = []
    for root in sorted(flow.from_outside) + list(range(n)):
        if state[root]:
            continue
        stack = [(root, iter(flow.successors[root]))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            for nxt in it:
                if state[nxt] == 1:
                    back_edges.append((nxt, node))
                elif state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(flow.successors[nxt])))
                    break
            else:
                state[node] = 2
                stack.pop()
    predecessors = predecessors_of(flow.successors)
    loops = []
    for header, latch in back_edges:
        body = {header, latch}
        work = [latch] if latch != header else []
        while work:
            node = work.pop()
            for p in predecessors[node]:
                if p not in body:
                    body.add(p)
                    work.append(p)
        loops.append((header, latch, body))
    return loops


def predecessors_of(successors: list[list[int]]) -> list[list[int]]:
    """The blocks each block is reached from, by the successor lists' edges."""
    predecessors: list[list[int]] = [[] for _ in successors]
    for i, succ in enumerate(successors):
        for s in succ:
            predecessors[s].append(i)
    return predecessors


_NAME = operator.attrgetter("name")
_ADDRESS = operator.attrgetter("address")
EXCLUSIVE_LOADS = ("ldrex", "ldaex")  # ldrex, ldrexb/h/d, ldaex...: open an exclusive access
EXCLUSIVE_STORES = ("strex", "stlex")  # ... which a store-exclusive or CLREX ends


def exclusive_windows(proc: Procedure) -> frozenset[int]:
    """Addresses of ``proc``'s instructions that may run while the program's own exclusive
    access is open and still to be used: after a load-exclusive, and before the
    store-exclusive that uses it, along the procedure's direct flow (calls return to the
    next instruction).

    Code placed there must not use LDREX/STREX itself: its STREX would clear the monitor
    and the program's STREX would fail each time round its retry loop. Two may-analyses:
    forwards, a load-exclusive opens the window and a store-exclusive or CLREX (not a
    conditional one) closes it; backwards, the window matters only where a store-exclusive
    can still come before another load-exclusive or a CLREX (a compare-and-swap's failure
    path leaves the monitor open but never stores). Windows that span procedures (an
    LDREX in one, its STREX in another) are not seen.
    """
    # The distinct names first (a set made in C): every relocated procedure is asked.
    if not any(name.startswith(EXCLUSIVE_LOADS) for name in set(map(_NAME, proc.instructions()))):
        return frozenset()
    blocks = proc.blocks
    index = {b.address: i for i, b in enumerate(blocks)}

    def opens(ins: Instruction) -> bool:
        return ins.name.startswith(EXCLUSIVE_LOADS)

    def closes(ins: Instruction) -> bool:
        return (ins.name.startswith(EXCLUSIVE_STORES) or ins.name == "clrex") and not (ins.is_conditional or ins.in_it)

    def forward(ins: Instruction, inside: bool) -> bool:
        return True if opens(ins) else False if closes(ins) else inside

    def backward(ins: Instruction, used: bool) -> bool:  # used after ins -> used before it
        if ins.name.startswith(EXCLUSIVE_STORES):
            return True
        return False if opens(ins) or ins.name == "clrex" else used

    successors: list[list[int]] = []
    for block in blocks:
        last = block.instructions[-1]
        targets = [last.end] if last.falls_through else []
        if last.is_branch and not last.is_call and last.branch_target is not None:
            targets.append(last.branch_target)
        successors.append([index[t] for t in targets if t in index])
    predecessors = predecessors_of(successors)

    open_at_entry = [False] * len(blocks)
    work = list(range(len(blocks)))
    while work:
        i = work.pop()
        inside = open_at_entry[i]
        for ins in blocks[i].instructions:
            inside = forward(ins, inside)
        for s in successors[i] if inside else []:
            if not open_at_entry[s]:
                open_at_entry[s] = True
                work.append(s)
    used_at_exit = [False] * len(blocks)
    work = list(range(len(blocks)))
    while work:
        i = work.pop()
        used = used_at_exit[i]
        for ins in reversed(blocks[i].instructions):
            used = backward(ins, used)
        for p in predecessors[i] if used else []:
            if not used_at_exit[p]:
                used_at_exit[p] = True
                work.append(p)

    found: set[int] = set()
    for i, block in enumerate(blocks):
        used_before: list[bool] = []
        used = used_at_exit[i]
        for ins in reversed(block.instructions):
            used = backward(ins, used)
            used_before.append(used)
        inside = open_at_entry[i]
        for ins, used in zip(block.instructions, reversed(used_before)):
            if inside and used:
                found.add(ins.address)
            inside = forward(ins, inside)
    return frozenset(found)


# Words of a Cortex-M vector table looked at: the 16 system exceptions and up to 240 interrupts.
VECTOR_WORDS = 256
# VTOR holds a table address with its low 7 bits zero (more for more than 32 interrupts).
VECTOR_ALIGN = 128
# Words 7-10 and 13 of an ARMv7-M vector table are reserved (zero).
_RESERVED_VECTORS = (7, 8, 9, 10, 13)


def _table_words(binary: Binary, at: int, limit: int = VECTOR_WORDS) -> tuple[int, ...]:
    """The words of the vector table at ``at``, up to ``limit`` and no further than the
    file bytes of the segment holding it."""
    seg = next((s for s in binary.segments if s.filesz and s.vaddr <= at < s.vaddr + s.filesz), None)
    if seg is None:
        return ()
    count = min(limit, (seg.vaddr + seg.filesz - at) // 4)
    return struct.unpack(f"<{count}I", binary.read(at, 4 * count))


def _table_handlers(words: tuple[int, ...], starts: set[int]) -> list[int]:
    """The handlers of a vector table's ``words`` (the reset handler's word 1 left out):
    up to the first word that is neither 0 (reserved) nor the address of code in Thumb state."""
    handlers = []
    for word in words[2:]:
        if word and not (word & 1 and word & ~1 in starts):
            break
        if word:
            handlers.append(word & ~1)
    return handlers


def _looks_like_vector_table(words: tuple[int, ...], starts: set[int]) -> bool:
    """An ARMv7-M vector table: a word-aligned stack pointer, a reset handler in Thumb
    state, the reserved words zero and every other system exception 0 or Thumb code."""
    if len(words) < 16 or not words[0] or words[0] & 3 or not (words[1] & 1 and words[1] & ~1 in starts):
        return False
    if any(words[i] for i in _RESERVED_VECTORS):
        return False
    return all(not w or (w & 1 and w & ~1 in starts) for w in words[2:16])


def vector_tables(binary: Binary, starts: set[int]) -> list[int]:
    """Firmware: where the vector tables are. The core reads the one at the image's lowest
    address at reset (VTOR's reset value, where images place it); start-up code may point
    VTOR at another (an application behind a boot loader's table, or one of several
    images), which is found by its shape at each VTOR-aligned address of the image's
    loaded bytes. A table copied into RAM at run time is its flash original's copy."""
    loaded = [s for s in binary.segments if s.filesz]
    if not loaded:
        return []
    lowest = min(s.vaddr for s in loaded)
    found = [lowest]
    for seg in loaded:
        at = -(-seg.vaddr // VECTOR_ALIGN) * VECTOR_ALIGN
        while at + 64 <= seg.vaddr + seg.filesz:
            if at != lowest and _looks_like_vector_table(_table_words(binary, at, 16), starts):
                found.append(at)
            at += VECTOR_ALIGN
    return found


def exception_handlers(binary: Binary, starts: set[int]) -> list[int]:
    """Firmware: the handlers in the image's vector tables (``vector_tables``): word 0
    is the initial SP, word 1 the reset handler, then the other exceptions and the
    interrupts, up to the first word that is neither 0 (reserved) nor the address of
    code in Thumb state. The reset handler is not among them."""
    handlers: list[int] = []
    for at in vector_tables(binary, starts):
        handlers += [h for h in _table_handlers(_table_words(binary, at), starts) if h not in handlers]
    return handlers


def reset_handler(binary: Binary) -> int:
    """Firmware: where the core starts, word 1 of the vector table at the image's lowest
    address (what QEMU and a real core read, whatever the ELF entry says: a linker script's
    ENTRY may name another symbol, or none), when it is Thumb code of a procedure; else
    the ELF entry."""
    lowest = min((s for s in binary.segments if s.filesz), key=lambda s: s.vaddr, default=None)
    word = struct.unpack("<I", binary.read(lowest.vaddr + 4, 4))[0] if lowest and lowest.filesz >= 8 else 0
    if word & 1 and any(p.address == word & ~1 for p in binary.procedures):
        return word & ~1
    return binary.entry & ~1


def interrupt_code(binary: Binary) -> set[int]:
    """Firmware: the addresses of the procedures an exception handler may run: the handlers
    in the vector table (``exception_handlers``) and whatever they call or branch to,
    directly. When such code calls or jumps through a register, it may reach anything:
    every procedure is in. So is every procedure when such code sets a stack pointer
    (``msr psp``/``msr msp``): a context switch, as an RTOS's PendSV or SVC handler makes,
    after which another thread of control runs, stopped anywhere, and may run the same code
    (decision 0085).
    """
    owner = block_owners(binary)
    todo = [owner[a] for a in exception_handlers(binary, set(owner)) if a != binary.entry & ~1]
    seen: set[int] = set()
    while todo:
        proc = todo.pop()
        if proc.address in seen:
            continue
        seen.add(proc.address)
        for ins in proc.instructions():
            if (ins.is_indirect and not ins.is_return) or _sets_a_stack_pointer(ins):
                return {p.address for p in binary.procedures}
            target = owner.get(ins.branch_target) if ins.branch_target is not None else None
            if target is not None and target is not proc:
                todo.append(target)
    return seen


def _sets_a_stack_pointer(ins: Instruction) -> bool:
    """``msr psp, rN`` or ``msr msp, rN`` (a banked stack pointer written: ARMv7-M)."""
    return ins.name == "msr" and ins.op_str.split(",", 1)[0].strip() in ("psp", "msp")
