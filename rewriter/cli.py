"""The ``anvil`` command line: instrument, run, inspect, tools."""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import json
import math
import mmap
import os
import platform
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from . import progress
from .api import Options
from .boards import BOARDS, DEFAULT_UART_BASE, Board, board, parse_icount, parse_region, parse_uart_base
from .errors import INTERNAL_ERROR_STATUS, AnvilError, is_parser_error, malformed, one_line
from .files import atomic_write
from .ir.elf_check import EM_X86_64, check_elf
from .ir.fork_split import JOBS_VARIABLE, jobs_allowed, jobs_limit, parse_jobs
from .run_results import ResultsFiles, why_missing

QEMU_LIB_ROOT = "/usr/arm-linux-gnueabihf"
#: Dynamic loader -> the Debian cross root that has it: armhf's, and armel's (soft-float
#: ARMv5TE, loader /lib/ld-linux.so.3; package libc6-armel-cross).
CROSS_ROOTS = {"ld-linux-armhf.so.3": QEMU_LIB_ROOT, "ld-linux.so.3": "/usr/arm-linux-gnueabi"}


def _parse_opts(items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            if not part:
                continue
            if "=" not in part:
                raise AnvilError(f"tool option '{part}' is not of the form name=value")
            key, value = part.split("=", 1)
            if key.strip() in pairs and pairs[key.strip()] != value.strip():  # which one was meant?
                raise AnvilError(f"tool option '{key.strip()}' given twice ({pairs[key.strip()]}, {value.strip()})")
            pairs[key.strip()] = value.strip()
    return pairs


def cmd_instrument(args: argparse.Namespace) -> int:
    from .emit import inhost, rehost
    from .ir.elf_loader import load_binary
    from .ir.libraries import NOT_FOUND
    from .tool_files import load_tool

    tool = load_tool(args.tool)
    values = tool.parse_options(_parse_opts(args.opt))
    output = args.output or args.binary + ".inst"
    report_path = output + ".anvil.json"
    for path in (output, report_path, *([output + rehost.SITE_TABLE_SUFFIX] if args.mode == "rehost" else [])):
        _check_writable(path, args.binary)
    out_file = args.out or f"{os.path.basename(output)}.{tool.name}.out"
    if args.mode != "rehost" and (args.transport or args.uart_base is not None or args.ring_size is not None):
        raise AnvilError("--transport, --uart-base and --ring-size are for --mode rehost")
    opts = Options(values=values, only=args.only, skip=args.skip, out=out_file, format=args.format,
                   flash_region=args.flash_region, ram_region=args.ram_region, transport=args.transport,
                   uart_base=args.uart_base, ring_size=args.ring_size, return_addresses=args.return_addresses,
                   board=args.board)
    jobs = jobs_allowed() if args.jobs is None else args.jobs  # ANVIL_JOBS checked before any work
    _progress(args, f"loading {args.binary}")
    started = time.monotonic()
    with _removed_on_error(output, output + rehost.SITE_TABLE_SUFFIX, report_path):
        with progress.shown(sys.stderr.isatty()):  # a bar on a terminal only, never in captured output
            binary = load_binary(args.binary)
            _check_fits(args, binary)
            if args.return_addresses == "relocated" and binary.unwinds:
                # Asked for: the copy is made so, but it will not behave as the original if
                # an exception passes through instrumented code.
                print(f"anvil: warning: {args.binary} unwinds its stack (exceptions, or a runtime that "
                      "walks return addresses): with --return-addresses relocated an exception thrown "
                      "through instrumented code is not caught; the default keeps original return "
                      "addresses for such a program", file=sys.stderr)
            _progress(args, f"{len(binary.procedures)} procedures, {binary.instruction_count()} instructions; "
                            "instrumenting")
            emitter = rehost if args.mode == "rehost" else inhost
            with jobs_limit(jobs):
                report = emitter.instrument(binary, tool, opts, output)
        report.rewrite_seconds = time.monotonic() - started  # loading and decoding included
        atomic_write(report_path, _report_json(args, tool.name, output, out_file, report, binary), mode=0o644)
    if args.mode != "rehost":  # an earlier ReHost copy's table would make `anvil run` take this one for ReHost
        with contextlib.suppress(FileNotFoundError):
            os.unlink(output + rehost.SITE_TABLE_SUFFIX)
    print(f"anvil: wrote {output}: {report.summary()}; report in {report_path}", file=sys.stderr)
    for note in binary.notes:
        if NOT_FOUND + ")" in note:  # a library not found: the copy may be slower than it need be
            print(f"anvil: {note} (set QEMU_LD_PREFIX or LD_LIBRARY_PATH to where the program's libraries are)",
                  file=sys.stderr)
    if binary.entry_called_as_main:  # (decisions 0152 and 0207)
        print("anvil: its interpreter (klibc's library) calls its entry as main: results are written when main "
              "returns, none where the program ends by calling exit", file=sys.stderr)
    global _exit_at_once
    _exit_at_once = True
    if _from_console:  # the process ends at once: freeing the IR here would be wasted
        _held.append(binary)
    return 0


def _check_fits(args: argparse.Namespace, binary: Any) -> None:
    """AnvilError for an ``instrument`` option that does not apply to ``binary`` (a firmware
    option given for a Linux program) or selects nothing in it (``--only`` that matches no
    procedure): said, not ignored, as every other option's mistake is."""
    if not binary.is_firmware:
        given = [name for name, value in (("--board", args.board), ("--flash-region", args.flash_region),
                                          ("--ram-region", args.ram_region)) if value]
        if given:
            raise AnvilError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for Cortex-M images: "
                             f"{args.binary} is a Linux program")
    if args.only and not binary.select(args.only, None):
        raise AnvilError(f"--only {' --only '.join(args.only)}: no procedure of {args.binary} matches "
                         "('anvil inspect' lists them)")


