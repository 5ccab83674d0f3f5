"""The analysis lock of a threaded ARM copy's call stubs (arch/arm/call_stubs.py), under
unicorn: a signal handler's call made by the same thread at any instruction of another
call must leave the lock as it found it (decision 0144)."""

from __future__ import annotations

import struct

from tests.test_encoders import thumb_cpu_with_neon


def test_a_handlers_call_at_any_instruction_leaves_the_lock_as_it_found_it() -> None:
    """A threaded call stub, interrupted before each of its instructions in turn by a whole
    call of the same thread through the same stub (a signal handler's, on a stack of its
    own, as Go's handlers run): the handler's call finds the lock free or its own and
    leaves {owner, depth} as it was; the interrupted call's routine sees its thread own
    the lock once; both end with the lock free. Before, a handler's call that came
    between the store of the owner and that of the depth (or the other way round on the
    way out) found its thread owning the lock with no call counted and freed it as it
    ended: another thread then took it beside the interrupted call (Go's go_preempt copy
    under memtrace hung in about 1 run of 200)."""
    from unicorn import UC_HOOK_CODE
    from unicorn.arm_const import UC_ARM_REG_C13_C0_3, UC_ARM_REG_LR, UC_ARM_REG_PC, UC_ARM_REG_R0, UC_ARM_REG_SP

    from rewriter.arch.arm import encode as enc
    from rewriter.arch.arm.call_stubs import CALL_LOCK, emit_call_stub
    from rewriter.arch.arm.hooks import HOOK_STACK_SYMBOL
    from rewriter.arch.code import Code

    at, done, nested_done = 0x10000, 0x10F00, 0x10F10
    lock, seen = 0x20000, 0x20100  # the lock's two words; where each call's routine notes them
    hook_stack, program_stack, handler_stack = 0x40000, 0x60000, 0x70000
    thread = 0x7F001230  # the thread pointer: the lock's owner while the thread holds it
    code = Code(at)
    code.label("routine")  # [r0] = the lock's {owner, depth} as this call sees it
    code.emit(enc.t32_mov32(1, lock) + enc.t32_ldr_word(2, 1, 0) + enc.t32_ldr_word(3, 1, 4)
              + enc.t32_str_word(2, 0, 0) + enc.t32_str_word(3, 0, 4) + enc.t32_bx(14))
    emit_call_stub(code, "f", "routine", threads=True)

    def resolve(key: object) -> int:
        if key in code.labels:
            return code.labels[key]
        if key == CALL_LOCK:
            return lock
        assert isinstance(key, tuple) and key[1] == HOOK_STACK_SYMBOL, key
        return hook_stack + (key[2] if key[0] == "sym+" else 0)

    data = code.finish(resolve)
    stub = code.labels[("callstub", "f")]
    uc = thumb_cpu_with_neon()
    for base, size in ((at, 0x1000), (lock, 0x1000), (hook_stack, 0x10000), (program_stack, 0x1000),
                       (handler_stack, 0x1000)):
        uc.mem_map(base, size)
    uc.mem_write(at, data)
    uc.mem_write(done, enc.t32_nop())
    uc.mem_write(nested_done, enc.t32_nop())
    uc.reg_write(UC_ARM_REG_C13_C0_3, thread)

    def lock_words() -> tuple[int, int]:
        return struct.unpack("<2I", uc.mem_read(lock, 8))

    # (a code hook stops the run: unicorn's own count is not kept by blocks translated before)
    stop_after = [0]

    def count_down(uc: object, address: int, size: int, _: object) -> None:
        stop_after[0] -= 1
        if stop_after[0] == -1:
            uc.emu_stop()

    uc.hook_add(UC_HOOK_CODE, count_down)

    def call(sp: int, back: int, note: int, count: int = 0) -> None:
        uc.reg_write(UC_ARM_REG_SP, sp)
        uc.reg_write(UC_ARM_REG_LR, back | 1)
        uc.reg_write(UC_ARM_REG_R0, note)
        stop_after[0] = count or -2
        uc.emu_start(stub | 1, back)

    steps = 0
    owned_when_interrupted = 0
    while True:
        steps += 1
        uc.mem_write(lock, bytes(8))
        uc.mem_write(seen, bytes(16))
        call(program_stack + 0x800, done, seen, count=steps)
        pc = uc.reg_read(UC_ARM_REG_PC)
        if pc == done:
            break
        before = lock_words()
        owned_when_interrupted += before[0] == thread
        interrupted = uc.context_save()
        call(handler_stack + 0x800, nested_done, seen + 8)  # the handler's call, whole
        assert struct.unpack("<2I", uc.mem_read(seen + 8, 8)) == (thread, before[1] + 1 if before[0] else 1), \
            f"handler's call before instruction {steps} of the stub"
        assert lock_words() == before, f"handler's call before instruction {steps} changed the lock"
        uc.context_restore(interrupted)
        stop_after[0] = -2
        uc.emu_start(pc | 1, done)
        assert struct.unpack("<2I", uc.mem_read(seen, 8)) == (thread, 1), f"interrupted before instruction {steps}"
        assert lock_words() == (0, 0)
    assert steps > 40 and owned_when_interrupted > 20  # (the handler's calls found the lock held, often)
