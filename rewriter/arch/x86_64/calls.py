"""Calls of a tool's analysis routines from the x86-64 copies (decision 0113).

Each call site is a few instructions before the copied instruction (or at its block's
start), which leave every register, the flags and the red zone as they were::

    lea  rsp, [rsp-128]      step over the red zone (leaf code keeps data under RSP)
    push rdi
    push rsi
    lea  rdi, [operand]      the run-time argument, if the routine takes one: an access's
                             effective address (RSP-based: 144 more, for the steps above),
                             or a register's value
    mov  esi, site
    call anvil_site_entry    saves what a C call may change and the flags, aligns the
                             stack, calls anvil_site(value, site)
    pop  rsi
    pop  rdi
    lea  rsp, [rsp+128]

``anvil_site`` (generated here, in one unit with the tool's C so that the routines are
inlined into it) reads the site's routine and its static arguments (the instruction's
link-time address, the access's size and kind, constants) from tables and calls the
routine. An access relative to ``fs`` (thread-local data) adds the thread pointer, which
the x86-64 TLS ABI keeps at ``fs:0``. The analysis library is built without SSE registers
(``-mgeneral-regs-only``), so the vector registers need no saving.

A ``rep``-prefixed string instruction with calls is copied as a loop of single elements,
each with its calls before it, as Valgrind and QEMU see its accesses: one per element.

ReHost (``records``): ``anvil_site`` appends a record (the site, the run-time values) to
the communicator's ring instead of calling the routine, which runs on the host with the
static arguments of the site table (``table_args``); the repeat filters stay in the program.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ...api import Arg, Prototype, RepeatFilter
from ...errors import AnvilError
from ...ir.model import Access, Block, Hook, Instruction, Procedure
from .code64 import Code64
from .decode import ALL_FLAGS, RIP, RSP
from .flags import live_before

BELOW_RED_ZONE = bytes.fromhex("488d642480")        # lea rsp, [rsp-128]
ABOVE_RED_ZONE = bytes.fromhex("488da42480000000")  # lea rsp, [rsp+128]
_SAVE, _RESTORE = b"\x57\x56", b"\x5e\x5f"          # push rdi; push rsi / pop rsi; pop rdi
# How far RSP has moved from the program's when the argument is computed.
_RSP_MOVED = 128 + 16
_CALL_SIZE = 10  # mov esi, site; call entry
# The records of deferred routines' calls (CallSites._record): (value, left, site), 24
# bytes each, run in order when the buffer fills, before any call made at once, and at
# the program's end before the tool's end routines.
_RECORDS_DECLARED = """#define ANVIL_RECORDS 4096
anvil_word anvil_records[3 * ANVIL_RECORDS];
anvil_word *anvil_record_cursor, *anvil_record_limit;
void anvil_records_flush(void);
"""
_RECORDS = """void anvil_records_start(void)
{{
    anvil_record_cursor = anvil_records;
    anvil_record_limit = anvil_records + 3 * ANVIL_RECORDS;
}}

