"""Jumps written over the original code into its relocated copy, and where their trampolines go.

A relocated procedure's original entry gets a jump to its copy, so calls through
pointers land in instrumented code. With original return addresses (decision 0013) the
return site after each relocated call gets one too, and so does every other place the
unwinder enters (landing pads, a personality routine's PLT entry): the program's
returns and the unwinder's jumps go to original addresses.

A jump is ``ldr pc, [pc, ...]`` and its literal in place (8-10 bytes, "long") where the
instructions at that place leave room, or a 4-byte branch ("short") to such a pair in a
trampoline: in the unused end of the text segment's last page, or in a "cave" (bytes of
relocated code that never run in place). A patch may cover only instructions nothing
else enters (the *stops*: code pointers, branch targets in code that keeps running in
place, the other patched places).
"""

from __future__ import annotations

import bisect
import io
import itertools
import operator
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from elftools.elf.elffile import ELFFile

from ..arch.arm import encode as enc
from ..arch.arm.relocate import translated_jump
from ..errors import AnvilError
from ..ir.model import Binary, Instruction, Procedure, Segment
from ..ir.plt import thumb_stubs
from . import file_gap
from . import target_build as tb
from .preinit import PreinitStart

PAGE = 0x1000
UNPLACED = 0  # a short patch's trampoline until place_trampolines gives it one
SHORT = 4  # bytes of a branch to a trampoline (B.W, B)
NARROW = 2  # T32 B.N to a trampoline within 2 KiB: where not even 4 bytes are free
TRAMPOLINE = 8


@dataclass
class Patch:
    """A jump written over original code at ``address`` (a procedure entry, a return site
    or a landing pad) to the relocated copy of the instruction there."""

    address: int
    thumb: bool
    trampoline: int | None = None
    direct: bool = False  # a 4-byte branch straight to the copy (firmware: the copy is in range)
    narrow: bool = False  # a 2-byte B.N to the trampoline

    @property
    def length(self) -> int:
        """Bytes of original code the patch covers."""
        if self.narrow:
            return NARROW
        return SHORT if self.trampoline is not None or self.direct else patch_length(self.address, self.thumb)

    def reaches(self, trampoline: int) -> bool:
        """Whether the patch's branch reaches an 8-byte trampoline at ``trampoline``."""
        offset = trampoline - (self.address + (4 if self.thumb else 8))
        if self.narrow:
            return -2048 <= offset < 2048
        reach = 1 << 24 if self.thumb else 1 << 25
        return -reach <= offset < reach - TRAMPOLINE

    @property
    def word(self) -> int:
        """Address of the literal holding the relocated target (biased at start-up for PIE)."""
        if self.trampoline is not None:
            return self.trampoline + 4
        return self.address + patch_length(self.address, self.thumb) - 4

    def bytes_at_entry(self, target: int) -> bytes:
        if self.direct:
            return enc.t32_b(self.address, target & ~1) if self.thumb else enc.a32_b(self.address, target & ~1)
        if self.trampoline is None:
            if not self.thumb:
                return enc.a32_ldr_pc_literal() + struct.pack("<I", target)
            ins, _ = enc.t32_ldr_pc_literal_pair(self.address)
            return ins + struct.pack("<I", target)
        if self.narrow:
            return enc.t32_b_narrow(self.address, self.trampoline)
        if self.thumb:
            return enc.t32_b(self.address, self.trampoline)
        return enc.a32_b(self.address, self.trampoline)

    def trampoline_bytes(self, target: int) -> bytes:
        first = enc.t32_ldr_pc_literal_pair(self.trampoline)[0] if self.thumb else enc.a32_ldr_pc_literal()
        return first + struct.pack("<I", target)


def patch_length(addr: int, thumb: bool) -> int:
    """Bytes of a long patch at ``addr`` (T32: 8 or 10, the literal word aligned)."""
    if not thumb:
        return 8
    _, lit = enc.t32_ldr_pc_literal_pair(addr)
    return lit + 4


