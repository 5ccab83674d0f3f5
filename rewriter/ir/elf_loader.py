"""Lift a 32-bit ARM ELF executable into the IR.

Procedures come from the symbol table (function symbols), code not covered by any
function (PLT, stubs) becomes a procedure of its own, and ARM mapping symbols
($a/$t/$d) split each procedure into A32 code, T32 code and data-in-code. Every
code range is decoded with capstone in one pass (so IT blocks are tracked), then cut
into basic blocks at branch targets, after branches, calls and system calls, and at
code addresses whose values appear in data (jump tables, computed gotos).
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import operator
import os
import re
import struct
from collections import defaultdict

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .. import progress
from ..arch.arm.case_helpers import helper_called, note_case_table
from ..arch.arm.decode import DecodeCache, decode_range, make_disassembler
from ..arch.arm.jump_tables import SwitchFinder, has_computed_jump, table_branch_targets, unchecked_register_tables
from ..errors import AnvilError, is_parser_error, malformed
from .counted import counted, in_offset_column, in_text
from .discovery import R_ARM_IRELATIVE, _inside, discover, relocated_words, text_relocations
from .elf_check import check_elf
from .elf_tables import symbol_entries
from .exception_tables import unwinder_entries
from .gc_pause import gc_paused
from .go_runtime import go_functions, go_version, refusal
from .libraries import libraries_start_threads
from .model import Binary, Block, Instruction, Procedure, Segment, own_instructions
from .plt import lazy_binder, plt_functions, plt_marks, stub_marks, thumb_stubs
from .section_headers import with_section_headers
from .start_args import WINDOW, register_call_target
from .thread_flags import thread_flag_procedures

_MAPPING = re.compile(r"^\$([atd])(\..*)?$")


@gc_paused
def load_binary(path: str) -> Binary:
    """Read ``path`` and build the full IR (procedures, blocks, instructions)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AnvilError(f"cannot read {path}: {e.strerror}") from None
    check_elf(path, data)  # what pyelftools and the loader rely on: offsets, sizes, links
    # A program without section headers (sstrip) gets them from its program headers: what
    # follows reads sections (decision 0132); the table made is checked as any other.
    made = with_section_headers(path, data)
    if made is not data:
        check_elf(path, made)
        data = made
    elf = _open_elf(path, data)
    try:
        return _lift(path, data, elf)
    except Exception as e:
        # pyelftools parses lazily: what the structure check cannot see (a corrupt
        # attribute or DWARF section) shows when it is read, here.
        if is_parser_error(e):
            raise malformed(path, e) from None
        raise


def _lift(path: str, data: bytes, elf: ELFFile) -> Binary:
    """The IR of the checked ELF file ``data``."""
    if elf["e_machine"] == "EM_X86_64":
        from ..arch.x86_64.lift import lift
        return lift(path, data, elf)
    go = go_version(data, elf)
    functions = go_functions(elf) if go is not None else []
    if go is not None and not functions:
        raise AnvilError(refusal(path, go))
    binary = _make_binary(path, data, elf)
    binary.go_functions = {f.entry: f.name for f in functions}
    binary.go_preemptible = {f.entry for f in functions if f.preemptible}
    symbols, mapping = _read_symbols(path, elf, data)
    if mapping:
        _mark_unmarked_sections(elf, mapping, symbols)
    binary.symbols = {name: addr for addr, name, _ in symbols}
    tags = _dynamic_tags(elf)
    binary.fini = tags["DT_FINI"] & ~1 if tags.get("DT_FINI") else None
    binary.init = tags["DT_INIT"] & ~1 if tags.get("DT_INIT") else None
    binary.fini_array_first = _first_fini_function(binary, tags)
    binary.resolvers = _early_resolvers(elf, binary)
    binary.plt = plt_functions(elf)
    binary.text_relocations = text_relocations(elf)
    binary.binder = lazy_binder(elf) if binary.plt else None
    if not _exec_sections(elf):  # both ways of finding procedures look for them in these
        raise AnvilError(f"{path}: no code to rewrite (no executable section in the section table)")
    if symbols and mapping:
        # Each PLT entry is a procedure, as the descent of a stripped program makes it: code
        # may enter one through a register (a long call; in a fixed-address program the
        # canonical address of an imported function, a function pointer, is its entry).
        stubs = thumb_stubs(binary.plt, binary.read)
        entries = [(address | (address in stubs), f"{name}@plt", 0) for address, name in binary.plt.items()]
        procs = _procedures(binary, elf, symbols + entries, mapping)
        decoded = _decode(binary, procs, mapping)
    else:
        procs, decoded = discover(binary, elf)
        binary.notes.append("no symbols or mapping symbols: code found by recursive descent")
    _finish(binary, elf, procs, decoded)
    read_runtime_facts(path, binary, elf, stripped=not symbols)
    return binary