__attribute__((flatten)) void anvil_records_flush(void)
{{
    for (const anvil_word *r = anvil_records; r < anvil_record_cursor; r += 3) {{
        anvil_word value = r[0], left = r[1];
        uint32_t site = (uint32_t)r[2];
        const uint32_t *s = anvil_site_args + (anvil_word)site * {width};
        (void)s, (void)left;
{dispatch}    }}
    anvil_record_cursor = anvil_records;
}}
"""
#: Program start and end calls of a program whose calls make records.
RECORDS_START = Prototype("anvil_records_start", ())
RECORDS_END = Prototype("anvil_records_flush", ())
_STRINGS = frozenset(f"{name}{width}" for name in ("movs", "stos", "cmps", "scas", "lods", "ins", "outs")
                     for width in "bwdq")
_REPEAT_PREFIXES = (0xF2, 0xF3)
_LEGACY_PREFIXES = frozenset({0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3})


def _rex(w: bool, r: int, x: int, b: int) -> int:
    return 0x40 | w << 3 | (r >> 3) << 2 | (x >> 3) << 1 | b >> 3


def lea_rdi(access: Access, moved: int) -> bytes:
    """``lea rdi, [base + index << shift + disp]`` for ``access`` (RSP ``moved`` bytes down
    since the instruction), or ``mov rdi, disp`` for an absolute address. Not for an access
    relative to RIP (its displacement depends on where the code goes: a fixup, ``_value``)."""
    disp = access.disp + (moved if access.base == RSP else 0)
    if access.base < 0 and access.index is None:
        return b"\x48\xbf" + struct.pack("<Q", disp & (1 << 64) - 1)   # mov rdi, imm64
    if not -(1 << 31) <= disp < 1 << 31:
        raise AnvilError(f"a memory operand with a displacement of {disp:#x} cannot be traced")
    index = access.index if access.index is not None else 4  # 4: no index
    base = access.base if access.base >= 0 else 5           # 5 with mod 00: no base, disp32
    mod = 0 if access.base < 0 else 2
    sib = access.shift << 6 | (index & 7) << 3 | base & 7
    rex = _rex(True, 7, index if access.index is not None else 0, base if access.base >= 0 else 0)
    return bytes((rex, 0x8D, mod << 6 | 7 << 3 | 4, sib)) + struct.pack("<i", disp)


def mov_rdi(register: int, moved: int) -> bytes:
    """``rdi`` := the program's value of ``register`` (0 rax ... 15 r15)."""
    if register == RSP:
        return bytes.fromhex("488dbc24") + struct.pack("<i", moved)   # lea rdi, [rsp+moved]
    return bytes((_rex(True, register, 0, 7), 0x89, 0xC0 | (register & 7) << 3 | 7))  # mov rdi, reg


def repeats(ins: Instruction) -> bool:
    """Whether ``ins`` is a string instruction with a ``rep``/``repe``/``repne`` prefix.

    Only string instructions repeat: the prefix on anything else is ignored by the processor
    and kept by assemblers as a hint or a filler (AMD's ``rep ret``, OpenSSL's ``repz ret``
    at the end of its assembly, ``bnd``-less MPX forms), and such an instruction runs once.
    Counting around a ``rep ret`` would push RCX over the return address."""
    prefix, _, name = ins.mnemonic.partition(" ")
    return prefix in ("rep", "repe", "repne", "repz", "repnz") and name in _STRINGS and "xmm" not in ins.op_str


def string_repeats(ins: Instruction) -> bool:
    """Whether ``ins`` repeats (``repeats``) with 64-bit addressing: RCX counts, RSI/RDI
    point, as the loop of elements (``CallSites.element_loop``) has them."""
    return repeats(ins) and 0x67 not in _prefixes(ins.raw)


def _prefixes(raw: bytes) -> bytes:
    k = 0
    while k < len(raw) and raw[k] in _LEGACY_PREFIXES:
        k += 1
    return raw[:k]


def one_element(ins: Instruction) -> bytes:
    """``ins`` without its repeat prefix: one element of the string operation."""
    raw = ins.raw
    k = next(k for k, byte in enumerate(_prefixes(raw)) if byte in _REPEAT_PREFIXES)
    return raw[:k] + raw[k + 1:]