def _room(insns: Iterable[Instruction], start: int, stops: set[int], data: set[int]) -> int:
    """Bytes of contiguous instructions from ``start`` on (the first of ``insns``) before
    any stop but ``start`` itself and before any byte read as ``data`` (a literal pool
    decoded as code); counted up to what a long patch needs."""
    covered = 0
    for ins in insns:
        if ins.address != start + covered or (covered and ins.address in stops) or _overlaps(ins, data):
            break
        covered += ins.size
        if covered >= 10:
            break
    return covered


def _overlaps(ins: Instruction, data: set[int]) -> bool:
    """Whether a byte of ``ins`` is one of ``data``."""
    return any(byte in data for byte in range(ins.address, ins.address + ins.size))


def entered_from_elsewhere(binary: Binary, procs: list[Procedure]) -> set[int]:
    """Addresses original code may still jump to: code pointers in data, the unwinder's
    entries (landing pads, personality routines), computed gotos' labels, and direct branch targets in procedures
    that keep running in place (not ``procs``) or in code a stripped program's descent
    did not find (ir/gaps.py)."""
    relocated = {p.address for p in procs}
    # (A computed goto's copy jumps to the original label: one without room for a jump of
    # its own runs in place, and so does the code after it.)
    entered = set(binary.code_pointers) | binary.unwinder_entries | binary.goto_labels
    if binary.gap_targets:
        # Only those that start a block: a call into the middle of one would run into a
        # function entry from the instruction before it, which compilers do not emit,
        # while a literal that reads as a BL names any instruction.
        entered |= binary.gap_targets & {b.address for p in binary.procedures for b in p.blocks}
    for other in binary.procedures:
        if other.address not in relocated:
            entered.update(i.branch_target for i in other.instructions() if i.branch_target is not None)
    return entered


def branch_reaches(src: int, thumb: bool, copies: tuple[int, int]) -> bool:
    """Whether a 4-byte branch at ``src`` reaches every address of ``copies`` ([start, end))."""
    reach = 1 << 24 if thumb else 1 << 25
    pc = src + (4 if thumb else 8)
    return -reach <= copies[0] - pc and copies[1] - pc < reach


def entry_patches(binary: Binary, procs: list[Procedure], direct: tuple[int, int] | None = None,
                  stops: set[int] | None = None,
                  patched: frozenset[int] = frozenset()) -> tuple[list[Patch], list[str]]:
    """Which relocated procedures get a jump at their original entry, and which cannot.

    ``direct`` (firmware): where the copies lie ([start, end)); a patch is a 4-byte branch
    to the copy where that reaches, else (code far from the copies: a function run from
    RAM) the long jump where the procedure has room for it; with less room, a branch to a
    trampoline (firmware_trampolines places them).
    ``stops``: what the patches must leave intact (default: entered_from_elsewhere).
    ``patched``: entries that have a jump already (return sites, unwinder entries).
    Short patches get their trampolines from place_trampolines.
    """
    patches = []
    skipped = []
    if stops is None:
        stops = entered_from_elsewhere(binary, procs)
    data = binary.literal_bytes()
    stubs = thumb_stubs(binary.plt, binary.read) if binary.plt else set()
    for proc in procs:
        if proc.address in patched:
            continue
        first = proc.blocks[0].instructions[0]
        if first.address != proc.address or proc.address in binary.resolvers \
                or proc.address in binary.straddled_entries:
            skipped.append(proc.name)
            continue
        # Branches inside the procedure go to the copy, so only addresses other code may
        # jump to must stay intact under the patch.
        covered = _room(proc.instructions(), proc.address, stops, data)
        if proc.address in stubs and covered == NARROW and proc.address + NARROW not in stops \
                and proc.address + NARROW not in data:
            # A PLT entry's Thumb stub: ``bx pc`` and a pad that never runs (bx pc always
            # jumps, to the A32 entry after the pad), which the descent does not decode. In
            # a fixed-address program a pointer to an imported function is the stub's
            # address, and the PLT's other entries leave no cave in a B.N's reach.
            covered = SHORT
        if direct is not None and covered >= SHORT and branch_reaches(proc.address, first.thumb, direct):
            patches.append(Patch(proc.address, first.thumb, direct=True))
        elif covered >= patch_length(proc.address, first.thumb):
            patches.append(Patch(proc.address, first.thumb))
        elif covered >= SHORT:
            patches.append(Patch(proc.address, first.thumb, UNPLACED))
        elif covered >= NARROW and first.thumb:
            # A 2-byte T32 procedure (crtstuff's frame_dummy, a stub that only returns, a
            # firmware's default handler ``b .``) or an entry whose next instruction a code
            # pointer names (perhaps only a number in data that reads as one): code pointers
            # reach it too (.init_array, callbacks, vector and function tables), and
            # unpatched it ran in place, uncounted. A B.N to a trampoline within 2 KiB, as
            # at return sites; firmware too (firmware_trampolines).
            patches.append(Patch(proc.address, True, UNPLACED, narrow=True))
        else:
            skipped.append(proc.name)
    return patches, skipped