def _needs_c_library(elf: ELFFile) -> bool:
    """Whether the program is dynamic and one of the libraries it needs is a C library
    (``libc.so.6``, musl's ``libc.so``)."""
    dynamic = next((s for s in elf.iter_sections() if s["sh_type"] == "SHT_DYNAMIC"), None)
    if dynamic is None:
        return False
    try:
        return any(tag.entry.d_tag == "DT_NEEDED" and tag.needed.startswith("libc.") for tag in dynamic.iter_tags())
    except (ELFError, ValueError, KeyError):  # a malformed table: as before, a dynamic program's
        return True


def read_runtime_facts(path: str, binary: Binary, elf: ELFFile, stripped: bool) -> None:
    """Whether the program's stack may be unwound (``Binary.unwinds``) and whether it starts
    threads (``Binary.threaded``), from the names it defines or imports and the libraries it
    loads: the same on every ISA. ``stripped``: no symbol names the program's functions (its
    landing pads then tell)."""
    named = _named(elf, binary.data, _UNWINDING | _THREADING | _FORKING)
    # Go's runtime walks its goroutines' stacks (garbage collection, stack growth, panics)
    # and looks each return address up in its PC table (decision 0089).
    binary.unwinds = bool(named & _UNWINDING) or _raises(elf, binary.data) \
        or (stripped and bool(binary.unwinder_entries)) or bool(binary.go_functions)
    # Go's runtime starts its threads (sysmon, the garbage collector's) by the clone system
    # call itself, whatever the program imports.
    binary.threaded = names_thread_start(elf, binary.data, named) or bool(binary.go_functions)
    # A program with its C library inside that names no thread start may still start one by
    # its own clone: stripped of the names of its C library's functions (decision 0147). A
    # static one, or a dynamic one that needs no libc.so (musl-gcc's ARM PIE holds libc.a:
    # decision 0183). (Another dynamic program's clone is its C library's, whose name it imports.)
    if not binary.threaded and not binary.is_firmware and not _needs_c_library(elf):
        binary.thread_flag_procedures = thread_flag_procedures(binary)
        if binary.thread_flag_procedures:
            binary.threaded = True
            binary.notes.append("its code builds the flags of a clone that starts a thread: counters and "
                                "analysis calls ready for threads")
    # A library may start threads that run the program's code whatever the program imports
    # from it (decisions 0128 and 0193).
    if not binary.threaded and binary.is_dynamic:
        library = libraries_start_threads(path, elf)
        if library is not None:
            binary.threaded = True
            binary.notes.append(f"a library it loads may start threads ({library}): counters and analysis "
                                "calls ready for them")
    # A static program's fork is its own code: only its symbol table can say it has none.
    binary.forks = not binary.is_firmware and (
        bool(named & _FORKING) or bool(binary.go_functions)
        or (not binary.is_dynamic and elf.get_section_by_name(".symtab") is None))


def _early_resolvers(elf: ELFFile, binary: Binary) -> set[int]:
    """The IFUNC resolvers the dynamic linker runs as it relocates a dynamic program (a
    static program runs them from its own start-up code, after the entry)."""
    if not binary.is_dynamic:
        return set()
    return {word & ~1 for word in relocated_words(elf, binary, R_ARM_IRELATIVE)}


def _dynamic_tags(elf: ELFFile) -> dict[str, int]:
    """The dynamic section's tags (the first of each), by name; none for a static program."""
    tags: dict[str, int] = {}
    for sec in elf.iter_sections():
        if sec["sh_type"] == "SHT_DYNAMIC":
            for tag in sec.iter_tags():
                tags.setdefault(tag.entry.d_tag, tag.entry.d_val)
    return tags


def _first_fini_function(binary: Binary, tags: dict[str, int]) -> int | None:
    """The first word of DT_FINI_ARRAY as the file holds it (a PIE's R_ARM_RELATIVE adds
    the bias to it in place), without the Thumb bit; None without one."""
    if tags.get("DT_FINI_ARRAYSZ", 0) < 4 or "DT_FINI_ARRAY" not in tags:
        return None
    word = int.from_bytes(binary.read(tags["DT_FINI_ARRAY"], 4), "little")
    return word & ~1 if word not in (0, 0xFFFFFFFF) else None


def _open_elf(path: str, data: bytes) -> ELFFile:
    """pyelftools' reading of ``data``, which check_elf passed."""
    try:
        return ELFFile(io.BytesIO(data))
    except (ELFError, struct.error, ValueError) as e:
        raise malformed(path, e) from None


def _make_binary(path: str, data: bytes, elf: ELFFile) -> Binary:
    segments = []
    kinds = set()
    for seg in elf.iter_segments():
        t = seg["p_type"]
        if t == "PT_LOAD":
            segments.append(Segment(seg["p_vaddr"], seg["p_memsz"], seg["p_offset"], seg["p_filesz"],
                                    seg["p_flags"], seg["p_align"]))
        kinds.add(t)
    interp = "PT_INTERP" in kinds
    if not any(s.executable for s in segments):
        raise AnvilError(f"{path}: no executable segment")
    binary = Binary(path=os.path.abspath(path), data=data, machine="arm", is_pie=elf["e_type"] == "ET_DYN",
                    is_dynamic=interp, entry=elf["e_entry"], segments=segments,
                    entry_called_as_main=interp and "PT_DYNAMIC" not in kinds)
    binary.profile, binary.dsp = _architecture(elf, path)
    if binary.is_firmware and (interp or binary.is_pie):
        raise AnvilError(f"{path}: a Cortex-M image must be a static ET_EXEC")
    return binary