class CallSites:
    """The call sites of a tool's routines in the copies, and the C that serves them.

    ``symbol(name)``: the link-time address of a symbol of the analysis library (asked for
    when the code is placed); ``threaded``: the program starts threads, and the calls go
    through a lock (``anvil_site_locked``)."""

    def __init__(self, symbol: Callable[[str], int], threaded: bool = False, deferring: bool = False,
                 records: bool = False) -> None:
        self.symbol = symbol
        self.entry = "anvil_site_locked_entry" if threaded else "anvil_site_entry"
        self.routines: list[Prototype] = []
        self._routine_index: dict[str, int] = {}
        self.site_routine: list[int] = []
        self.site_args: list[tuple[int, ...]] = []
        self.site_fs: list[bool] = []
        # ReHost: each site's arguments as the site table has them (prototype order, None
        # for what its record carries); the routines run on the host.
        self.records = records
        self.table_args: list[list] = []
        self.threaded = threaded
        # Misses of deferred routines' filtered sites become records run in batches
        # (``_record``): not in a program that starts threads, whose calls take a lock.
        self.deferring = deferring and not threaded
        # The flags live before each instruction of the procedure being copied, where it has
        # repeat filters tested inline (``enter``).
        self._live: dict[int, int] = {}

    @classmethod
    def factory(cls, threaded: bool, deferring: bool = False,
                records: bool = False) -> Callable[[Callable[[str], int]], CallSites]:
        """What makes the call sites once the library's symbols can be asked for."""
        return lambda symbol: cls(symbol, threaded, deferring, records)

    def enter(self, proc: Procedure, switch_cases: dict[int, set[int]]) -> None:
        """Before ``proc`` is copied: the flags' liveness, where a filter's test needs it."""
        filtered = any(hook.prototype.filter is not None for block in proc.blocks
                       for ins in block.instructions for hook in ins.hooks or ())
        self._live = live_before(proc, switch_cases) if filtered else {}

    def block(self, block: Block, code: Code64) -> None:
        """The calls ``block`` asks for at its start, after its procedure's if it is the
        procedure's entry (as on ARM: the entry block's every run, a loop back to it too)."""
        proc = block.procedure
        hooks = [*proc.hooks, *block.hooks] if proc is not None and block.address == proc.address else block.hooks
        for hook in hooks:
            self._site(code, hook, block.address, len(block.instructions), None)

    def before(self, ins: Instruction, code: Code64) -> None:
        """The calls ``ins`` asks for before it runs (one per access where they take an access)."""
        insns = len(ins.block.instructions) if ins.block is not None else 1
        for hook in ins.hooks:
            if any(kind.per_access for kind in hook.prototype.kinds):
                for access in ins.accesses:
                    self._site(code, hook, ins.address, insns, access)
            else:
                self._site(code, hook, ins.address, insns, None)

    def element_loop(self, ins: Instruction, code: Code64) -> None:
        """A repeated string instruction as a loop of single elements, each after its calls.

        ``jrcxz`` and ``lea`` leave the flags alone, so ``repe``/``repne`` end on the flags
        of the element's comparison, as the prefix does."""
        top, done = ("x86-rep-top", ins.address), ("x86-rep-done", ins.address)
        label = code.labels.__getitem__  # read when the fixups are encoded: the code may be rebased first
        code.label(top)
        code.emit(b"\xe3\x02\xeb\x05")  # jrcxz +2 (to the jump out); jmp +5 (over it)
        code.rel32_lookup(b"\xe9", b"", label, done)
        self.before(ins, code)
        code.emit(one_element(ins) + b"\x48\x8d\x49\xff")  # the element; lea rcx, [rcx-1]
        prefix = ins.mnemonic.split()[0]
        if prefix != "rep":  # repe/repz go on while ZF is set, repne/repnz while it is clear
            condition = 0x85 if prefix in ("repe", "repz") else 0x84
            code.rel32_lookup(bytes((0x0F, condition)), b"", label, done)
        code.rel32_lookup(b"\xe9", b"", label, top)
        code.label(done)

    def _routine(self, proto: Prototype) -> int:
        index = self._routine_index.get(proto.name)
        if index is None:
            index = self._routine_index[proto.name] = len(self.routines)
            self.routines.append(proto)
        return index

    def _site(self, code: Code64, hook: Hook, address: int, insns: int, access: Access | None) -> None:
        proto = hook.prototype
        statics: list[int] = []
        dynamic: list[tuple[Arg, object]] = []
        for kind, value in zip(proto.kinds, hook.args):
            if kind is Arg.CONST or kind is Arg.SITE_ID:
                statics.append(int(value))
            elif kind is Arg.INST_ADDR:
                if address >= 1 << 32:
                    raise AnvilError(f"{address:#x}: instruction addresses above 4 GiB are not passed yet")
                statics.append(address)
            elif kind is Arg.ACCESS_SIZE:
                statics.append(access.size if access is not None else 0)
            elif kind is Arg.ACCESS_IS_STORE:
                statics.append(int(access.is_store) if access is not None else 0)
            elif kind is Arg.BLOCK_INSNS:
                statics.append(insns)
            elif kind is Arg.EFFADDR or kind is Arg.REG_VALUE:
                dynamic.append((kind, value))
            elif kind is Arg.FILTER_LEFT:
                continue  # computed by the repeat filter in anvil_site
            else:
                raise AnvilError(f"{proto.name}: arguments of kind {kind.name} are not passed on x86-64 yet")
        if len(dynamic) > 1:
            raise AnvilError(f"{proto.name}: x86-64 passes one run-time argument a call so far")
        if self.records:
            self.table_args.append(_table_args(proto, statics))
        site = len(self.site_routine)
        self.site_routine.append(self._routine(proto))
        self.site_args.append(tuple(statics))
        fs = bool(dynamic) and dynamic[0][0] is Arg.EFFADDR and access is not None and access.segment == "fs"
        self.site_fs.append(fs)
        flt = proto.filter
        if flt is not None and dynamic and not fs:
            # count_by's value: the static argument at that position
            count_by = statics[sum(1 for kind in proto.kinds[:flt.count_by] if not kind.dynamic)]
            self._filtered_site(code, proto, site, dynamic[0], access, self._live.get(address, ALL_FLAGS), count_by)
            return
        code.emit(BELOW_RED_ZONE + _SAVE)
        if dynamic:
            self._value(code, proto.name, dynamic[0], access, _RSP_MOVED)
        self._call(code, site)
        code.emit(_RESTORE + ABOVE_RED_ZONE)

    def _value(self, code: Code64, routine: str, dynamic: tuple[Arg, object], access: Access | None,
               moved: int) -> None:
        """rdi := the run-time argument (RSP ``moved`` bytes below the program's)."""
        kind, value = dynamic
        if kind is Arg.REG_VALUE:
            code.emit(mov_rdi(int(value), moved))
        elif access is None:
            raise AnvilError(f"{routine}: an effective address where there is no access")
        elif access.base == RIP:
            code.rel32(b"\x48\x8d\x3d", b"", access.disp)  # lea rdi, [rip + (disp)]
        else:
            code.emit(lea_rdi(access, moved))

    def _call(self, code: Code64, site: int, entry: str | None = None) -> None:
        """``mov esi, site; call`` the entry that calls anvil_site(rdi, site)."""
        code.emit(b"\xbe" + struct.pack("<I", site))  # mov esi, site
        code.rel32_lookup(b"\xe8", b"", self.symbol, entry or self.entry)

    def _filtered_site(self, code: Code64, proto: Prototype, site: int, dynamic: tuple[Arg, object],
                       access: Access | None, live: int, count_by: int) -> None:
        """A site whose routine has a repeat filter: the filter's test inline, the call only
        when the key is new to its slot (anvil_site then finds it so too, updates the slot
        and calls the routine); a hit swaps a two-deep slot inline and adds one to its
        counter. rsi points at the slot, rcx holds the key; the flags are saved only where
        they are live (``cmp`` changes them). In a program that may start threads, the test
        is inline only until it starts one (the runtime's ``anvil_threads_started``, set as
        the program enters a function that starts a thread, as the counters' lock prefixes
        are written): then every access calls through the lock, and the filter is C's::

            [cmp byte [rip + anvil_threads_started], 0 ; jne locked]
            mov rsi, rdi ; shr rsi, shift - k ; and esi, (slots - 1) << k   (k: log2 slot bytes)
            lea rcx, [rip + table] ; add rsi, rcx ; mov rcx, rdi ; or rcx, low bits
            cmp rcx, [rsi] ; je hit ; [cmp rcx, [rsi+8] ; jne miss ; swap the two]
        """
        flt, save = proto.filter, live != 0
        code.emit(BELOW_RED_ZONE + _SAVE + b"\x51" + (b"\x9c" if save else b""))  # push rcx; pushfq
        self._value(code, proto.name, dynamic, access, _RSP_MOVED + 8 + 8 * save)
        symbol = self.symbol
        k = 3 if flt.depth == 1 else 4
        key = b"\x48\x89\xf9" + _or_rcx((1 << flt.shift) - 1)                             # mov rcx, rdi; or rcx
        if flt.depth == 1:
            test = b"\x48\x3b\x0e\x75" + bytes((8 + 2,))                                    # cmp rcx,[rsi]; jne miss
        else:
            swap = (b"\x48\x8b\x0e\x48\x89\x4e\x08" + key + b"\x48\x89\x0e")           # [rsi+8] = [rsi]; [rsi] = key
            test = (b"\x48\x3b\x0e\x74" + bytes((6 + len(swap),))                           # cmp rcx,[rsi]; je hit
                    + b"\x48\x3b\x4e\x08\x75" + bytes((len(swap) + 8 + 2,))                # cmp rcx,[rsi+8]; jne miss
                    + swap)
        if flt.shift >= k:
            move = b"\x48\xc1\xee" + bytes((flt.shift - k,)) if flt.shift > k else b""   # shr rsi, shift - k
        else:
            move = b"\x48\xc1\xe6" + bytes((k - flt.shift,))                             # shl rsi, k - shift
        if self.threaded:  # jne over the inline test, the miss's call and its jmp to the locked call
            inline = 3 + len(move) + 6 + 7 + 3 + len(key) + len(test) + 8 + 2 + _CALL_SIZE + 2
            assert inline < 0x80  # a short jump (86 bytes at most)
            code.rel32_lookup(b"\x80\x3d", b"\x00", symbol, "anvil_threads_started")
            code.emit(b"\x75" + bytes((inline,)))
        code.emit(b"\x48\x89\xfe" + move + b"\x81\xe6" + struct.pack("<I", flt.slots - 1 << k))
        table, counter = _table_of(flt), f"anvil_array_{flt.counter}"
        code.rel32_lookup(b"\x48\x8d\x0d", b"", symbol, table)                       # lea rcx, [rip+table]
        code.emit(b"\x48\x01\xce" + key + test)                                          # add rsi, rcx
        code.rel32_lookup(b"\x48\x83\x05", b"\x01", symbol, counter, 8 * count_by)      # add [rip+count], 1
        if self.records and not self.threaded:  # ReHost: the record appended inline to the ring
            self._ring_record(code, flt, site)
        elif proto.deferred and self.deferring:  # (never in a program that may start threads)
            self._record(code, flt, site)
        else:
            code.emit(b"\xeb" + bytes((_CALL_SIZE + (2 + _CALL_SIZE) * self.threaded,)))  # jmp done
            self._call(code, site, "anvil_site_flagless_entry")  # the flags are saved here where live
            if self.threaded:
                code.emit(b"\xeb" + bytes((_CALL_SIZE,)))                                # jmp done
                self._call(code, site, "anvil_site_locked_flagless_entry")              # locked: through the lock
        code.emit((b"\x9d" if save else b"") + b"\x59" + _RESTORE + ABOVE_RED_ZONE)       # popfq; pop rcx

    def _record(self, code: Code64, flt: RepeatFilter, site: int) -> None:
        """The miss path of a deferred routine's filtered site (after ``jmp done``): the slot
        takes the key (rcx) and the key that left (rdx) goes into a record (value, left,
        site) at ``anvil_record_cursor``; a full buffer is run at once
        (``anvil_records_flush_entry``)."""
        update = _slot_update(flt)
        fill = (b"\x48\x89\x39\x48\x89\x51\x08\x48\xc7\x41\x10" + struct.pack("<I", site)
                + b"\x48\x83\xc1\x18")                                     # [rcx] = rdi, rdx, site; rcx += 24
        length = len(update) + 7 + len(fill) + 7 + 7 + 2 + 5 + 1
        symbol = self.symbol
        code.emit(b"\xeb" + bytes((length,)) + update)                       # jmp done
        code.rel32_lookup(b"\x48\x8b\x0d", b"", symbol, "anvil_record_cursor")      # mov rcx, [cursor]
        code.emit(fill)
        code.rel32_lookup(b"\x48\x89\x0d", b"", symbol, "anvil_record_cursor")      # mov [cursor], rcx
        code.rel32_lookup(b"\x48\x3b\x0d", b"", symbol, "anvil_record_limit")       # cmp rcx, [limit]
        code.emit(b"\x72\x05")                                               # jb over the call
        code.rel32_lookup(b"\xe8", b"", symbol, "anvil_records_flush_entry")
        code.emit(b"\x5a")                                                   # pop rdx

    def _ring_record(self, code: Code64, flt: RepeatFilter, site: int) -> None:
        """The miss path of a filtered site in a ReHost program of one thread (after ``jmp
        done``): the slot takes the key (rcx), and the record (site, value, the key that
        left) goes into the communicator's ring as its C append would put it there
        (runtime_stubs/common/anvil_comm.c): ``writers`` counted up around it, the words
        reserved with one ``xadd`` (a signal handler's records come before or after them),
        the ring sent when the record ends past its limit::

            push rdx ; <the slot's update: rdx = the key that left>
            inc dword [writers] ; mov ecx, 24 ; xadd [cursor], rcx
            mov qword [rcx], site ; mov [rcx+8], rdi ; mov [rcx+16], rdx
            dec dword [writers] ; add rcx, 24 ; cmp rcx, [limit] ; jbe +5 ; call flush ; pop rdx
        """
        update = _slot_update(flt)
        fill = (b"\x48\xc7\x01" + struct.pack("<I", site)                      # mov qword [rcx], site
                + b"\x48\x89\x79\x08\x48\x89\x51\x10")                       # [rcx+8] = rdi; [rcx+16] = rdx
        length = len(update) + 6 + 5 + 8 + len(fill) + 6 + 4 + 7 + 2 + 5 + 1
        symbol = self.symbol
        state = "anvil_rh_state"  # {cursor, limit, writers}: anvil_comm.c
        code.emit(b"\xeb" + bytes((length,)) + update)                       # jmp done
        code.rel32_lookup(b"\xff\x05", b"", symbol, state, 16)                   # inc dword [writers]
        code.emit(b"\xb9\x18\x00\x00\x00")                                    # mov ecx, 24
        code.rel32_lookup(b"\x48\x0f\xc1\x0d", b"", symbol, state)             # xadd [cursor], rcx
        code.emit(fill)
        code.rel32_lookup(b"\xff\x0d", b"", symbol, state, 16)                   # dec dword [writers]
        code.emit(b"\x48\x83\xc1\x18")                                       # add rcx, 24
        code.rel32_lookup(b"\x48\x3b\x0d", b"", symbol, state, 8)               # cmp rcx, [limit]
        code.emit(b"\x76\x05")                                               # jbe over the call
        code.rel32_lookup(b"\xe8", b"", symbol, "anvil_records_flush_entry")
        code.emit(b"\x5a")                                                   # pop rdx

    def source(self, tool_sources: list[str], array: Callable[[str, str, list[int]], str]) -> str:
        """The tool's C (none with ``records``), the site tables and ``anvil_site``;
        ``array(ctype, name, values)`` gives a constant array's definition."""
        width = max((len(args) for args in self.site_args), default=0) or 1
        flat = [value & 0xFFFFFFFF for args in self.site_args for value in (*args, *(0,) * (width - len(args)))]
        routine_type = "uint8_t" if len(self.routines) <= 0x100 else "uint16_t"
        parts = ['#include "anvil_rt.h"\n', *tool_sources, self.filter_tables(),
                 _RECORDS_DECLARED if self.deferring else "", _RECORD_ROUTINES if self.records else "",
                 array("uint32_t", "anvil_site_args", flat),
                 array(routine_type, "anvil_site_routine", self.site_routine)]
        fs = any(self.site_fs)
        if fs:
            parts.append(array("uint8_t", "anvil_site_fs", [int(f) for f in self.site_fs]))
        parts.append(f"extern const uint32_t anvil_site_args[];\nextern const {routine_type} anvil_site_routine[];\n"
                     + ("extern const uint8_t anvil_site_fs[];\n" if fs else "")
                     + "void anvil_site(anvil_word value, uint32_t site);\n"
                     "__attribute__((flatten)) void anvil_site(anvil_word value, uint32_t site)\n{\n"
                     f"    const uint32_t *s = anvil_site_args + (anvil_word)site * {width};\n    (void)s;\n")
        if self.deferring:  # the records made before this call run before it
            parts.append("    if (anvil_record_cursor > anvil_records)\n        anvil_records_flush();\n")
        if fs:
            parts.append("    if (anvil_site_fs[site]) {\n        anvil_word tp;\n"
                         "        __asm__(\"mov %%fs:0, %0\" : \"=r\"(tp));\n        value += tp;\n    }\n")
        parts.append(self._dispatch(filtered=True) + "}\n")
        if self.deferring:
            parts.append(_RECORDS.format(width=width, dispatch=self._dispatch(filtered=False)))
        return "".join(parts)

    def _dispatch(self, filtered: bool) -> str:
        """The C that calls site ``site``'s routine with the run-time ``value`` and its static
        arguments ``s``: behind its repeat filter if ``filtered``, else with ``left`` the
        key that left (a record's)."""
        parts = ["    switch (anvil_site_routine[site]) {\n"]
        for index, proto in enumerate(self.routines):
            args, statics = [], {}
            for position, kind in enumerate(proto.kinds):
                if kind is Arg.EFFADDR or kind is Arg.REG_VALUE:
                    args.append("value")
                elif kind is Arg.FILTER_LEFT:
                    args.append("left")
                else:
                    statics[position] = len(statics)
                    args.append(f"s[{statics[position]}]" + (" + anvil_bias" if kind is Arg.INST_ADDR else ""))
            call = f"        {proto.name}({', '.join(args)});\n"
            if self.records:  # the site and the run-time values; the rest is the site table's
                values = [arg for arg in args if arg in ("value", "left")]
                call = f"        anvil_rh_record{len(values)}({', '.join(['site', *values])});\n"
            if proto.filter is not None and filtered:
                call = _filtered(proto, statics[proto.filter.count_by], call)
            parts.append(f"    case {index}: {{\n{call}        break;\n    }}\n")
        return "".join(parts) + "    }\n"

    def filter_tables(self) -> str:
        """The slot tables of the routines' repeat filters (zero-filled, 64-bit keys)."""
        return "".join(f"anvil_word {_table_of(proto.filter)}[{proto.filter.slots * proto.filter.depth}];\n"
                       f"extern uint64_t anvil_array_{proto.filter.counter}[];\n"
                       for proto in self.routines if proto.filter is not None)