def firmware_trampolines(binary: Binary, procs: list[Procedure], patches: list[Patch]) -> list[Patch]:
    """Trampolines for a firmware image's short and narrow entry patches (entry_patches),
    in caves of the relocated procedures (there is no last page to grow into: the image's
    text is followed by its other sections, the copies are far from a B.N's reach); those
    that find none are removed from ``patches`` and returned. A trampoline is a long
    jump to the copy (``ldr pc, [pc]`` and the copy's address): the copy's address is
    known where the image is written, as is the entry's."""
    if all(p.trampoline is None for p in patches):
        return []
    return place_trampolines(patches, Tail(0, False, _caves(binary, procs, patches)))


def return_sites(procs: list[Procedure]) -> set[int]:
    """The return sites of calls in ``procs`` that get a jump (decision 0013): the
    instruction after each call, where it is relocated code (after a call at the end of a
    procedure, the next one's entry). Every instruction has room for one: a T32 B.N to a
    trampoline needs 2 bytes."""
    starts = {ins.address for proc in procs for ins in proc.instructions()}
    return {ins.end for proc in procs for ins in proc.instructions() if ins.is_call and ins.end in starts}


def return_sites_in_data(binary: Binary, procs: list[Procedure]) -> set[int]:
    """The return sites (return_sites) in bytes code reads as data: what follows a call
    that never returns, a literal pool that a descent not knowing so decoded as code. No
    jump goes there; their calls leave relocated return addresses."""
    data = binary.literal_bytes()
    at = {ins.address: ins for proc in procs for ins in proc.instructions()}
    return {site for site in return_sites(procs) if _overlaps(at[site], data)}


def _stops(binary: Binary, procs: list[Procedure], sites: set[int]) -> set[int]:
    """Where no patch may reach over: what enters from elsewhere, every relocated entry,
    every return site and landing pad that gets a patch of its own."""
    return entered_from_elsewhere(binary, procs) | {p.address for p in procs} | sites


def return_patches(binary: Binary, procs: list[Procedure], sites: set[int],
                   with_pads: bool = True) -> tuple[list[Patch], set[int]]:
    """Jumps at ``sites`` (from return_sites) and, ``with_pads``, where the unwinder enters
    ``procs`` (entries among them: entry_patches leaves those out), and the stops the entry
    patches must then respect. Every T32 place has room for at least a B.N."""
    pads = binary.unwinder_entries if with_pads else set()
    stops = _stops(binary, procs, sites | pads)
    data = binary.literal_bytes()
    patches = []
    for proc in procs:
        insns = list(proc.instructions())
        for k, ins in enumerate(insns):
            if ins.address not in sites and ins.address not in pads:
                continue
            covered = _room(itertools.islice(insns, k, None), ins.address, stops, data)
            if covered >= patch_length(ins.address, ins.thumb):
                patches.append(Patch(ins.address, ins.thumb))
            elif covered >= NARROW:
                patches.append(Patch(ins.address, ins.thumb, UNPLACED, narrow=covered < SHORT))
            else:  # another return site or pad took the room: only a changed IR gets here
                raise AnvilError(f"internal error: no room for a jump at {ins.address:#x} in {proc.name}")
    return patches, stops


