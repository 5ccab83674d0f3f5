"""Call stubs: the shared code a hook site calls to run a C analysis routine (save,
switch to the analysis stack, call, restore the flags without MSR where it can), and
the lock that keeps threads from running analysis code at once."""


from __future__ import annotations

from collections.abc import Hashable

from ..code import Code
from . import encode as enc
from .hooks import FLAGS_SP, HOOK_STACK, HOOK_STACK_SHIFT, HOOK_STACK_SYMBOL, IN_EXCLUSIVE
from .isa import IP, LR, SP, T32


def emit_call_stub(code: Code, name: str, function: Hashable, threads: bool = False,
                   signals: bool = False) -> None:
    """Shared tail of the calls of one routine (T32): flags and SP into d19/d20, own stack, call, back.

    ``threads``: the program starts threads, which share the analysis stack and state, so
    the call holds a lock (``_lock``) from before the stack is taken until the routine
    has returned. Not for the communicator's ``_in_exclusive`` records: their sites stand
    in the program's own LDREX/STREX window, which the lock's exclusives would break.
    ``signals``: a Linux program, whose signals the runtime holds back while a call runs
    (decision 0143): the call's way out unblocks them (``_signal_work``).
    """
    threads = threads and not name.endswith(IN_EXCLUSIVE)

    code.align(4)
    code.label(("callstub", name))
    T32.mrs(code, IP)
    T32.to_d(code, FLAGS_SP, IP, LR)  # flags, return address
    T32.mov_reg(code, IP, SP)
    T32.to_d(code, FLAGS_SP + 1, IP, IP)  # the program's SP
    if threads:
        _lock(code, name)
    _reentrant_stack(code, threads)
    T32.mov_reg(code, SP, IP)
    T32.call(code, function)
    # The program's SP back before the lock is given back: a signal between the two is
    # then held back (this thread owns the lock), and none runs its handler on the hook
    # stack while another thread may have taken it.
    T32.from_d(code, IP, LR, FLAGS_SP + 1)
    T32.mov_reg(code, SP, IP)
    if threads:
        _unlock(code, name, signals)
    elif signals:
        _signal_work(code, name)
    T32.from_d(code, IP, LR, FLAGS_SP)
    slow = ("callstub-msr", name)
    code.emit(_FLAGS_CHANGED_BEYOND_NZCV)
    T32.cbz(code, 0, slow, nonzero=True)
    code.emit(_SET_NZCV_FROM_IP + enc.t32_bx(LR))
    code.label(slow)
    T32.msr(code, IP)
    code.emit(enc.t32_bx(LR))


CALL_LOCK = ("sym", "anvil_call_lock")  # {owner's thread pointer or 0, depth} (runtime_stubs/arm/anvil_rt.c)


LOCK_PARK = 22  # d22 keeps r0 and r1 while the stub takes the lock


_MRC_THREAD_POINTER_IP = enc._hw(0xEE1D, (IP << 12) | 0x0F70)  # mrc p15, 0, ip, c13, c0, 3 (TPIDRURO)


_CMP_R0_IP = enc._hw(0x4500 | (IP << 3))  # cmp r0, ip (T2)


_DMB_ISH = enc._hw(0xF3BF, 0x8F5B)


_YIELD = enc._hw(0xBF10)


def _lock(code: Code, name: str) -> None:
    """Take the analysis lock, owned by a thread and counted, so that a signal handler the
    same thread runs in the middle of a call goes in again (as without threads) while
    other threads wait. The owner is the thread pointer (TPIDRURO; 0 before the C library
    set it, when there is one thread only). Only ip and lr are free, and the flags (the
    stub has them in d19); r0 and r1 are parked in d22.

    Owner and depth change together, in one doubleword exclusive store: a handler that
    ran between two separate stores (Go's, whose signals are not held back) saw its
    thread own the lock with no call counted, gave the lock away as its own call ended,
    and the interrupted call then went on beside another thread's (decision 0144).

        retry: ldrexd r0, r1, [lr]; cmp r0, ip; beq mine; cmp r0, #0; bne wait
               mov r0, ip; movs r1, #0
        mine:  adds r1, #1; strexd ip, r0, r1, [lr]; cmp ip, #0; mov ip, r0; bne retry; dmb
        wait:  yield; b retry
    """

    retry, wait, mine, known, taken = (("callstub-lock", name, k) for k in range(5))
    T32.to_d(code, LOCK_PARK, 0, 1)
    code.emit(_MRC_THREAD_POINTER_IP)
    _identify_thread(code, known)
    T32.pc_address(code, LR, CALL_LOCK)
    code.label(retry)
    code.emit(enc.t32_ldrexd(0, 1, LR) + _CMP_R0_IP)
    T32.branch(code, mine, enc.COND["eq"])
    T32.cbz(code, 0, wait, nonzero=True)
    code.emit(enc.t32_mov_reg(0, IP) + enc._hw(0x2100))  # movs r1, #0
    code.label(mine)
    code.emit(enc._hw(0x3101) + enc.t32_strexd(IP, 0, 1, LR))  # adds r1, #1
    code.emit(enc.t32_cmp_imm(IP, 0) + enc.t32_mov_reg(IP, 0))  # (r0 is this thread's identity on both ways here)
    T32.branch(code, retry, enc.COND["ne"])
    code.emit(_DMB_ISH)
    T32.branch(code, taken)
    code.label(wait)  # held by another thread: let it run
    code.emit(_YIELD)
    T32.branch(code, retry)
    code.label(taken)
    T32.from_d(code, 0, 1, LOCK_PARK)