# Tag_CPU_arch values of the M profile without the DSP extension that are accepted: ARMv7-M
# (ARMv6-M and ARMv8-M.baseline lack it too, but are refused below).
_M_WITHOUT_DSP = {10}
# ARMv8-M.mainline and ARMv8.1-M.mainline: the DSP extension is optional, there only when
# Tag_DSP_extension says so (QEMU's SSE-200 CPU 0, on mps2-an521 and mps3-an524, has none).
_M_OPTIONAL_DSP = {17, 21}
# ARMv6-M, ARMv6S-M and ARMv8-M.baseline (Cortex-M0/M0+/M1/M23) lack most T32 instructions
# hooks use (MOVW, LDRD, UMLAL, IT): their images are refused rather than broken.
_M_BASELINE = {11, 12, 16}


def _architecture(elf: ELFFile, path: str) -> tuple[str, bool]:
    """(profile, has DSP) from the build attributes the toolchain records in .ARM.attributes."""
    profile, arch, dsp_extension = "A", None, 0
    section = elf.get_section_by_name(".ARM.attributes")
    try:
        for sub in section.iter_subsections() if section is not None else ():
            for subsub in sub.iter_subsubsections():
                for attr in subsub.iter_attributes():
                    if attr.tag == "TAG_CPU_ARCH_PROFILE" and attr.value == ord("M"):
                        profile = "M"
                    elif attr.tag == "TAG_CPU_ARCH":
                        arch = attr.value
                    elif attr.tag == "TAG_DSP_EXTENSION":
                        dsp_extension = attr.value
    except Exception as e:  # pyelftools' attribute parser fails in many ways on bad bytes (UnicodeDecodeError...)
        raise malformed(path, e) from None
    if profile == "M" and arch in _M_BASELINE:
        raise AnvilError(f"{path}: ARMv6-M / ARMv8-M.baseline images (Cortex-M0, M0+, M1, M23) are not supported: "
                         "the instrumentation needs ARMv7-M (Cortex-M3 and up)")
    if profile == "M" and arch in _M_OPTIONAL_DSP:
        return profile, dsp_extension == 1
    return profile, not (profile == "M" and arch in _M_WITHOUT_DSP)


def _read_symbols(path: str, elf: ELFFile,
                  data: bytes) -> tuple[list[tuple[int, str, int]], dict[int, list[tuple[int, str]]]]:
    """Function symbols (address with Thumb bit, name, size) and mapping symbols per section."""
    funcs: list[tuple[int, str, int]] = []
    mapping: dict[int, list[tuple[int, str]]] = defaultdict(list)
    table = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
    if table is None:
        return funcs, mapping
    for name, value, size, kind, shndx in symbol_entries(table, data):
        if shndx in _SHN_SPECIAL:
            continue
        m = _MAPPING.match(name)
        if m:
            mapping[shndx].append((value, m.group(1)))
        elif kind == _STT_FUNC and name:
            funcs.append((value, name, size))
    # Only the marks of loaded sections: a non-allocated section's (``.debug_frame``'s ``$d``,
    # with -fno-dwarf2-cfi-asm) are offsets into it, which read as addresses in .text.
    loaded = {index for index, section in enumerate(elf.iter_sections()) if section["sh_flags"] & 0x2}
    for shndx in [shndx for shndx in mapping if shndx not in loaded]:
        del mapping[shndx]
    for lst in mapping.values():
        lst.sort()
    return funcs, mapping


# Names a program that unwinds its stack defines or imports: GCC's C++ runtime (throw,
# personality routine) and glibc's backtrace. Not _Unwind_Backtrace: every static glibc
# program has it.
# OCaml's native code (caml_frametable, caml_start_program) finds each frame of the stack
# by its return address, in a table of the original ones: its GC scans the stack so, and
# exceptions unwind so.
# gprof's profiling (-pg) calls __gnu_mcount_nc (mcount on older ABIs) at every function's
# start, which records the arc from its caller's return address to its own, and writes only
# the arcs inside the original text to gmon.out; -finstrument-functions passes the return
# address to the program's own __cyg_profile_func_enter/exit (decision 0094).
_UNWINDING = {"__cxa_throw", "__cxa_rethrow", "__gxx_personality_v0", "backtrace", "__backtrace",
              "caml_frametable", "caml_start_program",
              "__gnu_mcount_nc", "mcount", "_mcount", "__fentry__", "__cyg_profile_func_enter",
              "__cyg_profile_func_exit",
              # the sanitizers' run times, whose reports walk and print the stack's return addresses
              "__asan_init", "__tsan_init", "__msan_init", "__hwasan_init"}