@dataclass
class Tail:
    """Where the loader stub goes in the original text, and the free bytes left for trampolines.

    Preferably the unused end of the text segment's last page (the segment grows over
    it); otherwise a "cave": instruction bytes of a relocated procedure past its entry
    patch, which never run in place once the procedure has a copy; failing both, the
    addresses after the text segment with a gap opened in the file for them (``file_gap``
    bytes, file_gap.py: a linker such as ld.lld packs the next segment's bytes right after
    the text's); failing that too, the stub's pieces each where one fits, in the slack and
    the caves (decision 0097). Trampolines take 8 bytes each from what is left of the slack
    and from the caves.
    """

    address: int           # the stub's entry (its first piece)
    grows_segment: bool    # if so, ``pool[0]`` is what is left of the slack
    pool: list[list[int]]  # free [start, end) runs, 4-aligned starts
    segment_end: int = 0   # with grows_segment: where the grown text segment ends
    file_gap: int = 0      # with grows_segment: zero bytes inserted after the text's file bytes
    early: PreinitStart | None = None  # the stub has its preinit function, the program this plan (preinit.py)
    pieces: list[int] = field(default_factory=list)  # the stub's address, or each piece's (assemble_stub)


def slack_address(text: Segment) -> int:
    """Where the free end of the text segment starts (the loader stub's first choice): past
    its memory, which goes on past its file bytes where the segment holds a ``.bss`` too
    (one segment of ``ld -N``, a script that puts data before code). The copy's segment
    then holds those zero bytes in the file (``zero_filled``)."""
    return (text.vaddr + max(text.filesz, text.memsz) + 3) & ~3


def zero_filled(text: Segment) -> tuple[int, int]:
    """The file offsets that the text segment's zero-filled memory takes once the segment
    grows over its end (empty where its memory ends with its file bytes)."""
    start = text.offset + text.filesz
    return start, start + max(0, text.memsz - text.filesz)


def _spread(sizes: tuple[int, ...], runs: list[list[int]]) -> list[int] | None:
    """An address for each piece of the stub (``sizes``) in the free ``runs``, taken from
    their starts (the runs are changed), the largest piece first, each in the smallest run
    that holds it; None if one finds no room."""
    places = [0] * len(sizes)
    for k in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
        fits = [run for run in runs if run[1] - run[0] >= sizes[k]]
        if not fits:
            return None
        run = min(fits, key=lambda r: r[1] - r[0])
        places[k] = run[0]
        run[0] += sizes[k]
    return places


_ADDRESS = operator.attrgetter("address")


def _partly_decoded(proc: Procedure, binary: Binary) -> bool:
    """Bytes between ``proc``'s first and last instruction that are neither an instruction,
    nor a literal its code reads, nor data it holds (a switch's table): a gap the descent
    left, which a jump computed at run time may reach without a copy to go to."""
    literals = binary.literal_bytes()
    at = None
    for ins in proc.instructions():
        if at is not None and ins.address != at and not all(
                a in literals or any(lo <= a < hi for lo, hi in proc.data_ranges) for a in range(at, ins.address)):
            return True
        at = ins.address + ins.size
    return False