# A call made while its thread is inside another (a signal handler's hooks) runs in the
# hook stack's lowest NESTED_TOP bytes, NESTED_SHIFT's 4 KiB lower for each further one
# (down to the DEEPEST-th call): the thread's first call has the rest, from the top.
NESTED_TOP = 16 * 1024
NESTED_SHIFT = 12
DEEPEST = 2 + NESTED_TOP // (1 << NESTED_SHIFT) - 1


SYSCALL_PARK = 23  # d23 keeps r7 while a thread without a thread pointer asks its id


_SYS_GETTID = 224


_SVC_0 = enc._hw(0xDF00)


def _identify_thread(code: Code, known: Hashable) -> None:
    """ip = what tells this thread from the others: its thread pointer, or where it has
    none (0), its kernel thread id * 2 + 1 (odd, unlike a C library's thread pointer).

    Threads a runtime starts with the clone system call itself (Go's, without cgo) have no
    thread pointer, and nothing cheaper tells them apart: one set for them would pass to
    every thread cloned after. Before this every such thread took the lock as its owner
    at once and two shared the analysis stack (decision 0089). The system call is made
    for each call of such a thread only (cachesim's misses, not its hits); r0 is parked,
    ip and lr are free, the flags saved."""
    code.emit(enc.t32_cmp_imm(IP, 0))
    T32.branch(code, known, enc.COND["ne"])
    code.emit(enc.t32_vmov_to_lane(SYSCALL_PARK, 7) + enc.t32_movw(7, _SYS_GETTID) + _SVC_0
              + enc.t32_vmov_from_lane(7, SYSCALL_PARK) + enc.t32_lsl_imm(IP, 0, 1) + enc.t32_orr_imm(IP, IP, 1))
    code.label(known)


def _unlock(code: Code, name: str, signals: bool = False) -> None:
    """Give the analysis lock back (see _lock) once the routine has returned: r0-r3 are
    free, the flags saved, SP the program's. A barrier (the routine's writes come first),
    then {owner, depth} becomes {owner, depth - 1}, or {0, 0} at the last, in one
    exclusive store; then, with ``signals``, the signals held back meanwhile are given
    back (_signal_work).

        dmb; retry: ldrexd r2, r3, [r1]; subs r3, #1; it eq; moveq r2, #0
                    strexd r0, r2, r3, [r1]; cmp r0, #0; bne retry
    """

    held, retry = ("callstub-unlock", name), ("callstub-unlock-retry", name)
    T32.pc_address(code, 1, CALL_LOCK)
    code.emit(_DMB_ISH)
    code.label(retry)
    code.emit(enc.t32_ldrexd(2, 3, 1) + enc._hw(0x3B01)  # subs r3, #1
              + enc.t32_it(enc.COND["eq"]) + enc._hw(0x2200) + enc.t32_strexd(0, 2, 3, 1))  # moveq r2, #0
    T32.cmp_zero(code, 0)
    T32.branch(code, retry, enc.COND["ne"])
    if signals:
        T32.cbz(code, 3, held, nonzero=True)
        _signal_work(code, name)
    code.label(held)


SIGNAL_WORK = ("sym", "anvil_signal_work")  # non-zero: signals held back, handlers to wrap (common/anvil_signal_wrap.h)


def _signal_work(code: Code, name: str) -> None:
    """Where the runtime has signal work (decision 0143: signals held back for some thread,
    handlers to wrap), the routine's call has returned and its lock is given back:
    anvil_signal_work_done wraps the handlers and unblocks this thread's signals, given
    the program's SP (it does nothing where that is inside the hook stack: a call made
    inside another by a handler the runtime did not wrap). It runs on the program's
    stack, 8-aligned, as a signal's handler would. r0-r3 are free, the flags saved; lr is
    reloaded after."""
    done = ("callstub-given", name)
    T32.pc_address(code, 1, SIGNAL_WORK)
    code.emit(enc.t32_ldr_word(0, 1, 0))
    T32.cmp_zero(code, 0)
    T32.branch(code, done, enc.COND["eq"])
    code.emit(enc.t32_mov_reg(0, SP) + enc.t32_bic_imm(1, 0, 7) + enc.t32_mov_reg(SP, 1) + enc.t32_push([0, 1]))
    T32.call(code, ("sym", "anvil_signal_work_done"))
    code.emit(enc.t32_pop([0, 1]) + enc.t32_mov_reg(SP, 0))
    code.label(done)