def _check_writable(path: str, *inputs: str) -> None:
    """AnvilError before any work if ``path`` cannot be written as a new regular file: an
    empty name, its directory missing or read-only, a directory, FIFO or device in its
    place (which the rename of atomic_write would replace: as root, /dev/null itself), or
    one of the command's ``inputs`` (which the output would overwrite before it is read)."""
    if not path:
        raise AnvilError("cannot write a file with an empty name")
    if path.endswith(os.sep) and not os.path.isdir(path):
        raise AnvilError(f"cannot write {path}: no directory {path}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise AnvilError(f"cannot write {path}: no directory {directory}")
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise AnvilError(f"cannot write {path}: it is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise AnvilError(f"cannot write {path}: it is {_kind_of(st.st_mode)}, not a regular file")
    for given in inputs:
        with contextlib.suppress(OSError):
            if st is not None and os.path.samefile(path, given):
                raise AnvilError(f"cannot write {path}: it is the input file {given}")
    try:  # a file made and removed: os.access says yes to root on a read-only mount or in /proc
        with tempfile.TemporaryFile(dir=directory, prefix=".anvil-"):
            pass
    except OSError as e:
        raise AnvilError(f"cannot write {path}: {directory} is not writable ({e.strerror})") from None


def _check_readable(path: str) -> None:
    """AnvilError unless ``path`` is a regular file this process can read: a FIFO would
    block the read for ever and a device (/dev/zero) never end it."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            with open(path, "rb"):
                return
    except OSError as e:
        raise AnvilError(f"cannot read {path}: {e.strerror}") from None
    raise AnvilError(f"cannot read {path}: it is {_kind_of(st.st_mode)}, not a regular file")


def _kind_of(mode: int) -> str:
    """What a file of mode ``mode`` is, in words."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _report_json(args: argparse.Namespace, tool: str, output: str, out_file: str, report: Any, binary: Any) -> bytes:
    """What ``<output>.anvil.json`` says: the rewrite's inputs, what the loader found of the
    program (``binary``) and the emitter's report."""
    return json.dumps({
        "input": os.path.abspath(args.binary), "output": os.path.abspath(output), "tool": tool,
        "mode": args.mode,
        "results_file": out_file, "format": args.format,
        "procedures": report.procedures,
        "instrumented": report.relocated if report.selected is None else report.selected,
        "copied": report.relocated,
        "instructions": report.instructions, "rewrite_seconds": round(report.rewrite_seconds, 3),
        # This process's largest resident set so far, in MB (the compiler's is apart).
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "not_instrumented": report.not_relocated, "entries_not_patched": report.entries_not_patched,
        "undecodable": report.undecodable,
        "vector_indexed": report.vector_indexed,
        "entries_run_in_place": report.entries_run_in_place,
        "original_size": report.original_size, "output_size": report.output_size,
        "block_counters": report.block_counters, "deferred_sites": report.deferred_sites,
        "filter_hits_in_registers": report.filter_hits_in_registers,
        "return_addresses": report.return_addresses, "return_sites": report.return_sites,
        "relocation_processes": report.relocation_processes, "loader_stub": report.loader_stub,
        "started_from": report.started_from, "board": report.board,
        "threads": binary.threaded, "notes": binary.notes,
    }, indent=1).encode()


@contextlib.contextmanager
def _removed_on_error(*paths: str) -> Iterator[None]:
    """Remove those of ``paths`` written inside the block if it fails, so that a failed
    command leaves no output (each file is written whole, by atomic_write, but an error
    may come between two of them); files it did not write stay as they were."""
    before = {path: _stamp(path) for path in paths}
    try:
        yield
    except BaseException:
        for path in paths:
            if _stamp(path) != before[path]:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        raise


def _stamp(path: str) -> tuple[int, int] | None:
    """(inode, modification time) of ``path``, None if there is none: what changes when it is written."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


# Set once the image is written: what the process still holds is the IR, which the
# interpreter would free object by object at exit (about 0.1 s of Lua's rewrite).
_exit_at_once = False
# Set by console(): the process exits right after main(), so what ``instrument`` held need
# not be freed object by object when its function returns (python3.11's IR: about 0.3 s).
# Left unset where main() is called in-process (the tests), which go on using memory.
_from_console = False
_held: list[object] = []


def _progress(args: argparse.Namespace, text: str) -> None:
    if getattr(args, "verbose", False):
        progress.end_phase()  # a line of text, not one drawn over a bar
        print(f"anvil: {text}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    binary = args.binary
    if not os.path.exists(binary):
        raise AnvilError(f"{binary}: no such file")
    if args.icount is not None and not args.board:
        raise AnvilError("--icount is for firmware images run with --board")
    if args.sysroot is not None and args.board:
        raise AnvilError("--sysroot is for Linux programs, not firmware images run with --board")
    if args.out:
        _check_writable(args.out if not os.path.isdir(args.out) else os.path.join(args.out, "x"), binary)
    meta = _metadata(binary)
    results = ResultsFiles([meta["results_file"]] if meta and meta.get("results_file") else [], args.out)
    # Each way of running clears what an earlier run left just before the program starts
    # (not when an error stops the run first), so that afterwards a results file that
    # exists is this run's (decision 0037).
    with _signals_forwarded():
        returncode, said = _run_on_board(args, results.clear) if args.board else _run_on_linux(args, results.clear)
    results.report(args.quiet, None if said else why_missing(returncode))
    return returncode


@contextlib.contextmanager
def _signals_forwarded() -> Iterator[None]:
    """While ``anvil run`` runs a program, a SIGTERM or SIGHUP sent to anvil goes to the
    program (qemu, which passes it on, or the native program), and anvil waits for it to
    end as that signal makes it: its results, the status a killed program gives. Otherwise
    anvil would die alone and leave the program running without it. SIGINT too, unless it
    came from a terminal whose foreground is ours: Ctrl-C reaches the program by itself."""
    def forward(signum: int, frame: object) -> None:
        pids = _children()
        if not pids:  # no program yet (a build, a connection): stop as any other command does
            raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)

    def interrupt(signum: int, frame: object) -> None:
        if not _foreground() or not _children():
            forward(signum, frame)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {signal.SIGTERM: forward, signal.SIGHUP: forward, signal.SIGINT: interrupt}
    # One anvil was started with ignored (`nohup`, a background job's SIGINT) stays ignored:
    # the program inherits it across exec, as it would without anvil; a handler would not be.
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()
                if signal.getsignal(signum) != signal.SIG_IGN}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _children() -> list[int]:
    """The processes this one started that still run (Linux: /proc's children lists)."""
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as f:
                pids += map(int, f.read().split())
    return pids


def _foreground() -> bool:
    """Whether a terminal's foreground process group is ours (its Ctrl-C reaches us all)."""
    try:
        with open("/dev/tty") as tty:
            return os.tcgetpgrp(tty.fileno()) == os.getpgrp()
    except OSError:
        return False


def _sysroot(args: argparse.Namespace) -> str:
    """Where qemu-arm finds the program's loader and libraries: --sysroot, else $QEMU_LD_PREFIX
    (which qemu-arm itself reads), else the cross toolchain's."""
    if args.sysroot is not None:
        if not os.path.isdir(args.sysroot):
            raise AnvilError(f"--sysroot {args.sysroot}: not a directory")
        return args.sysroot
    return os.environ.get("QEMU_LD_PREFIX") or _cross_root(args.binary)


def _cross_root(binary: str) -> str:
    """The cross root whose loader ``binary`` names (CROSS_ROOTS), where it is installed;
    else armhf's."""
    try:
        with open(binary, "rb") as handle:
            head = handle.read(0x10000)
    except OSError:
        return QEMU_LIB_ROOT
    for loader, root in CROSS_ROOTS.items():
        if f"/{loader}\0".encode() in head and os.path.isdir(root):
            return root
    return QEMU_LIB_ROOT


def _run_on_linux(args: argparse.Namespace, before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run a Linux program under qemu-arm (an x86-64 one natively), a ReHost one with its
    records going to the server, calling ``before_start`` just before it starts; (its exit
    status, whether a line said already that no results were written)."""
    binary = args.binary
    machine, data = _check_elf(binary)
    if machine == EM_X86_64:
        return _run_natively(args, before_start)
    if _elf_file(binary, data, functools.partial(_is_firmware, binary)):
        raise AnvilError(f"{binary} is a Cortex-M firmware image: run it with --board NAME")
    qemu = shutil.which("qemu-arm")
    if qemu is None:
        raise AnvilError("qemu-arm not found: run scripts/bootstrap.sh")
    meta = _metadata(binary)
    sysroot = _sysroot(args)
    loader = _elf_file(binary, data, _interpreter)
    if loader and not os.path.exists(os.path.join(sysroot, loader.lstrip("/"))):
        # qemu-arm would say so in two lines and exit 255, as if the program had
        raise AnvilError(f"{binary}'s dynamic loader {loader} is not in {sysroot} (--sysroot DIR, or $QEMU_LD_PREFIX)")
    cmd = [qemu, "-L", sysroot]
    if args.argv0:
        cmd += ["-0", args.argv0]
    cmd += [binary, *args.args]
    return _run_command(args, cmd, None, meta, before_start)


def _run_command(args: argparse.Namespace, cmd: list[str], executable: str | None, meta: dict | None,
                 before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run ``cmd`` (the program ``executable``, if not cmd[0]): a ReHost binary with its
    records going to the server, calling ``before_start`` just before it starts."""
    from .emit.rehost import SITE_TABLE_SUFFIX

    binary = args.binary
    if _is_rehost(binary, meta):
        from rehost import bridge

        def start(channel: Any, table: Any, document: bytes, program: str, token: str) -> Any:
            return bridge.run(cmd, channel, table.tool, document, program, token, executable=executable,
                              forks=table.forks, inherit_descriptors=True)

        return _run_rehost(args, binary + SITE_TABLE_SUFFIX, start, before_start)
    _check_not_a_rehost_copy(binary)
    if args.server or args.lib:
        raise AnvilError(f"{binary} is not a ReHost binary: --server and --lib need --mode rehost")
    from rehost import PROGRAM_ENVIRONMENT  # (the user's, as ReHost's programs get it)

    before_start()
    # (close_fds=False: the descriptors we were given go to the program, as without us.)
    return subprocess.run(cmd, executable=executable, env=PROGRAM_ENVIRONMENT, close_fds=False).returncode, False


def _run_natively(args: argparse.Namespace, before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run an x86-64 program on this machine, as it is (InHost: its results are its own;
    ReHost: its records go to the server, as under qemu-arm)."""
    binary = args.binary
    if platform.machine() not in ("x86_64", "AMD64"):
        raise AnvilError(f"{binary}: an x86-64 program, and this machine is {platform.machine()}")
    if args.sysroot is not None:
        raise AnvilError("--sysroot is for 32-bit ARM programs run under qemu-arm; an x86-64 program runs natively")
    # The path as given (a bare name made relative, not searched for on PATH): the kernel puts
    # it at the top of the stack (AT_EXECFN), so another spelling moves every stack address
    # from where `./prog` alone has them.
    path = binary if os.sep in binary else os.path.join(os.curdir, binary)
    return _run_command(args, [args.argv0 or binary, *args.args], path, _metadata(binary), before_start)


def _check_elf(binary: str) -> tuple[int, bytes]:
    """The machine (e_machine) of ``binary`` and its bytes; AnvilError unless it is an ELF
    executable whose program headers and loaded segments are all in the file: what a loader
    needs to run it. qemu-arm says nothing of a text file or of a file cut inside its ELF
    header (exit status 1), and dies of SIGBUS itself on a segment cut short (the mapping
    past the end of the file), which ``anvil run`` would pass on as the program's death."""
    try:
        with open(binary, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AnvilError(f"cannot read {binary}: {e.strerror}") from None
    check_elf(binary, data, sections=False)
    return int.from_bytes(data[18:20], "little"), data


def _elf_file(path: str, data: bytes, question: Callable[[Any], Any]) -> Any:
    """``question`` asked of ``data`` parsed by pyelftools; a parser's error is the file's
    (one line: malformed), as in the loader."""
    import io

    from elftools.elf.elffile import ELFFile

    try:
        return question(ELFFile(io.BytesIO(data)))
    except AnvilError:
        raise
    except Exception as e:  # pyelftools fails in many ways on bytes the structure check lets by
        raise malformed(path, e) from None


def _is_firmware(path: str, elf: Any) -> bool:
    """Whether the build attributes say M profile: a Cortex-M image (as the loader decides)."""
    from .ir.elf_loader import _architecture

    return _architecture(elf, path)[0] == "M"


def _interpreter(elf: Any) -> str | None:
    """The dynamic loader a Linux program names (PT_INTERP), None for a static one."""
    for segment in elf.iter_segments():
        if segment["p_type"] == "PT_INTERP":
            return segment.get_interp_name()
    return None


def _run_on_board(args: argparse.Namespace, before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run a firmware image on QEMU's model of --board; its semihosting console is ours.

    A ReHost image writes its records through semihosting to ``<image>.records`` in the
    working directory (made a named pipe here, read by the bridge) or to a UART (which QEMU
    writes to another named pipe), as its site table says. Returns as _run_on_linux.
    """
    from .emit.firmware_placement import check_runs_on
    from .emit.rehost import SITE_TABLE_SUFFIX

    target = board(args.board)
    icount = args.icount
    machine, data = _check_elf(args.binary)
    if machine == EM_X86_64:
        raise AnvilError(f"{args.binary}: an x86-64 program, not a firmware image for --board")
    if not _elf_file(args.binary, data, functools.partial(_is_firmware, args.binary)):
        raise AnvilError(f"{args.binary} is a Linux program, not a firmware image for --board (anvil run without it)")
    rehost = _is_rehost(args.binary, _metadata(args.binary))
    if not rehost:
        _check_not_a_rehost_copy(args.binary)
    if rehost:  # a UART image on a board whose UARTs ReHost cannot drive: the more telling error
        _check_transport(args.binary + SITE_TABLE_SUFFIX, target)
    # An image for another board's memory map faults at its first instruction (QEMU spins on
    # the lockup for ever), or loses its results where the board has no memory (decision 0122).
    _elf_file(args.binary, data, lambda elf: check_runs_on(data, target))
    if args.args:
        raise AnvilError("a firmware image takes no program arguments")
    if not rehost and (args.server or args.lib):
        raise AnvilError(f"{args.binary} is not a ReHost image: --server and --lib need --mode rehost")
    if shutil.which("qemu-system-arm") is None:
        raise AnvilError("qemu-system-arm not found: run scripts/bootstrap.sh")
    if not rehost:
        before_start()
        return subprocess.run(target.qemu_command(args.binary, icount=icount)).returncode, False
    return _run_rehost(args, args.binary + SITE_TABLE_SUFFIX,
                       functools.partial(_start_on_board, target, args.binary, icount), before_start)


def _check_transport(table_path: str, target: Board) -> None:
    """A one-line error if the ReHost image's site table sends records through a transport
    ``target`` does not offer (an unreadable table is left to the session to refuse)."""
    from rehost.sitetable import SiteTableError, parse

    try:
        with open(table_path, "rb") as f:
            link = parse(f.read()).channel
    except (OSError, SiteTableError, ValueError):
        return
    if link is not None:
        target.check_transport(link.transport)


def _start_on_board(target: Board, image: str, icount: int | None, channel: Any, table: Any, document: bytes,
                    program: str, token: str) -> Any:
    """Run the ReHost ``image`` on QEMU, its records forwarded from the channel its site table names."""
    from rehost import bridge

    from .emit.rehost import channel_path

    link = table.channel  # None in site tables older than the UART transport: semihosting
    if link is not None and link.transport == "uart":
        # QEMU writes what the image sends through its UART to a named pipe, as semihosting does to
        # <image>.records; it lives in a private directory, not beside the image.
        with tempfile.TemporaryDirectory(prefix="anvil-") as tmp:
            pipe = os.path.join(tmp, "uart")
            cmd = target.qemu_command(image, serial=(link.uart_base, f"file:{pipe}"), icount=icount)
            return bridge.run_with_pipe(cmd, pipe, channel, table.tool, document, program, token)
    return bridge.run_with_pipe(target.qemu_command(image, icount=icount), channel_path(image), channel, table.tool,
                                document, program, token)


def cmd_image(args: argparse.Namespace) -> int:
    """Write what a flasher takes: the image's loaded bytes as raw binary or Intel HEX."""
    from .image import load_chunks, to_bin, to_ihex

    output = args.output or f"{args.binary}.{args.format}"
    _check_writable(output, args.binary)
    entry, chunks = load_chunks(args.binary)
    if args.format == "bin":
        start, data = to_bin(chunks, args.fill)
        note = f"load at {start:#010x}, {len(data)} bytes"
    else:
        data = to_ihex((entry, chunks))
        note = f"{sum(len(c) for _, c in chunks)} bytes in {len(chunks)} range(s)"
    atomic_write(output, data, mode=0o644)
    print(f"anvil: wrote {output}: {note}", file=sys.stderr)
    return 0


def _run_rehost(args: argparse.Namespace, sites: str, start: Callable[..., Any],
                before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run a ReHost binary: records to the server at --server, or to a local one started here.

    ``start(channel, table, site_table, program, token)`` runs the program and forwards its
    records (rehost.bridge.run on Linux, bridge.run_with_pipe on a board, where the parsed
    site table ``table`` says which channel); returns the Outcome. ``before_start`` runs
    once the server answers. Returns the program's exit status and whether a line said
    already that no results were written.
    """
    with _rehost_session(args, sites) as (table, document, channel):
        before_start()
        outcome = start(channel, table, document, os.path.basename(args.binary), _token(args))
    _report_rehost(outcome, table)
    return outcome.returncode, bool(outcome.error)


def cmd_rehost_listen(args: argparse.Namespace) -> int:
    """Wait for a ReHost program started elsewhere (ANVIL_REHOST_CONNECT) and analyse its records."""
    from rehost import bridge

    from .emit.rehost import SITE_TABLE_SUFFIX

    def ready(where: str) -> None:
        print(f"anvil: waiting for {os.path.basename(args.binary)} on {where} "
              f"(run it with ANVIL_REHOST_CONNECT={where})", file=sys.stderr, flush=True)

    if args.out:
        _check_writable(args.out if not os.path.isdir(args.out) else os.path.join(args.out, "x"), args.binary)
    if args.records is not None and os.path.isdir(args.records):
        raise AnvilError(f"--from {args.records}: a directory, not a records file, named pipe or serial device")
    with _rehost_session(args, args.binary + SITE_TABLE_SUFFIX) as (table, document, channel):
        results = ResultsFiles(sorted(table.output_paths), args.out)
        results.clear()
        program = os.path.basename(args.binary)
        if args.records is not None:
            outcome = bridge.read_records(args.records, channel, table.tool, document, program, _token(args),
                                          args.idle)
        else:
            outcome = bridge.listen(args.listen, channel, table.tool, document, program, _token(args), ready,
                                    args.timeout)
    if not _report_rehost(outcome, table):
        return 1
    results.report(args.quiet, why_missing(None))
    return 0


@contextlib.contextmanager
def _rehost_session(args: argparse.Namespace, sites: str):
    """(site table, its bytes, where the records go): a channel to the server at --server, or
    the analysis in this process (rehost/local.py)."""
    from rehost import bridge
    from rehost.dispatch_c import MissingRoutine
    from rehost.local import LocalAnalysis
    from rehost.server import Library
    from rehost.sitetable import SiteTableError, parse

    if not os.path.exists(sites):
        raise AnvilError(f"site table {sites} is missing (written beside a binary instrumented with --mode rehost)")
    with open(sites, "rb") as f:
        document = f.read()
    try:
        table = parse(document)
    except SiteTableError as e:
        raise AnvilError(f"{sites}: {e}") from None
    with contextlib.suppress(OSError), open(args.binary, "rb") as f:
        # The program carries its table's digest (anvil_rh_table_hash) and sends it first: a
        # table it does not carry is another program's, whose records it would read as garbage
        # (the session would be refused only once the program had run).
        if table.digest not in f.read():
            raise AnvilError(f"{sites} is not {args.binary}'s site table (the program was instrumented with "
                             "another): instrument it again, or give the table written with it")
    if args.server:
        credentials = None
        if args.tls_ca:
            import grpc
            credentials = grpc.ssl_channel_credentials(_tls_pem("--tls-ca", args.tls_ca))
        channel = bridge.connect(args.server, credentials)
    else:  # the analysis in this process: no server, no gRPC (rehost/local.py)
        library = Library.of_sources(table.analysis_sources, table.word_bytes) \
            if table.analysis_sources and not args.lib \
            else Library(args.lib)
        try:  # before the program starts: an analysis without the routines would only drop its records
            library.dispatcher(table).close()
        except MissingRoutine as e:
            raise AnvilError(f"{library.name}: {e}") from None
        channel = LocalAnalysis(library, {document: table})
    try:
        yield table, document, channel
    finally:
        channel.close()


def _report_rehost(outcome, table) -> bool:
    """Write the results the server sent; one line on stderr if they are missing or partial. True: complete."""
    from rehost import bridge

    bridge.write_outputs(outcome, table.output_paths)
    summary = outcome.summary
    if outcome.error:
        print(f"anvil: rehost: {outcome.error}; {outcome.lost_bytes} bytes of records not analysed, "
              "no results written", file=sys.stderr)
        return False
    for pid, child in sorted(outcome.children.items()):
        # A child that ends without its end record (it called exec, or was killed) leaves no
        # results, as an InHost child does; a session that fails is said, as the program's is.
        why = child.error or (child.summary.error if child.summary is not None else "")
        if why and pid not in outcome.detached:
            print(f"anvil: rehost: forked child {pid}: {why}; no results written for it", file=sys.stderr)
    for pid in outcome.detached:
        print(f"anvil: rehost: forked child {pid} still runs in a session of its own (a daemon): not waited for "
              "longer; what it records from now on is not analysed", file=sys.stderr)
    for pid, why in sorted(outcome.unkept_children.items()):
        print(f"anvil: rehost: forked child {pid}: no results written for it: {why}", file=sys.stderr)
    if outcome.stray_bytes:
        print(f"anvil: rehost: {outcome.stray_bytes} bytes from a process whose stream is unknown were dropped",
              file=sys.stderr)
    if summary is not None and not summary.complete:
        why = summary.error or "the program ended without its end record (killed, exited without exit(), or " \
            "became another program by an exec the rewrite did not see)"
        print(f"anvil: rehost: results are incomplete: {why}", file=sys.stderr)
        return False
    return summary is not None


def _token(args: argparse.Namespace) -> str:
    """The ReHost shared token: --token, else $ANVIL_REHOST_TOKEN, else none."""
    return args.token or os.environ.get("ANVIL_REHOST_TOKEN", "")


def cmd_rehost_server(args: argparse.Namespace) -> int:
    import signal
    import threading

    from rehost.server import Library, start_server

    library = Library(args.lib)
    tls = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            raise AnvilError("--tls-cert and --tls-key go together")
        certificate = _tls_pem("--tls-cert", args.tls_cert)
        tls = (_tls_pem("--tls-key", args.tls_key, certificate=args.tls_cert), certificate)
    token = _token(args)
    server, port = start_server(library, args.listen, token, args.workers, tls)
    host = args.listen.rsplit(":", 1)[0]
    print(f"anvil rehost-server: serving {library.name} on {host}:{port}"
          f"{' (TLS)' if tls else ''}{' (token required)' if token else ''}", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop(1)
    return 0


def _tls_pem(option: str, path: str, certificate: str | None = None) -> bytes:
    """The PEM file ``path`` that ``option`` names, checked the way OpenSSL will use it: a
    certificate (``--tls-ca``, ``--tls-cert``) or, with ``certificate``, the private key
    that goes with that certificate. gRPC's C core takes bad PEM without complaint, then
    writes its own lines on stderr and fails without a reason (the server: an exception
    from add_secure_port; a client: every connection), so it is checked here first."""
    import ssl

    try:
        with open(path, "rb") as f:
            pem = f.read()
        if certificate is None:
            ssl.create_default_context(cadata=pem.decode("ascii"))
        else:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(certificate, path)
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as e:  # SSLError first: it is an OSError
        what = "the PEM private key of --tls-cert's certificate" if certificate else "a PEM certificate"
        raise AnvilError(f"{option} {path}: not {what} ({getattr(e, 'reason', None) or one_line(str(e))})") \
            from None
    except OSError as e:
        raise AnvilError(f"{option} {path}: {e.strerror}") from None
    return pem


def _check_not_a_rehost_copy(binary: str) -> None:
    """AnvilError if ``binary`` is a ReHost copy (its runtime's mark), which was not run as
    one: its site table is not beside it, and its records would go nowhere."""
    from .emit.rehost import REHOST_MARK, SITE_TABLE_SUFFIX

    try:
        with open(binary, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            marked = data.find(REHOST_MARK) >= 0
    except (OSError, ValueError):  # (an empty file cannot be mapped; the run says what it is)
        return
    if marked:
        raise AnvilError(f"{binary} is a ReHost copy, but its site table {binary}{SITE_TABLE_SUFFIX} is missing "
                         "(anvil instrument --mode rehost writes it beside the copy: keep them together)")


def _is_rehost(binary: str, meta: dict | None) -> bool:
    """Whether ``binary`` is a ReHost copy: as its report says (a site table beside an InHost
    copy is an earlier ReHost copy's of the same name), else as a site table beside it says."""
    from .emit.rehost import SITE_TABLE_SUFFIX

    if meta is not None and meta.get("mode") in ("rehost", "inhost"):
        return meta["mode"] == "rehost"
    return os.path.exists(binary + SITE_TABLE_SUFFIX)


def _metadata(binary: str) -> dict | None:
    """The report ``anvil instrument`` wrote beside ``binary`` (None if there is none);
    AnvilError if it is not one (damaged, or another file in its place)."""
    path = binary + ".anvil.json"
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as f:
            meta = json.loads(f.read())
    except OSError as e:
        raise AnvilError(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:  # not JSON, or not text
        raise AnvilError(f"{path}: not an Anvil report ({one_line(str(e))}): instrument the program again") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("results_file", ""), str) \
            or not isinstance(meta.get("mode", ""), str):
        raise AnvilError(f"{path}: not an Anvil report: instrument the program again")
    return meta


def cmd_tools(args: argparse.Namespace) -> int:
    from .passes import TOOLS
    from .tool_files import load_tool

    tools = [load_tool(spec) for spec in args.tool] if args.tool else [TOOLS[name]() for name in sorted(TOOLS)]
    for tool in tools:
        print(f"{tool.name}: {tool.description}")
        for opt in tool.options:
            print(f"    {opt.name}={opt.default}  {opt.help}")
        if tool.analysis_sources is not None:
            print(f"    analysis: {', '.join(map(str, tool.analysis_sources))}")
    print("\ncommon: --out FILE, --format text|json, --only GLOB, --skip GLOB; "
          "your own tool: --tool ./mytool.py (README: Writing a tool)")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from .ir.elf_loader import load_binary

    binary = load_binary(args.binary)
    procs = binary.select(args.proc or None, None)
    if args.proc and not procs:
        raise AnvilError(f"no procedure matches {' '.join(args.proc)}")
    kind = "PIE" if binary.is_pie else "fixed-address"
    link = "dynamic" if binary.is_dynamic else "static"
    if binary.is_firmware:
        kind, link = "Cortex-M firmware", "DSP" if binary.dsp else "no DSP"
    unwinds = ", unwinds its stack" if binary.unwinds and not binary.is_firmware else ""
    machine = "x86-64" if binary.machine == "x86-64" else "ARM"
    print(f"{binary.path}: {machine} ELF, {kind}, {link}, entry {binary.entry:#x}, "
          f"{len(binary.procedures)} procedures, {binary.instruction_count()} instructions{unwinds}")
    for proc in procs:
        mode = "x86-64" if binary.machine == "x86-64" else "T32" if proc.thumb else "A32"
        print(f"\nprocedure {proc.name} @ {proc.address:#x} size {proc.size} {mode}, {len(proc.blocks)} blocks")
        for note in proc.notes:
            print(f"  note: {note}")
        if not args.proc:
            continue
        for block in proc.blocks:
            entered = " (the unwinder enters here)" if block.address in binary.unwinder_entries else ""
            print(f"  block {block.index} @ {block.address:#x}: {block.size} instructions{entered}")
            for ins in block.instructions:
                flags = _flags(ins)
                where = ins.line
                line = f"  ; {where}" if where else ""
                print(f"    {ins.address:#010x}  {ins.mnemonic:<8} {ins.op_str:<32} {flags}{line}")
    if binary.source_lines_problem:
        print(f"\nnote: no source lines: {binary.source_lines_problem}")
    return 0


def _flags(ins) -> str:
    names = []
    if ins.is_load:
        names.append("load")
    if ins.is_store:
        names.append("store")
    if ins.accesses:
        names.append("size=" + "+".join(str(s) for s in ins.access_sizes))
    for attr in ("is_call", "is_return", "is_branch", "is_conditional", "is_pc_relative", "is_indirect"):
        if getattr(ins, attr) and not (attr == "is_branch" and (ins.is_call or ins.is_return)):
            names.append(attr[3:])
    if ins.branch_target is not None:
        names.append(f"target={ins.branch_target:#x}")
    return "[" + ",".join(names) + "]" if names else ""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line, as Anvil's other errors are:
    the problem and where the usage is, exit status 2 (argparse prints its whole usage)."""

    def error(self, message: str) -> NoReturn:
        # "argument --jobs: --jobs '0': ...": an option's own check names it already.
        named, _, problem = message.partition(": ")
        if named.startswith("argument ") and any(problem.startswith(name + " ")
                                                 for name in named[len("argument "):].split("/")):
            message = problem
        message = message.replace("\n", "\\n")  # a value with a line break: still one line
        self.exit(2, f"anvil: error: {message} (see '{self.prog} --help')\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """As argparse's, but Anvil's options may also follow ``run``'s BINARY (``anvil run app.rh
        --server H:P``) and the program's arguments are the other words after it plus all
        after ``--``; an unrecognized argument is blamed on the command it was given to."""
        argv = list(sys.argv[1:] if args is None else args)
        cut = argv.index("--") if "--" in argv else None
        words, after = (argv, []) if cut is None else (argv[:cut], argv[cut + 1:])
        parsed, extra = self.parse_known_args(words, namespace)
        program_args = getattr(parsed, "args", None)
        if program_args is not None and not any(word.startswith("-") for word in extra):
            parsed.args = [*program_args, *extra, *after]
            return parsed
        if not extra and cut is None:
            return parsed
        command = getattr(parsed, "command", None)
        prog = f"{self.prog} {command}" if command else self.prog
        hint = "; a program's own options go after '--'" if program_args is not None else ""
        self.exit(2, f"anvil: error: unrecognized arguments: {' '.join(extra or ['--', *after])}{hint} "
                     f"(see '{prog} --help')\n")


def _option(parse: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """An argparse ``type`` from ``parse``, a function that raises AnvilError (or ValueError)
    on a bad value: every option's value is checked as the command line is read, before any
    work, and a bad one is argparse's one-line usage error (status 2) naming the option.
    ``name`` is what argparse calls the type in its own messages."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except AnvilError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = name
    return convert


def _path(text: str) -> str:
    """A file or directory name: not empty, no NUL byte (which no system call takes)."""
    if not text or "\0" in text:
        raise AnvilError(f"{text!r} is not a file name")
    return text


def _address(text: str) -> str:
    """HOST:PORT, the port 0-65535 (``--listen``, ``--server``)."""
    from rehost.bridge import split_address

    split_address(text)
    return text


def _seconds(text: str, option: str) -> float:
    """A time in seconds: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise AnvilError(f"{option} {text} must be more than 0 seconds (a finite number)")
    return value


# The longest name and path component Linux takes (PATH_MAX less its NUL, NAME_MAX).
MAX_PATH, MAX_NAME = 4095, 255


def _results_name(text: str) -> str:
    """``instrument --out``: the results file the program will open, so a name it can open
    (checked here: the program would find out only at its end, with its results lost)."""
    _path(text)
    if len(os.fsencode(text)) > MAX_PATH or any(len(os.fsencode(part)) > MAX_NAME for part in text.split("/")):
        raise AnvilError(f"--out: a name of {len(text)} characters is longer than a file name can be")
    return text


MAX_WORKERS = 1024  # sessions a rehost-server serves at once: a thread each


def _workers(text: str) -> int:
    """``--workers N``: 1 to MAX_WORKERS."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_WORKERS:
        raise AnvilError(f"--workers {text}: a server needs at least one worker, at most {MAX_WORKERS}")
    return int(text)


def _byte(text: str) -> int:
    """A byte value in C syntax (``--fill``)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise AnvilError(f"--fill '{text}' is not a number") from None
    if not 0 <= value <= 0xFF:
        raise AnvilError(f"--fill {value:#x} is not a byte value")
    return value


def _ring_size(text: str) -> int:
    from .emit.rehost import parse_ring_size

    return parse_ring_size(text)


PATH = _option(_path, "file name")
ADDRESS = _option(_address, "HOST:PORT")


def _seconds_of(option: str) -> Callable[[str], float]:
    return _option(functools.partial(_seconds, option=option), "seconds")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="anvil",
        description="Static binary instrumentation for 32-bit ARM and x86-64 Linux ELF programs and Cortex-M "
                    "firmware.",
        epilog="Example: anvil instrument --tool inscount app.elf -o app.inst && anvil run app.inst")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("instrument", help="write an instrumented copy of a binary",
                       description="Rewrite BINARY with TOOL's instrumentation (InHost: analysis linked in).")
    p.add_argument("binary")
    p.add_argument("-t", "--tool", required=True, type=PATH,
                   help="tool name (see 'anvil tools') or your tool file (./mytool.py, C in ./mytool.c)")
    p.add_argument("-o", "--output", type=PATH, help="instrumented binary (default BINARY.inst)")
    p.add_argument("--opt", action="append", default=[], metavar="NAME=VALUE[,...]", help="tool options")
    p.add_argument("--mode", default="inhost", choices=["inhost", "rehost"], help="where the analysis runs")
    p.add_argument("--out", type=_option(_results_name, "file name"),
                   help="results file written by the instrumented program "
                                 "(default <output name>.<tool>.out in its working directory)")
    p.add_argument("--format", default="text", choices=["text", "json"], help="results format")
    p.add_argument("--only", action="append", default=[], metavar="GLOB", help="instrument only these procedures")
    p.add_argument("--skip", action="append", default=[], metavar="GLOB", help="do not instrument these procedures")
    p.add_argument("--flash-region", metavar="START:SIZE",
                   type=_option(functools.partial(parse_region, what="flash"), "region"),
                   help="firmware: where the instrumented code may go (default: the board's flash after the image)")
    p.add_argument("--ram-region", metavar="START:SIZE",
                   type=_option(functools.partial(parse_region, what="ram"), "region"),
                   help="firmware: where the instrumentation data may go (default: between the heap's start "
                        "and the stack, from the image's symbols)")
    p.add_argument("--board", type=_option(lambda name: board(name).name, "board"),
                   help="firmware: place the instrumentation from this board's memory map (default: "
                                   "the known board the image fits best; 'anvil run --help' lists them)")
    p.add_argument("--transport", choices=["semihosting", "uart"],
                   help="firmware ReHost: how records leave the board: semihosting (default; a host file "
                        "the debugger or QEMU writes) or uart (the board's UART at --uart-base, which "
                        "'anvil run --board' connects to its bridge; docs/boards.md)")
    p.add_argument("--uart-base", metavar="ADDR", type=_option(parse_uart_base, "address"),
                   help=f"firmware ReHost over --transport uart: MMIO base of the CMSDK APB UART to send "
                        f"records through (default: the board's UART0, {DEFAULT_UART_BASE:#x} on MPS2)")
    p.add_argument("--ring-size", metavar="BYTES", type=_option(_ring_size, "size"),
                   help="ReHost: records kept in the program's memory between sends (default 16k on boards, "
                        "256k on Linux; e.g. 1k for a board with little RAM: more, smaller sends)")
    p.add_argument("--return-addresses", default="auto", choices=["auto", "original", "relocated"],
                   help="what calls leave in LR: the original return address (unwinders, C++ exceptions and "
                        "__builtin_return_address see original code; each return takes one more jump) or the "
                        "relocated one (faster); auto: original when the program throws C++ exceptions")
    p.add_argument("-j", "--jobs", metavar="N",
                   type=_option(lambda text: parse_jobs(text, f"--jobs {text!r}"), "number"),
                   help="processes to rewrite with (default: 2 where two cores are usable, or "
                        f"${JOBS_VARIABLE}); the output is the same whatever N is")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="progress messages, and the traceback of an internal error")
    p.set_defaults(func=cmd_instrument)

    p = sub.add_parser("run", help="run a (instrumented) binary: natively (x86-64), under qemu-arm or on a board",
                       description="Run BINARY (an ARM program under qemu-arm, an x86-64 one natively, firmware "
                                   "on --board), "
                                   "passing arguments, stdin and exit status through: "
                                   "anvil run [OPTIONS] BINARY [OPTIONS] [ARGS] [-- ARGS]. Results files an "
                                   "earlier run left are removed as the program starts; a run that writes "
                                   "none says so on stderr and still exits with the program's status.")
    p.add_argument("binary")
    p.add_argument("args", nargs="*", help="program arguments (those starting with '-' after --)")
    p.add_argument("--argv0", help="argv[0] seen by the program")
    p.add_argument("--sysroot", metavar="DIR", type=PATH,
                   help="where qemu-arm finds the program's dynamic loader and libraries (its -L): an unpacked "
                        f"root file system (default $QEMU_LD_PREFIX, else the cross root of the loader the "
                        f"program names: {QEMU_LIB_ROOT}, or {CROSS_ROOTS['ld-linux.so.3']} for armel's)")
    p.add_argument("--board", type=_option(lambda name: board(name).name, "board"),
                   help=f"run a firmware image on qemu-system-arm's model of this board "
                                   f"({', '.join(sorted(BOARDS))}); console and exit through semihosting")
    p.add_argument("--icount", metavar="SHIFT", type=_option(parse_icount, "shift"),
                   help="with --board: QEMU's virtual clock advances 2**SHIFT ns per instruction (0-10) instead "
                        "of with the host's, so timer interrupts fall on the same instructions in every run")
    _results_options(p)
    _server_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("image", help="write a firmware image as raw binary or Intel HEX for a flasher",
                       description="Write the loaded bytes of the ELF image BINARY (each PT_LOAD at its load "
                                   "address) as a raw binary (from the lowest address, gaps filled) or Intel "
                                   "HEX (with its addresses), the forms pyOCD and OpenOCD take.")
    p.add_argument("binary")
    p.add_argument("--format", default="bin", choices=["bin", "hex"], help="raw binary or Intel HEX (default bin)")
    p.add_argument("-o", "--output", type=PATH, help="output file (default BINARY.bin / BINARY.hex)")
    p.add_argument("--fill", type=_option(_byte, "byte"), default=0xFF, metavar="BYTE",
                   help="bin: value of gap bytes (default 0xff, erased flash)")
    p.add_argument("-v", "--verbose", action="store_true", help="the traceback of an internal error")
    p.set_defaults(func=cmd_image)

    p = sub.add_parser("rehost-listen", help="analyse a ReHost program run elsewhere (TCP, or a records "
                                             "file, pipe or serial port)",
                       description="Wait for one run of the ReHost binary BINARY, started elsewhere with "
                                   "ANVIL_REHOST_CONNECT=ADDRESS:PORT in its environment (another machine, "
                                   "a board, a container), forward its records to a rehost-server (or a local "
                                   "one) and write its results here; children it forks connect on their own "
                                   "and get results files of their own (FILE.PID). With --from, read the records of a "
                                   "firmware image instead: the file its semihosting channel wrote under a "
                                   "debugger, a named pipe, or the serial port its UART is wired to. Exit "
                                   "status 0 when the results are complete.")
    p.add_argument("binary", help="the ReHost binary (its site table BINARY.sites.json is read)")
    p.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT", type=ADDRESS,
                   help="where the program connects (default 127.0.0.1 and a free port, printed; "
                        "0.0.0.0:PORT for other machines)")
    p.add_argument("--timeout", type=_seconds_of("--timeout"), metavar="SECONDS",
                   help="give up if no program connects in time")
    p.add_argument("--from", dest="records", metavar="PATH", type=PATH,
                   help="read the records from a file, named pipe or serial device instead of TCP "
                        "(e.g. fw.rh.records written by OpenOCD/pyOCD semihosting, or /dev/ttyACM0)")
    p.add_argument("--idle", type=_seconds_of("--idle"), default=2.0, metavar="SECONDS",
                   help="--from a serial device: the run is over after this long without a byte (default 2)")
    _results_options(p)
    _server_options(p)
    p.set_defaults(func=cmd_rehost_listen)

    p = sub.add_parser("rehost-server", help="serve ReHost sessions: run analyses on records from programs",
                       description="Receive ReHost records over gRPC and run the analysis on the host: "
                                   "one session per instrumented program, many at once.")
    p.add_argument("--lib", type=PATH,
                   help="analysis: a tool name (its C built for the host), path.so, path.c or path.py "
                                 "(default: the tool each binary was instrumented with)")
    p.add_argument("--listen", default="127.0.0.1:50051", metavar="HOST:PORT", type=ADDRESS,
                   help="address to bind (default 127.0.0.1:50051, loopback only; port 0 picks one)")
    p.add_argument("--token", help="require this shared token from clients (or $ANVIL_REHOST_TOKEN)")
    p.add_argument("--tls-cert", metavar="PEM", type=PATH, help="serve TLS with this certificate chain")
    p.add_argument("--tls-key", metavar="PEM", type=PATH, help="... and this private key")
    p.add_argument("--workers", type=_option(_workers, "number"), default=8,
                   help=f"sessions served at once (default 8, at most {MAX_WORKERS})")
    p.set_defaults(func=cmd_rehost_server)

    p = sub.add_parser("inspect", help="show procedures, blocks and instructions",
                       description="Print the IR of BINARY; with --proc, blocks and instructions with flags.")
    p.add_argument("binary")
    p.add_argument("--proc", action="append", default=[], metavar="GLOB", help="procedures to show in full")
    p.add_argument("-v", "--verbose", action="store_true", help="the traceback of an internal error")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("tools", help="list the tools and their options",
                       description="List the tools that ship (or the tool files named) with their options.")
    p.add_argument("tool", nargs="*", help="tool files (./mytool.py) to describe instead")
    p.set_defaults(func=cmd_tools)
    return parser


def _results_options(p: argparse.ArgumentParser) -> None:
    """Where the tool's results end up (see run_results.ResultsFiles): --out, --quiet."""
    p.add_argument("--out", type=PATH, help="move the tool's results file here afterwards (what an earlier run left "
                                 "here is removed as the program starts)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no note about where results went (missing results are still reported)")


def _server_options(p: argparse.ArgumentParser) -> None:
    """Where ReHost records go: --server (or a local server with --lib), --token, --tls-ca."""
    p.add_argument("--server", metavar="HOST:PORT", type=ADDRESS, help="ReHost: the rehost-server to send records to "
                                                           "(default: none, the analysis runs in this process)")
    p.add_argument("--lib", type=PATH, help="ReHost without --server: the analysis library "
                                 "(tool name, .so, .c or .py; default: the binary's tool)")
    p.add_argument("--token", help="ReHost: shared token the server asks for (or $ANVIL_REHOST_TOKEN)")
    p.add_argument("--tls-ca", metavar="PEM", type=PATH, help="ReHost: connect with TLS, trusting this certificate")


# Commands whose BINARY is read (rehost-listen reads only the site table beside it).
_READS_BINARY = ("instrument", "run", "inspect", "image")
# What an OSError without a file name says of the machine, not of Anvil: a full disk, a
# quota, a read-only file system, an I/O error, no memory or descriptors left.
_MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.ENOMEM, errno.EMFILE,
                             errno.ENFILE, errno.EFBIG, errno.EACCES, errno.EPERM})


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwound like Ctrl-C's KeyboardInterrupt, so that what the
    command was writing is removed (_removed_on_error, atomic_write) before it ends."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # An ignored signal stays ignored (`nohup anvil run`): what `anvil run` starts inherits it.
    previous = {signum: handler for signum in (signal.SIGTERM, signal.SIGHUP)
                if (handler := signal.getsignal(signum)) != signal.SIG_IGN}
    if threading.current_thread() is threading.main_thread():
        for signum in previous:
            signal.signal(signum, _terminate)
    try:
        if args.command in _READS_BINARY:
            _check_readable(args.binary)
        return args.func(args)
    except AnvilError as e:
        _say(f"anvil: error: {e}")
        return 2
    except KeyboardInterrupt:
        _say("anvil: interrupted")
        return 130
    except Terminated as e:
        _say(f"anvil: stopped by {signal.Signals(e.signum).name}")
        return -e.signum  # console() ends by the signal, as the shell expects of a killed command
    except BrokenPipeError:  # `anvil inspect ... | head`: the reader has what it wanted
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
    except OSError as e:
        if e.strerror is None or (e.filename is None and e.errno not in _MACHINE_ERRNOS):
            return _unexpected(args, e)
        # The machine's, not Anvil's: a file that cannot be read or written, a full disk.
        _say(f"anvil: error: {e.filename}: {e.strerror}" if e.filename is not None else f"anvil: error: {e.strerror}")
        return 2
    except Exception as e:  # any other: a parser's complaint about the input, or a bug (decision 0036)
        return _unexpected(args, e)
    finally:
        if threading.current_thread() is threading.main_thread():
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _say(line: str) -> None:
    """``line`` on stderr as one line: a file name or a message from elsewhere (a tool
    file, a compiler) may hold line breaks, which would make it several."""
    print(line.replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)


def _unexpected(args: argparse.Namespace, error: Exception) -> int:
    """Report an exception that is not an AnvilError in one line: one a parser raised about
    the input file is bad input (status 2); any other is a bug in Anvil, said as such, its
    traceback shown with -v (status 70, so that scripts and the fuzzer tell the two apart)."""
    binary = getattr(args, "binary", None)
    if is_parser_error(error):
        problem = malformed(binary, error) if binary else one_line(f"malformed input ({error})")
        _say(f"anvil: error: {problem}")
        return 2
    verbose = getattr(args, "verbose", None)
    if verbose:
        traceback.print_exc()
    hint = "; -v shows the traceback" if verbose is False else ""
    what = ": ".join(filter(None, (type(error).__name__, one_line(str(error)))))
    _say(f"anvil: error: internal error: {what} (a bug in Anvil{hint})")
    return INTERNAL_ERROR_STATUS


def console() -> None:
    """The ``anvil`` command: main(); after ``instrument``, an exit that leaves freeing the IR
    to the kernel (nothing else is pending then: the output, its report and the analysis
    build's thread are done), unless a profiler or tracer waits for the exit."""
    global _from_console
    _from_console = True
    status = main()
    if status < 0:  # `anvil run`: the program was killed by signal -status
        _die_as_the_program(-status)
    if not _exit_at_once or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)  # a profiler or coverage tool writes its data at exit
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def _die_as_the_program(signum: int) -> None:
    """End by ``signum`` as the program run did, so a shell or a test harness sees the same
    status as for qemu-arm alone (134 for SIGABRT, not 250 = -6 & 0xff); 128 + signum
    where the signal does not end this process."""
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set: it is SIG_DFL already
        signal.signal(signum, signal.SIG_DFL)
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a core file would be Python's, not the program's
        os.kill(os.getpid(), signum)
    os._exit(128 + signum)


if __name__ == "__main__":
    console()