def _caves(binary: Binary, procs: list[Procedure], patches: list[Patch]) -> list[list[int]]:
    """Runs of instruction bytes of relocated procedures that never run in place, outside
    every patch.

    Only procedures whose entry gets a full patch qualify (a short patch may still be
    dropped for want of a trampoline, and then the original code runs), and only those
    that nothing enters in the middle but through a patch (code that keeps running in
    place may branch there, or the unwinder jump there, and run on in the original).
    Nor those with bytes the decoder could not read (they run in place, and jump where
    they jump: clang's Thumb-1 switch, ``add pc, r1``, before the decoder knew it, into its
    cases, where the loader stub had been written), nor those with a jump the copy
    translates at run time (``relocate.translated_jump``)
    and code bytes not decoded (``_partly_decoded``): a target the descent did not decode
    has no copy, so the jump goes to the original and runs on there (decision 0002). Where
    every byte was decoded, every target has a copy (a hash sample's switch in ``main`` was
    the only cave big enough for the loader stub: without it the program was refused).
    """
    entry_length = {p.address: p.length for p in patches if p.trampoline is None}
    covered: dict[int, int] = {}  # patched address -> end of its patch
    for p in patches:
        covered[p.address] = p.address + p.length
    # Code addresses in data without the instruction set's bit are entries too, where
    # they are instructions: labels of a computed goto that discovery did not read as one
    # (Lua's Thumb-1 ``luaV_execute``, stripped: its opcodes' table of label addresses),
    # which other code jumps to in the original. A trampoline over the code after one broke
    # the interpreter (SIGBUS).
    entered = (entered_from_elsewhere(binary, procs) | binary.address_taken) - covered.keys()
    entered_list = sorted(entered)
    # A pool in the middle of a procedure is read where it is. Sorted, so that each
    # instruction is tested against the next literal byte alone (a set lookup per byte of
    # every instruction was a twentieth of a large program's rewrite).
    pools = sorted(binary.literal_bytes())
    npools = len(pools)
    taken = binary.address_taken
    runs = []
    for proc in procs:
        if proc.address not in entry_length or proc.undecodable \
                or (any(map(translated_jump, proc.instructions())) and _partly_decoded(proc, binary)):
            continue  # (bytes it could not decode run in place, and so may what they jump to)
        lo = bisect.bisect_left(entered_list, proc.address)
        inside = entered_list[lo:bisect.bisect_left(entered_list, proc.end, lo)]
        in_place = _run_in_place(proc, inside, covered) if inside else frozenset()
        if in_place is None:
            continue
        blocked_until = proc.address + entry_length[proc.address]
        run_start = run_end = None
        k = bisect.bisect_left(pools, proc.address)
        for ins in proc.instructions():  # every instruction of a relocated procedure: locals, no calls
            address = ins.address
            patched_until = covered.get(address)
            if patched_until is not None and patched_until > blocked_until:
                blocked_until = patched_until
            if k and pools[k - 1] >= address:  # blocks out of address order: look again
                k = bisect.bisect_left(pools, address)
            while k < npools and pools[k] < address:
                k += 1
            in_pool = k < npools and pools[k] < address + ins.size
            if address < blocked_until or address in taken or in_pool or address in in_place:
                if run_start is not None and run_end - run_start >= TRAMPOLINE:
                    runs.append([run_start, run_end])
                run_start = None
                continue
            if run_start is None or address != run_end:
                if run_start is not None and run_end - run_start >= TRAMPOLINE:
                    runs.append([run_start, run_end])
                run_start = (address + 3) & ~3
            run_end = address + ins.size
        if run_start is not None and run_end - run_start >= TRAMPOLINE:
            runs.append([run_start, run_end])
    return runs


def _run_in_place(proc: Procedure, entered: list[int], patched: dict[int, int]) -> frozenset[int] | None:
    """The instructions of ``proc`` that run in place when other code enters it at
    ``entered`` (addresses in it that code pointers, the unwinder or code left in place
    may jump to): those reached from there by falling through, by direct branches and by
    returning from calls, up to a patched place (``patched``: its jump goes to the copy).
    None when one of them jumps where the code does not say (a switch, a jump through a
    register): then any instruction of ``proc`` may run in place.

    The rest are caves even so: only the entry's patch leads to them, and it leads to the
    copy. (A number in data that reads as a code address in the middle of a procedure,
    as tables of offsets in a fixed-address program do, had cost the whole procedure's
    room, and narrow patches nearby found no trampoline.)"""
    at = {ins.address: ins for ins in proc.instructions()}
    reached: set[int] = set()
    work = [address for address in entered if address in at]
    while work:
        address = work.pop()
        # A patched place (the entry, a return site) jumps to the copy; no instruction: out
        # of the procedure (a tail call) or into bytes not decoded.
        ins = at.get(address)
        if address in reached or address in patched or ins is None:
            continue
        reached.add(address)
        if ins.writes_pc and ins.branch_target is None and not ins.is_return and not ins.is_call:
            return None
        if ins.is_branch and ins.branch_target is not None and not ins.is_call:
            work.append(ins.branch_target)
        if ins.falls_through:  # calls too: the callee returns here
            work.append(ins.end)
    return frozenset(reached)