# Names a program that makes a process running its code defines or imports (Binary.forks):
# the C library's fork, vfork and clone (and glibc's names for them), the generic system call,
# the functions that fork and return in the child (BSD's daemon, forkpty, APR's), and the
# registration of atfork handlers (program code run in any child). Not system(), popen()
# or posix_spawn: their children run the library's code alone until they exec.
_FORKING = {"fork", "vfork", "_Fork", "__libc_fork", "clone", "clone3", "__clone", "__clone2", "syscall",
            "daemon", "forkpty", "__register_atfork", "pthread_atfork", "apr_proc_fork", "apr_proc_detach"}
# Names a program that starts threads defines or imports (POSIX and C11 threads). Every
# thread start of a static program ends in one of them, so it defines it.
_THREADING = {"pthread_create", "thrd_create"}
# A dynamic program may leave the call of pthread_create to a library, which then runs the
# program's code on the thread it starts: the entries of the libraries that do so, as a
# program imports them (decision 0087). Debian's gdb starts its worker threads through
# libstdc++'s std::thread and names no pthread_create. Not clone in a static program:
# glibc's system() and posix_spawn bring it into every one that runs a command.
_THREAD_STARTS = re.compile(
    r"(pthread_create|thrd_create|clone3?"                # the C library's own
    r"|_ZNSt6thread15_M_start_thread.*"                   # libstdc++: std::thread, jthread, async
    r"|_ZN5boost6thread21start_thread_noexcept.*"         # Boost.Thread
    r"|g_thread_(try_)?new|g_thread_create(_full)?|g_thread_pool_new(_full)?"
    r"|g_task_run_in_thread(_sync)?"                      # GLib
    r"|GOMP_(parallel|teams)\w*|__kmpc_fork_(call|teams)"  # OpenMP: GCC's libgomp, LLVM's libomp
    # oneTBB: its algorithms (parallel_for ...) wait with execute_and_wait, task groups and
    # arenas spawn, submit, enqueue and execute; the pool's workers run the program's task
    # bodies (decision 0113: OpenVDB's vdb_tool)
    r"|_ZN3tbb6detail2r1(5spawn|16execute_and_wait|6submit|7enqueue|7execute)E.*"
    r"|uv_thread_create(_ex)?|uv_queue_work"              # libuv: its threads, its work queue's pool
    r"|timer_create|mq_notify|aio_(read|write|fsync)(64)?|lio_listio(64)?|getaddrinfo_a"  # SIGEV_THREAD
    # Language runtimes whose library starts the threads their programs' code runs on:
    # GNAT's tasks (libgnarl; the Ravenscar profile's too) and gccgo's goroutines and
    # scheduler threads (libgo), which ARM trusts (libraries._NAMED_STARTS_ONLY).
    r"|system__tasking__(restricted__)?stages__create_(restricted_)?task"
    r"|__go_go|runtime_mstart"
    # Entries of libraries trusted to run the program's code on their threads through
    # these alone (libraries._NAMED_STARTS_ONLY, decision 0193)
    r"|g_io_scheduler_push_job|g_simple_async_result_run_in_thread|g_dbus_connection_add_filter"  # GLib, GIO
    r"|selinux_restorecon_parallel|lzma_stream_(en|de)coder_mt|ZSTD_create\w+_advanced"
    r"|ZSTD_registerSequenceProducer|sqlite3_create_collation\w*|WebPSetWorkerInterface"
    r"|opj_codec_set_threads|git_packbuilder_set_threads|avahi_threaded_poll_new|GC_pthread_create"
    r")$")


# Exceptions of any language: a personality routine, defined or imported (D's
# __gdc_personality_v0, Ada's __gnat_personality_v0, Rust's rust_eh_personality, C++'s),
# and in a dynamic program the unwinder's entries it imports to raise or pass one on (Rust's
# panics, cleanups). D's uncaught exceptions unwind through the program's frames and print
# their return addresses (dustmite). Not C's __gcc_personality_v0 nor ARM's generic
# __aeabi_unwind_cpp_pr*, nor what a static program defines of the unwinder: every static
# glibc program has them.
_PERSONALITY = re.compile(r"[a-z]_personality(_v\d+|_sj\d+)?$")  # not glibc's personality(2)
_NOT_A_LANGUAGE = {"__gcc_personality_v0"}
_RAISING_IMPORTS = {"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_Resume_or_Rethrow", "_Unwind_ForcedUnwind",
                    "__gcc_personality_v0"}


def _raises(elf: ELFFile, data: bytes) -> bool:
    """Whether the program raises exceptions that unwind its stack (see _PERSONALITY)."""
    for section in (".symtab", ".dynsym"):
        table = elf.get_section_by_name(section)
        if table is None:
            continue
        for name, _, _, _, shndx in symbol_entries(table, data):
            if _PERSONALITY.search(name) and name not in _NOT_A_LANGUAGE:
                return True
            if section == ".dynsym" and shndx == 0 and name in _RAISING_IMPORTS:
                return True
    return False