def _reentrant_stack(code: Code, threads: bool = False) -> None:
    """ip = where a stub puts SP: the hook stack's top or, when SP is already inside the
    hook stack, SP rounded down to 8.

    A signal or interrupt handler may interrupt any analysis code while it runs on the hook
    stack (the kernel then puts the signal frame there too): the communicator's flush, a
    routine, Anvil's own runtime (the signal mask given back after a flush is where a
    pending signal lands). The handler is the program's, instrumented: its calls come back
    through a stub (a record that flushes, a routine, ``anvil_signal_action`` before its
    ``sigaction``), and one starting again at the top would overwrite the frames of the
    code it interrupted, which then returns through a clobbered link register. Only ip and
    lr are free (r0-r3 may hold the routine's arguments); the flags are, since the stub has
    saved them in d19.

    ``threads``: the lock is held (its depth counts this call), and a handler may run on
    a stack of its own (``sigaltstack``: Go's always do), where SP says nothing of the
    call it interrupted: a thread's nested calls take the bottom of the hook stack, 4 KiB
    each (NESTED_TOP), its first call the rest from the top (Go's preemption signal, sent
    while a thread was writing the results, ran its handler's hooks over the writer's
    frames; decision 0089).
    """

    outside = ("callstub-outside", id(code), code.size)
    inside = ("callstub-inside", id(code), code.size)
    T32.pc_address(code, LR, ("sym", HOOK_STACK_SYMBOL))
    code.emit(enc.t32_sub_reg(LR, SP, LR) + enc.t32_lsr_imm(LR, LR, HOOK_STACK_SHIFT, setflags=True))
    T32.pc_address(code, IP, HOOK_STACK)  # no flags: Z says base <= SP < top
    T32.branch(code, outside, enc.COND["ne"])
    code.emit(enc.t32_mov_reg(IP, SP) + enc.t32_bic_imm(IP, IP, 7))
    if threads:
        T32.branch(code, inside)
        code.label(outside)
        T32.pc_address(code, LR, CALL_LOCK)
        code.emit(enc.t32_ldr_word(LR, LR, 4) + enc.t32_cmp_imm(LR, 1))  # the depth (this call counted)
        T32.branch(code, inside, enc.COND["eq"])  # the thread's only call: the top
        code.emit(enc.t32_cmp_imm(LR, DEEPEST) + enc.t32_it(enc.COND["hi"]) + enc.t32_movw(LR, DEEPEST))
        T32.pc_address(code, IP, ("sym+", HOOK_STACK_SYMBOL, NESTED_TOP + 2 * (1 << NESTED_SHIFT)))
        T32.add_shifted(code, IP, IP, LR, 0, NESTED_SHIFT, sub=True)  # lsl: the n-th nested call's slice
        code.label(inside)
    else:
        code.label(outside)


# The stub's way back sets the program's flags again from ip (its saved APSR) with
# ordinary flag-setting instructions, not MSR: under QEMU an MSR ends the translation
# block and leaves the CPU loop, which cost more than the analysis call itself. r0 and
# r1 are free (the routine clobbered them; the site restores them). MSR remains for
# what arithmetic cannot set: Q or GE changed by the routine, or N and Z both set.
_FLAGS_CHANGED_BEYOND_NZCV = b"".join([   # r0 != 0 when the fast way would be wrong
    enc.t32_mrs_apsr(0),
    enc.t32_logic_reg(enc.T32_EOR, 0, 0, IP),                 # bits the routine changed
    enc.t32_logic_imm(enc.T32_BIC, 0, 0, 0xF0000000),         # ... other than NZCV
    enc.t32_logic_reg(enc.T32_AND, 1, IP, IP, 0, 1),          # bit 31: N and Z both set
    enc.t32_logic_imm(enc.T32_AND, 1, 1, 0x80000000),
    enc.t32_logic_reg(enc.T32_ORR, 0, 0, 1),
])


_SET_NZCV_FROM_IP = b"".join([
    enc.t32_lsl_imm(0, IP, 2),                                # bit 31 = C, bit 30 = V
    enc.t32_logic_reg(enc.T32_EOR, 0, 0, 0, 1, 1),            # bit 30 = C ^ V
    enc.t32_logic_imm(enc.T32_AND, 1, IP, 0xC0000000),
    enc.t32_logic_imm(enc.T32_EOR, 1, 1, 0x40000000),         # bit 31 = N, bit 30 = not Z
    enc._hw(0x1800),                                          # adds r0, r0, r0: C = bit 31, V = bit 31 ^ bit 30
    enc._hw(0x0009),                                          # movs r1, r1: N and Z; C and V stay
])