def tail_location(binary: Binary, procs: list[Procedure], patches: list[Patch],
                  early: PreinitStart | None = None) -> Tail:
    """Where the loader stub goes, and the pool of free runs for trampolines; ``early``: the
    program can start from its preinit array (preinit.py), with the stub that has a preinit
    function if that finds room, else with the one without."""
    elf = ELFFile(io.BytesIO(binary.data))
    _, text = text_segment(binary, elf)
    at = slack_address(text)
    caves = _caves(binary, procs, patches)
    room = _slack_room(binary, elf, text, at)
    gap = file_gap.gap_size(binary.data, text.offset + text.filesz, at - text.vaddr - text.filesz + PAGE)
    gap_room = _address_room(binary, text, at, gap) if gap is not None else 0
    plans = (early, None) if early is not None else (None,)
    for plan in plans:  # the stub whole: in the slack, a cave, or a gap opened in the file
        whole = tb.stub_size(plan is not None)
        if room >= whole:
            return Tail(at, True, [[at + whole, at + room]] + caves, at + whole, early=plan, pieces=[at])
        for run in sorted(caves, key=lambda r: r[1] - r[0]):
            if run[1] - run[0] >= whole:
                address = run[0]
                run[0] += whole
                return Tail(address, False, caves, early=plan, pieces=[address])
        if gap_room >= whole:
            return Tail(at, True, [[at + whole, at + gap_room]] + caves, at + whole, gap, early=plan, pieces=[at])
    for plan in plans:  # in pieces: a text segment ending just before the next segment's page
        slack = [at, at + room]
        runs = [slack] + [list(run) for run in caves]
        places = _spread(tb.stub_piece_sizes(plan is not None), runs)
        if places is not None:
            if slack[0] == at:  # the slack holds no piece: the segment stays as it is
                return Tail(places[0], False, runs[1:], early=plan, pieces=places)
            return Tail(places[0], True, runs, slack[0], early=plan, pieces=places)
    raise AnvilError(f"no room for the {tb.stub_size(False)}-byte loader stub, whole or in pieces: the text "
                     f"segment ends {room} bytes before the next segment and relocated procedures leave "
                     f"{sum(b - a for a, b in caves)} bytes free")


def place_trampolines(patches: list[Patch], tail: Tail) -> list[Patch]:
    """Give each short patch 8 bytes in reach of its branch; drop those that find none
    (returned). A narrow patch reaches 2 KiB, so its trampoline may come from the middle
    of a run, which is then split.

    Each patch takes the first run of the pool (in its order) that has room in its reach,
    narrow patches first: they can take only what is within 2 KiB."""
    dropped = []
    slack = tail.pool[0] if tail.grows_segment and tail.pool else None
    pool = tail.pool
    placing = sorted(patches, key=lambda p: not p.narrow)
    narrow = [p for p in placing if p.narrow and p.trampoline is not None]
    if narrow:
        dropped += _place_narrow(narrow, tail, slack)
    first = 0  # the runs before this one have no room left (the others take from a run's start)
    for patch in placing:
        if patch.trampoline is None or patch.narrow:
            continue
        while first < len(pool) and pool[first][0] + TRAMPOLINE > pool[first][1]:
            first += 1
        for k in range(first, len(pool)):
            run = pool[k]
            at = run[0]
            if at + TRAMPOLINE > run[1] or not patch.reaches(at):
                continue
            patch.trampoline = at
            run[0] = at + TRAMPOLINE
            if run is slack:
                tail.segment_end = max(tail.segment_end, run[0])
            break
        else:
            dropped.append(patch)
    # Removed at once: a list's remove per patch made a program with more short patches
    # than room (150k of them) take minutes here.
    gone = set(map(id, dropped))
    patches[:] = [patch for patch in patches if id(patch) not in gone]
    return dropped