#: Code a program reads as data, by the symbols that give its start and its size (a 32-bit
#: word): V8's embedded builtins (node, Chromium's programs), copied at start-up next to the
#: JIT's code range so that calls between them are short.
_CODE_AS_DATA = (("v8_Default_embedded_blob_code_", "v8_Default_embedded_blob_code_size_"),)


def code_read_as_data(elf: ELFFile, data: bytes) -> list[tuple[int, int]]:
    """The (start, end) link addresses of code the program reads as data (_CODE_AS_DATA)."""
    table = elf.get_section_by_name(".symtab")
    if table is None:
        return []
    wanted = {name for pair in _CODE_AS_DATA for name in pair}
    found = {name: value for name, value, _, _, _ in symbol_entries(table, data) if name in wanted}
    ranges = []
    for start, size in _CODE_AS_DATA:
        if start in found and size in found:
            where = _offset_of(elf, found[size])
            if where is not None:
                ranges.append((found[start], found[start] + struct.unpack_from("<I", data, where)[0]))
    return ranges


def _offset_of(elf: ELFFile, address: int) -> int | None:
    """The file offset of link address ``address`` (in a loaded segment's file bytes)."""
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= address < seg["p_vaddr"] + seg["p_filesz"] - 3:
            return seg["p_offset"] + address - seg["p_vaddr"]
    return None


def starts_threads(name: str) -> bool:
    """Whether the function ``name`` (defined or imported) starts a thread, as
    ``Binary.threaded`` reads it."""
    return name in _THREADING or bool(_THREAD_STARTS.match(name))


def names_thread_start(elf: ELFFile, data: bytes, named: set[str] | None = None) -> bool:
    """Whether the program names a function that starts a thread, or imports one from a
    library that does (what makes ``Binary.threaded``, Go's runtime aside); ``named``: what
    _named found of a set holding _THREADING, if the caller has it already."""
    if named is None:
        named = _named(elf, data, _THREADING)
    return bool(named & _THREADING) or _imports_thread_start(elf, data)


def _imports_thread_start(elf: ELFFile, data: bytes) -> bool:
    """Whether a dynamic program imports an entry that starts a thread (_THREAD_STARTS)."""
    table = elf.get_section_by_name(".dynsym")
    if table is None:
        return False
    return any(shndx == 0 and _THREAD_STARTS.match(name) for name, _, _, _, shndx in symbol_entries(table, data))


def _named(elf: ELFFile, data: bytes, wanted: set[str]) -> set[str]:
    """Which of ``wanted`` a symbol table names (defined in a static binary, imported by a
    dynamic one)."""
    found: set[str] = set()
    for section in (".symtab", ".dynsym"):
        table = elf.get_section_by_name(section)
        if table is not None:
            found.update(entry[0] for entry in symbol_entries(table, data) if entry[0] in wanted)
    return found


_SHN_SPECIAL = (0, 0xFFF1, 0xFFF2)  # SHN_UNDEF, SHN_ABS, SHN_COMMON: no section
_STT_FUNC = 2


def _mark_unmarked_sections(elf: ELFFile, mapping: dict[int, list[tuple[int, str]]],
                            symbols: list[tuple[int, str, int]]) -> None:
    """Mapping symbols for each executable section its linker marked none of (mold marks
    neither its ``.plt`` nor its ``.plt.got``), in a program whose other sections have
    them. Decoding reads the marks of every section in address order: an unmarked section
    took the kind of the last mark before it, often a literal pool's ``$d``, and its code
    was never decoded, so never counted (a static program's every call of an IFUNC'd
    ``memcpy`` went through such a section). PLT entries are read as their forms are (the
    literal words as data); other code is A32, or Thumb where the symbol at its start says so."""
    thumb_at = {value & ~1 for value, _, _ in symbols if value & 1}
    for start, _, idx, name in _exec_sections(elf):
        if idx in mapping:
            continue
        if name == ".plt":
            marks = plt_marks(elf)
        else:
            marks = stub_marks(elf.get_section(idx).data(), start)
        mapping[idx] = marks or [(start, "t" if start in thumb_at else "a")]


def _exec_sections(elf: ELFFile) -> list[tuple[int, int, int, str]]:
    out = []
    for idx, sec in enumerate(elf.iter_sections()):
        if sec["sh_flags"] & 0x4 and sec["sh_type"] == "SHT_PROGBITS" and sec["sh_size"]:
            out.append((sec["sh_addr"], sec["sh_addr"] + sec["sh_size"], idx, sec.name))
    return sorted(out)


_THUMB_BX_PC = b"\x78\x47"