#: The communicator's record routines (runtime_stubs/common/anvil_comm.c): the site, then
#: the run-time values in the routine's order.
_RECORD_ROUTINES = "".join(
    f"void anvil_rh_record{n}(anvil_addr site{''.join(f', anvil_addr v{k}' for k in range(n))});\n" for n in range(3)) \
    + "void anvil_rh_flush(void);\n" \
    "void anvil_records_flush(void) { anvil_rh_flush(); }  /* (the ring's, for inline records) */\n"


def _table_args(proto: Prototype, statics: list[int]) -> list:
    """A site's arguments as the ReHost site table has them: its static values (``statics``,
    in order) and None where the record carries the value."""
    values = iter(statics)
    args: list = []
    for kind in proto.kinds:
        if kind is Arg.SITE_ID:
            raise AnvilError(f"{proto.name}: arguments of kind {kind.name} cannot be recorded")
        args.append(None if kind.dynamic else next(values) & 0xFFFFFFFF)  # as anvil_site_args has them
    return args


def _slot_update(flt: RepeatFilter) -> bytes:
    """A filter's miss taken by its slot (rsi points at it, rcx holds the key): ``push rdx``,
    rdx := the key that leaves (the older of a two-deep slot's, which takes the newer's
    place), the slot's most recent := rcx. The record's ``pop rdx`` ends it."""
    if flt.depth == 1:
        leaving = b"\x48\x8b\x16"                                 # mov rdx, [rsi]
    else:
        leaving = b"\x48\x8b\x56\x08\xff\x36\x8f\x46\x08"         # mov rdx, [rsi+8]; [rsi+8] = [rsi]
    return b"\x52" + leaving + b"\x48\x89\x0e"                    # push rdx ...; mov [rsi], rcx