def _place_narrow(narrow: list[Patch], tail: Tail, slack: list[int] | None) -> list[Patch]:
    """``place_trampolines``' work on the narrow patches: those that find no room are returned.

    The runs are disjoint, so sorted by end they are sorted by start too, and the runs a
    patch's 2 KiB reach meets are found by bisection; of those, the first in the pool's
    order is taken. A split leaves what is before the trampoline right after the run in
    that order: each run's key in the order is a tuple, a piece split off it gets the
    run's key and then minus the number of pieces split off it so far (later pieces come
    first), and the pool is put in that order at the end.
    """
    pool = tail.pool
    order = {id(run): (k,) for k, run in enumerate(pool)}
    splits: dict[int, int] = {}
    by_end = sorted(pool, key=lambda run: run[1])
    ends = [run[1] for run in by_end]
    # Were they not disjoint (they are made so), every run would be looked at.
    disjoint = all(a[1] <= b[0] for a, b in zip(by_end, by_end[1:]))
    left = []
    for patch in narrow:
        low = (patch.address + 4 - 2048 + 3) & ~3
        best = None
        i = bisect.bisect_left(ends, low + TRAMPOLINE) if disjoint else 0
        while i < len(by_end):
            run = by_end[i]
            i += 1
            if disjoint and run[0] >= patch.address + 4 + 2048:
                break  # it and all after it start beyond the reach
            at = max(run[0], low)
            if at + TRAMPOLINE > run[1] or not patch.reaches(at):
                continue
            if best is None or order[id(run)] < order[id(best)]:
                best = run
        if best is None:
            left.append(patch)
            continue
        at = max(best[0], low)
        patch.trampoline = at
        if at - best[0] >= TRAMPOLINE:
            piece = [best[0], at]
            splits[id(best)] = splits.get(id(best), 0) + 1
            order[id(piece)] = order[id(best)] + (-splits[id(best)],)
            k = bisect.bisect_left(ends, at)
            by_end.insert(k, piece)
            ends.insert(k, at)
        best[0] = at + TRAMPOLINE
        if best is slack:
            tail.segment_end = max(tail.segment_end, best[0])
    pool[:] = sorted(by_end, key=lambda run: order[id(run)])
    return left


def _slack_room(binary: Binary, elf: ELFFile, text: Segment, at: int) -> int:
    """Free bytes after the text segment: in its last page's file bytes and before any other
    segment. The file bytes from the segment's end up to ``at`` (its zero-filled memory's,
    if any) must be free as well."""
    limit = (at + PAGE) & ~(PAGE - 1) if at & (PAGE - 1) else at
    off = text.offset + (at - text.vaddr)
    start = text.offset + text.filesz
    for seg in binary.segments:
        if seg.vaddr > text.vaddr:
            limit = min(limit, max(at, seg.vaddr & ~(PAGE - 1)))
        if seg is not text and seg.filesz and seg.offset >= start:
            limit = min(limit, at + (seg.offset - off))
    for sec in elf.iter_sections():
        # Sections that are not loaded (symbols, debug info) are moved out of the way.
        if sec["sh_type"] in ("SHT_NOBITS", "SHT_NULL") or not sec["sh_size"] or sec["sh_offset"] < start \
                or not sec["sh_flags"] & 0x2:
            continue
        limit = min(limit, at + (sec["sh_offset"] - off))
    return max(0, limit - at)


def _address_room(binary: Binary, text: Segment, at: int, gap: int) -> int:
    """Free addresses after the text segment (before the next segment's first page), as
    many as a ``gap``-byte gap opened in the file after the text's bytes can hold."""
    limit = text.vaddr + text.filesz + gap
    for seg in binary.segments:
        if seg.vaddr > text.vaddr:
            limit = min(limit, max(at, seg.vaddr & ~(PAGE - 1)))
    return max(0, limit - at)


def text_segment(binary: Binary, elf: ELFFile) -> tuple[int, Segment]:
    """The executable PT_LOAD that ends highest, with its index in the program header table."""
    loads = iter(binary.segments)
    best: tuple[int, Segment] | None = None
    for index, seg in enumerate(elf.iter_segments()):
        if seg["p_type"] != "PT_LOAD":
            continue
        s = next(loads)
        if s.executable and (best is None or s.vaddr + s.filesz > best[1].vaddr + best[1].filesz):
            best = (index, s)
    assert best is not None
    return best