def _procedures(binary: Binary, elf: ELFFile, funcs: list[tuple[int, str, int]],
                mapping: dict[int, list[tuple[int, str]]]) -> list[Procedure]:
    """Cut every executable section into procedures: named functions and the gaps between them."""
    by_addr: dict[int, tuple[str, bool, int]] = {}
    for value, name, size in funcs:
        addr = value & ~1
        prev = by_addr.get(addr)
        # Prefer a global-looking name over local aliases; keep the largest size.
        if prev is None or (prev[0].startswith(("_", ".")) and not name.startswith(("_", "."))):
            by_addr[addr] = (name, bool(value & 1), max(size, prev[2] if prev else 0))
    procs: list[Procedure] = []
    for start, end, idx, secname in _exec_sections(elf):
        marks = mapping.get(idx, [])
        starts = sorted(a for a in by_addr if start <= a < end)
        cuts = sorted(set(starts) | {start})
        for i, addr in enumerate(cuts):
            nxt = cuts[i + 1] if i + 1 < len(cuts) else end
            if addr in by_addr:
                name, thumb, size = by_addr[addr]
                veneers = _veneer_marks(binary, addr + size, nxt) if 0 < size < nxt - addr else []
                if veneers:
                    # Veneers a linker put after the function, unnamed and unmarked (gold's
                    # Thumb-to-A32 ``bx pc; nop; b``): a procedure of their own, not the
                    # function's tail, each veneer's A32 half read as A32, its word as data.
                    marks = mapping.setdefault(idx, marks)
                    after = _kind_at(marks, nxt)  # what the marks said the next procedure is
                    for mark in veneers:
                        bisect.insort(marks, mark)
                    # (At the section's end the next procedure is another section's: its
                    # own marks say what it is.)
                    if after is not None and nxt < end and nxt not in {at for at, _ in marks}:
                        bisect.insort(marks, (nxt, after))
                    procs.append(Procedure(name=name, address=addr, size=size, thumb=thumb))
                    procs.append(Procedure(name=f"{secname}@{addr + size:#x}", address=addr + size,
                                           size=nxt - addr - size, thumb=veneers[0][1] == "t"))
                    continue
            else:
                name, thumb = f"{secname}@{addr:#x}", _mode_at(marks, addr, default=False)
            kind = _kind_at(marks, addr)
            if kind == "d" and addr not in by_addr:
                continue
            if kind in ("a", "t"):
                thumb = kind == "t"
            procs.append(Procedure(name=name, address=addr, size=nxt - addr, thumb=thumb))
    return procs


def _veneer_marks(binary: Binary, start: int, end: int) -> list[tuple[int, str]]:
    """Mapping symbols for the interworking and long-branch veneers from ``start`` to
    ``end``, which their linker (gold) left unmarked, after the Thumb ``nop`` that may
    align the first: ``$t`` at each Thumb-to-A32 ``bx pc; nop`` and ``$a`` at its A32
    half, ``$a`` at each A32 veneer, ``$d`` at the word a veneer loads. The forms are the
    linkers' stubs (``_VENEERS``); marks stop at the first bytes that are none of them."""
    out: list[tuple[int, str]] = []
    at = start
    while at + 2 <= end and binary.read(at, 2) in _THUMB_NOPS:
        at += 2
    while at + 8 <= end:
        thumb = binary.read(at, 2) == _THUMB_BX_PC and binary.read(at + 2, 2) in _THUMB_NOPS + (_THUMB_BACK,)
        a32 = at + 4 if thumb else at
        if a32 & 3:
            break
        size = next((length for words, length in _VENEERS if binary.read(a32, len(words)) == words
                     and a32 + length <= end), None)
        if size is None:
            # (``b target`` alone: the A32 half of a Thumb-to-A32 veneer, never one by itself)
            if not (thumb and binary.read(a32 + 3, 1) == b"\xea"):
                break
            size = 4
        out += [(at, "t"), (a32, "a")] if thumb else [(a32, "a")]
        if size > 4:
            out.append((a32 + size - 4, "d"))
        at = a32 + size
    return out


_THUMB_NOPS = (b"\xc0\x46", b"\x00\xbf")  # mov r8, r8; nop
_THUMB_BACK = b"\xfd\xe7"  # b.n .-2: GNU ld's second halfword of ``bx pc``
#: A32 veneers that load the word at their end: (their instructions' bytes, their length).
_VENEERS = tuple((b"".join(word.to_bytes(4, "little") for word in words), 4 * len(words) + 4) for words in (
    (0xE51FF004,),                          # ldr pc, [pc, #-4]
    (0xE59FC000, 0xE08CF00F),               # ldr ip, [pc]; add pc, ip, pc (PIE)
    (0xE59FC000, 0xE08FF00C),               # ldr ip, [pc]; add pc, pc, ip
    (0xE59FC000, 0xE12FFF1C),               # ldr ip, [pc]; bx ip (to Thumb)
    (0xE59FC004, 0xE08CC00F, 0xE12FFF1C),   # ldr ip, [pc, #4]; add ip, ip, pc; bx ip (PIE, to Thumb)
    (0xE59FC004, 0xE08FC00C, 0xE12FFF1C),   # ldr ip, [pc, #4]; add ip, pc, ip; bx ip
))


def _kind_at(marks: list[tuple[int, str]], addr: int) -> str | None:
    i = bisect.bisect_right(marks, (addr, "~")) - 1
    return marks[i][1] if i >= 0 else None