def _table_of(flt: RepeatFilter) -> str:
    """The C name of ``flt``'s slot table."""
    return f"anvil_{flt.memo}"


def _or_rcx(mask: int) -> bytes:
    """``or rcx, mask`` (0 < mask < 2**31)."""
    return b"\x48\x83\xc9" + bytes((mask,)) if mask < 0x80 else b"\x48\x81\xc9" + struct.pack("<I", mask)


def _filtered(proto: Prototype, count_by: int, call: str) -> str:
    """``call`` behind ``proto``'s repeat filter (api.RepeatFilter), in C: the key is the
    run-time value with its low ``shift`` bits set (the last address of its line, never 0,
    which marks an empty slot); a key a slot holds is counted, not called; a new one
    becomes the slot's most recent and the key that left is ``left``."""
    flt = proto.filter
    counter = f"anvil_array_{flt.counter}[s[{count_by}]]++"
    lines = [f"        anvil_word key = value | {(1 << flt.shift) - 1:#x}ull, left;\n",
             f"        anvil_word *slot = {_table_of(proto.filter)} + ((value >> {flt.shift}) & {flt.slots - 1:#x}ull)"
             f" * {flt.depth};\n",
             f"        if (slot[0] == key) {{\n            {counter};\n            break;\n        }}\n"]
    if flt.depth == 2:
        lines += ["        if (slot[1] == key) {  /* the older of the two: they swap */\n"
                  f"            slot[1] = slot[0];\n            slot[0] = key;\n            {counter};\n"
                  "            break;\n        }\n",
                  "        left = slot[1];\n        slot[1] = slot[0];\n"]
    else:
        lines.append("        left = slot[0];\n")
    lines.append("        slot[0] = key;\n        (void)left;\n")
    return "".join(lines) + call