def _mode_at(marks: list[tuple[int, str]], addr: int, default: bool) -> bool:
    i = bisect.bisect_right(marks, (addr, "~")) - 1
    while i >= 0:
        if marks[i][1] in "at":
            return marks[i][1] == "t"
        i -= 1
    return default


def _code_ranges(proc: Procedure, marks: list[tuple[int, str]]) -> list[tuple[int, int, bool]]:
    """(start, end, thumb) runs of code inside ``proc`` according to the mapping symbols."""
    if not marks:
        return [(proc.address, proc.end, proc.thumb)]
    points = [(proc.address, _kind_at(marks, proc.address) or ("t" if proc.thumb else "a"))]
    lo = bisect.bisect_right(marks, (proc.address, "~"))
    hi = bisect.bisect_left(marks, (proc.end, ""))
    points.extend(m for m in marks[lo:hi] if proc.address < m[0] < proc.end)
    ranges = []
    for i, (addr, kind) in enumerate(points):
        nxt = points[i + 1][0] if i + 1 < len(points) else proc.end
        if kind in "at" and nxt > addr:
            ranges.append((addr, nxt, kind == "t"))
        elif kind == "d":
            proc.data_ranges.append((addr, nxt))
    return ranges


def _decode(binary: Binary, procs: list[Procedure], mapping: dict[int, list[tuple[int, str]]]) -> dict[int, list]:
    """Linear decoding of each procedure's code ranges (mapping symbols say what is code)."""
    all_marks = sorted(m for lst in mapping.values() for m in lst)
    disasm = {True: make_disassembler(True), False: make_disassembler(False)}
    cache = DecodeCache()
    decoded: dict[int, list] = {}
    progress.phase("decoding", len(procs))
    for proc in procs:
        progress.advance()
        insns = []
        for start, end, thumb in _code_ranges(proc, all_marks):
            code = binary.read(start, end - start)
            got, stop = decode_range(disasm[thumb], code, start, thumb, cache, binary.is_firmware)
            insns.extend(got)
            if stop < end and any(code[stop - start:]):
                proc.notes.append(f"undecodable bytes at {stop:#x}..{end:#x}")
                proc.undecodable.append((stop, end))
        if insns:
            proc.thumb = insns[0].thumb
        decoded[proc.address] = insns
    return decoded


def _finish(binary: Binary, elf: ELFFile, procs: list[Procedure], decoded: dict[int, list]) -> None:
    """Blocks for every procedure; block boundaries also come from data and other procedures."""
    starts = {i.address: i.thumb for insns in decoded.values() for i in insns}
    taken, binary.code_pointers = _address_taken(binary, elf, procs, starts)
    # Landing pads and personality routines are code addresses kept in data too (the
    # exception tables), entered from outside the procedure's own flow: by the unwinder.
    binary.unwinder_entries = {at for at in unwinder_entries(elf, binary.read) if at in starts}
    # Every goroutine's first frame returns to runtime.goexit + 4 (Go's PC quantum on ARM),
    # after an instruction that calls nothing: entered like a landing pad (decision 0089).
    binary.unwinder_entries |= {entry + 4 for entry, name in binary.go_functions.items()
                                if name == "runtime.goexit" and entry + 4 in starts}
    taken |= binary.unwinder_entries
    binary.address_taken = taken
    # Every direct branch target starts a block, wherever the branch is: hand-written
    # assembly jumps into code that the symbol table files under a neighbour.
    targets = {i.branch_target for insns in decoded.values() for i in insns if i.branch_target is not None}
    entries = taken | targets
    jumped = _jumps_through_lr(binary, decoded, starts, entries)
    taken |= jumped
    entries |= jumped
    entries_sorted = sorted(entries)
    switch_cases = binary.switch_cases.keys()
    kept = []
    for proc in procs:
        insns = decoded[proc.address]
        if not insns:
            continue
        lo = bisect.bisect_left(entries_sorted, proc.address)
        hi = bisect.bisect_left(entries_sorted, proc.end)
        SwitchFinder(binary).see_all(insns)
        unchecked_register_tables(binary, insns)
        if proc.thumb:
            _case_tables(binary, proc, insns)
        # Most procedures have no switch (told by their names and addresses, in C loops).
        tables = table_branch_targets(binary, insns) \
            if not switch_cases.isdisjoint(map(_ADDRESS, insns)) or not _TABLE_JUMPS.isdisjoint(map(_NAME, insns)) \
            else set()
        _make_blocks(proc, insns, set(entries_sorted[lo:hi]) | tables)
        proc.index = len(kept)
        kept.append(proc)
    block_index = 0
    for proc in kept:
        for block in proc.blocks:
            block.index = block_index
            block_index += 1
        proc.binary = binary  # type: ignore[attr-defined]
    binary.procedures = kept


def _case_tables(binary: Binary, proc: Procedure, insns: list[Instruction]) -> None:
    """The tables of ``proc``'s Thumb-1 switches (arch/arm/case_helpers) that discovery did
    not read (a program with symbols is not descended)."""
    at: dict[int, Instruction] | None = None
    for ins in insns:
        if ins.name == "bl" and ins.address not in binary.switch_cases:
            helper = helper_called(binary, ins)
            if helper is not None:
                at = at if at is not None else {other.address: other for other in insns}
                note_case_table(binary, ins, helper, at, (proc.address, proc.end))


def _jumps_through_lr(binary: Binary, decoded: dict[int, list], starts: dict[int, bool],
                      entries: set[int]) -> set[int]:
    """Where a ``bx lr`` jumps that is no return: the code before it, which nothing else
    enters, makes LR a constant code address (clang's first dispatch of an A32 computed
    goto: ``ldr r2, [pc, #n]; add lr, pc, r2; ... bx lr``). Taken for a return, its copy
    jumped into the original code, which then ran uncounted. Such a ``bx lr`` becomes an
    indirect jump (its copy translates LR at run time); returns its targets (block leaders)."""
    jumped: set[int] = set()
    for insns in decoded.values():
        for k, ins in enumerate(insns):
            if ins.name != "bx" or not ins.is_return or k == 0:
                continue
            first = k  # the straight-line code before it that no other path enters
            while first > 0 and k - first < WINDOW and insns[first].address not in entries:
                before = insns[first - 1]
                if before.is_branch or before.writes_pc or before.end != insns[first].address:
                    break
                first -= 1
            if not any(earlier.op_str.startswith("lr,") for earlier in insns[first:k]):
                continue  # (most: nothing before it sets LR)
            known = register_call_target(insns[first:k + 1], binary.read, lambda at: at in starts)
            if known is not None and starts[known[0]] == known[1]:
                insns[k] = dataclasses.replace(ins, is_return=False, is_indirect=True)  # (shared by encoding)
                jumped.add(known[0])
    return jumped


_ADDRESS = operator.attrgetter("address")
_NAME = operator.attrgetter("name")
_TABLE_JUMPS = frozenset(("tbb", "tbh"))


def _address_taken(binary: Binary, elf: ELFFile, procs: list[Procedure],
                   starts: dict[int, bool]) -> tuple[set[int], set[int]]:
    """Code addresses stored as 32-bit words in data: jump tables, label addresses, pointers.

    Returns (all such addresses, those whose bit 0 also matches the instruction set,
    i.e. real code pointers).

    Data sections and data-in-code ($d ranges: literal pools) are scanned; instruction
    bytes are not, as they would match by coincidence.
    """
    ranges = []
    for sec in elf.iter_sections():
        flags = sec["sh_flags"]
        if sec["sh_type"] == "SHT_PROGBITS" and flags & 0x2 and not flags & 0x4 and sec["sh_size"]:
            ranges.append((sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]))
    for proc in procs:
        ranges.extend(proc.data_ranges)
    taken: set[int] = set()
    pointers: set[int] = set()
    code = sorted((lo, hi) for lo, hi, _, _ in _exec_sections(elf))

    def in_code(value: int) -> bool:
        return _inside(code, value & ~1)

    for lo, hi in ranges:
        lo = (lo + 3) & ~3
        blob = binary.read(lo, max(0, hi - lo))
        n = len(blob) // 4
        values = struct.unpack_from(f"<{n}I", blob, 0)
        for k, value in enumerate(values):
            # Thumb code addresses appear with bit 0 set (function pointers) or clear
            # (GCC's computed-goto tables, which `orr rX, #1` before `bx`); A32 ones are
            # word aligned. A coincidental match only adds a block boundary, but a table
            # of numbers counting through a function would leave no room for its jump.
            thumb = starts.get(value & ~1)
            if (thumb or (thumb is False and not value & 3)) and not counted(values, k) and not in_text(values, k) \
                    and not (value & 1 and in_offset_column(values, k, in_code)):
                taken.add(value & ~1)
                if thumb == bool(value & 1):
                    pointers.add(value & ~1)
    return taken, pointers


def _make_blocks(proc: Procedure, insns: list, taken: set[int]) -> None:
    computed = has_computed_jump(insns) or proc.jumped_into
    leaders = {insns[0].address}
    lo, hi = proc.address, proc.end
    prev = None
    for ins in insns:  # one pass: this runs over every instruction of the program
        address = ins.address
        if prev is not None and (address != prev.address + prev.size or prev.is_branch or prev.is_call
                                 or prev.is_syscall or prev.writes_pc or prev.name == "udf"):
            leaders.add(address)  # after a gap, or after what ends a block
        if (computed and not ins.in_it) or address in taken:
            leaders.add(address)
        target = ins.branch_target
        if target is not None and lo <= target < hi:
            leaders.add(target)
        prev = ins
    if computed:
        proc.notes.append("computed jump: every instruction starts a block")
    blocks: list[Block] = []
    current: list = []
    for ins in insns:
        if ins.address in leaders and current:
            blocks.append(Block(current[0].address, current, proc))
            current = []
        current.append(ins)
    if current:
        blocks.append(Block(current[0].address, current, proc))
    for block in blocks:
        own_instructions(block)
    proc.blocks = blocks
