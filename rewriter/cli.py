"""The ``anvil`` command line: instrument, run, inspect, tools."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from . import progress
from .api import Options
from .boards import BOARDS, DEFAULT_UART_BASE, Board, board, parse_icount, parse_region, parse_uart_base
from .errors import INTERNAL_ERROR_STATUS, AnvilError, is_parser_error, malformed, one_line
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
            pairs[key.strip()] = value.strip()
    return pairs


def cmd_instrument(args: argparse.Namespace) -> int:
    from .emit import inhost, rehost
    from .ir.elf_loader import load_binary
    from .tool_files import load_tool

    tool = load_tool(args.tool)
    values = tool.parse_options(_parse_opts(args.opt))
    output = args.output or args.binary + ".inst"
    _check_writable(output)
    out_file = args.out or f"{os.path.basename(output)}.{tool.name}.out"
    if args.mode != "rehost" and (args.transport or args.uart_base is not None or args.ring_size is not None):
        raise AnvilError("--transport, --uart-base and --ring-size are for --mode rehost")
    opts = Options(values=values, only=args.only, skip=args.skip, out=out_file, format=args.format,
                   flash_region=args.flash_region and parse_region(args.flash_region, "flash"),
                   ram_region=args.ram_region and parse_region(args.ram_region, "ram"), transport=args.transport,
                   uart_base=None if args.uart_base is None else parse_uart_base(args.uart_base),
                   ring_size=None if args.ring_size is None else rehost.parse_ring_size(args.ring_size),
                   return_addresses=args.return_addresses, board=args.board and board(args.board).name)
    jobs = jobs_allowed() if args.jobs is None else parse_jobs(args.jobs, f"--jobs {args.jobs!r}")  # errors first
    _progress(args, f"loading {args.binary}")
    started = time.monotonic()
    report_path = output + ".anvil.json"
    with _removed_on_error(output, output + rehost.SITE_TABLE_SUFFIX, report_path):
        with progress.shown(sys.stderr.isatty()):  # a bar on a terminal only, never in captured output
            binary = load_binary(args.binary)
            if args.board and not binary.is_firmware:
                raise AnvilError(f"--board is for Cortex-M images: {args.binary} is a Linux program")
            _progress(args, f"{len(binary.procedures)} procedures, {binary.instruction_count()} instructions; "
                            "instrumenting")
            emitter = rehost if args.mode == "rehost" else inhost
            with jobs_limit(jobs):
                report = emitter.instrument(binary, tool, opts, output)
        report.rewrite_seconds = time.monotonic() - started  # loading and decoding included
        inhost.atomic_write(report_path, _report_json(args, tool.name, output, out_file, report), mode=0o644)
    print(f"anvil: wrote {output}: {report.summary()}; report in {report_path}", file=sys.stderr)
    global _exit_at_once
    _exit_at_once = True
    if _from_console:  # the process ends at once: freeing the IR here would be wasted
        _held.append(binary)
    return 0


def _check_writable(path: str) -> None:
    """AnvilError before any work if ``path`` cannot be written (its directory missing or
    read-only; a directory in its place)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise AnvilError(f"cannot write {path}: no directory {directory}")
    if os.path.isdir(path):
        raise AnvilError(f"cannot write {path}: it is a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise AnvilError(f"cannot write {path}: {directory} is not writable")


def _report_json(args: argparse.Namespace, tool: str, output: str, out_file: str, report: Any) -> bytes:
    """What ``<output>.anvil.json`` says: the rewrite's inputs and the emitter's report."""
    return json.dumps({
        "input": os.path.abspath(args.binary), "output": os.path.abspath(output), "tool": tool,
        "mode": args.mode,
        "results_file": out_file, "format": args.format,
        "procedures": report.procedures, "instrumented": report.relocated,
        "instructions": report.instructions, "rewrite_seconds": round(report.rewrite_seconds, 3),
        # This process's largest resident set so far, in MB (the compiler's is apart).
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "not_instrumented": report.not_relocated, "entries_not_patched": report.entries_not_patched,
        "undecodable": report.undecodable,
        "entries_run_in_place": report.entries_run_in_place,
        "original_size": report.original_size, "output_size": report.output_size,
        "block_counters": report.block_counters, "deferred_sites": report.deferred_sites,
        "filter_hits_in_registers": report.filter_hits_in_registers,
        "return_addresses": report.return_addresses, "return_sites": report.return_sites,
        "relocation_processes": report.relocation_processes, "loader_stub": report.loader_stub,
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
    meta = _metadata(binary)
    results = ResultsFiles([meta["results_file"]] if meta and meta.get("results_file") else [], args.out)
    # Each way of running clears what an earlier run left just before the program starts
    # (not when an error stops the run first), so that afterwards a results file that
    # exists is this run's (decision 0037).
    returncode, said = _run_on_board(args, results.clear) if args.board else _run_on_linux(args, results.clear)
    results.report(args.quiet, None if said else why_missing(returncode))
    return returncode


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
    if _check_elf(binary) == EM_X86_64:
        return _run_natively(args, before_start)
    qemu = shutil.which("qemu-arm")
    if qemu is None:
        raise AnvilError("qemu-arm not found: run scripts/bootstrap.sh")
    meta = _metadata(binary)
    cmd = [qemu, "-L", _sysroot(args)]
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
    if (meta or {}).get("mode") == "rehost" or os.path.exists(binary + SITE_TABLE_SUFFIX):
        from rehost import bridge

        def start(channel: Any, table: Any, document: bytes, program: str, token: str) -> Any:
            return bridge.run(cmd, channel, table.tool, document, program, token, executable=executable)

        return _run_rehost(args, binary + SITE_TABLE_SUFFIX, start, before_start)
    if args.server or args.lib:
        raise AnvilError(f"{binary} is not a ReHost binary: --server and --lib need --mode rehost")
    from rehost import PROGRAM_ENVIRONMENT  # (the user's, as ReHost's programs get it)

    before_start()
    return subprocess.run(cmd, executable=executable, env=PROGRAM_ENVIRONMENT).returncode, False


def _run_natively(args: argparse.Namespace, before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run an x86-64 program on this machine, as it is (InHost: its results are its own;
    ReHost: its records go to the server, as under qemu-arm)."""
    binary = args.binary
    if platform.machine() not in ("x86_64", "AMD64"):
        raise AnvilError(f"{binary}: an x86-64 program, and this machine is {platform.machine()}")
    if args.sysroot is not None:
        raise AnvilError("--sysroot is for 32-bit ARM programs run under qemu-arm; an x86-64 program runs natively")
    return _run_command(args, [args.argv0 or binary, *args.args], os.path.abspath(binary), _metadata(binary),
                        before_start)


def _check_elf(binary: str) -> int:
    """The machine (e_machine) of ``binary``; AnvilError unless it is an ELF executable whose
    program headers and loaded segments are all in the file: what a loader needs to run it.
    qemu-arm says nothing of a text file or of a file cut inside its ELF header (exit status
    1), and dies of SIGBUS itself on a segment cut short (the mapping past the end of the
    file), which ``anvil run`` would pass on as the program's death."""
    try:
        with open(binary, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AnvilError(f"cannot read {binary}: {e.strerror}") from None
    check_elf(binary, data, sections=False)
    return int.from_bytes(data[18:20], "little")


def _run_on_board(args: argparse.Namespace, before_start: Callable[[], None]) -> tuple[int, bool]:
    """Run a firmware image on QEMU's model of --board; its semihosting console is ours.

    A ReHost image writes its records through semihosting to ``<image>.records`` in the
    working directory (made a named pipe here, read by the bridge) or to a UART (which QEMU
    writes to another named pipe), as its site table says. Returns as _run_on_linux.
    """
    from .emit.rehost import SITE_TABLE_SUFFIX

    target = board(args.board)
    icount = None if args.icount is None else parse_icount(args.icount)
    if _check_elf(args.binary) == EM_X86_64:
        raise AnvilError(f"{args.binary}: an x86-64 program, not a firmware image for --board")
    if args.args:
        raise AnvilError("a firmware image takes no program arguments")
    rehost = os.path.exists(args.binary + SITE_TABLE_SUFFIX)
    if not rehost and (args.server or args.lib):
        raise AnvilError(f"{args.binary} is not a ReHost image: --server and --lib need --mode rehost")
    if shutil.which("qemu-system-arm") is None:
        raise AnvilError("qemu-system-arm not found: run scripts/bootstrap.sh")
    if not rehost:
        before_start()
        return subprocess.run(target.qemu_command(args.binary, icount=icount)).returncode, False
    return _run_rehost(args, args.binary + SITE_TABLE_SUFFIX,
                       functools.partial(_start_on_board, target, args.binary, icount), before_start)


def _start_on_board(target: Board, image: str, icount: int | None, channel: Any, table: Any, document: bytes,
                    program: str, token: str) -> Any:
    """Run the ReHost ``image`` on QEMU, its records forwarded from the channel its site table names."""
    from rehost import bridge

    from .emit.rehost import channel_path

    link = table.channel  # None in site tables older than the UART transport: semihosting
    if link is not None and link.transport == "uart":
        target.check_transport(link.transport)
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
    from .emit.inhost import atomic_write
    from .image import load_chunks, to_bin, to_ihex

    if not 0 <= args.fill <= 0xFF:  # whatever the format, as every other option is checked
        raise AnvilError(f"--fill {args.fill:#x} is not a byte value")
    entry, chunks = load_chunks(args.binary)
    if args.format == "bin":
        start, data = to_bin(chunks, args.fill)
        note = f"load at {start:#010x}, {len(data)} bytes"
    else:
        data = to_ihex((entry, chunks))
        note = f"{sum(len(c) for _, c in chunks)} bytes in {len(chunks)} range(s)"
    output = args.output or f"{args.binary}.{args.format}"
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

    if args.records is None:
        bridge.split_address(args.listen)
    elif args.idle <= 0:
        raise AnvilError(f"--idle {args.idle:g} must be more than 0 seconds")
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
        if why:
            print(f"anvil: rehost: forked child {pid}: {why}; no results written for it", file=sys.stderr)
    if outcome.stray_bytes:
        print(f"anvil: rehost: {outcome.stray_bytes} bytes from a process whose stream is unknown were dropped",
              file=sys.stderr)
    if summary is not None and not summary.complete:
        why = summary.error or "the program ended without its end record (killed, or exited without exit())"
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


def _metadata(binary: str) -> dict | None:
    path = binary + ".anvil.json"
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="anvil", description="Static binary instrumentation for ARM Linux ELF binaries and Cortex-M firmware.",
        epilog="Example: anvil instrument --tool inscount app.elf -o app.inst && anvil run app.inst")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("instrument", help="write an instrumented copy of a binary",
                       description="Rewrite BINARY with TOOL's instrumentation (InHost: analysis linked in).")
    p.add_argument("binary")
    p.add_argument("-t", "--tool", required=True,
                   help="tool name (see 'anvil tools') or your tool file (./mytool.py, C in ./mytool.c)")
    p.add_argument("-o", "--output", help="instrumented binary (default BINARY.inst)")
    p.add_argument("--opt", action="append", default=[], metavar="NAME=VALUE[,...]", help="tool options")
    p.add_argument("--mode", default="inhost", choices=["inhost", "rehost"], help="where the analysis runs")
    p.add_argument("--out", help="results file written by the instrumented program "
                                 "(default <output name>.<tool>.out in its working directory)")
    p.add_argument("--format", default="text", choices=["text", "json"], help="results format")
    p.add_argument("--only", action="append", default=[], metavar="GLOB", help="instrument only these procedures")
    p.add_argument("--skip", action="append", default=[], metavar="GLOB", help="do not instrument these procedures")
    p.add_argument("--flash-region", metavar="START:SIZE",
                   help="firmware: where the instrumented code may go (default: the board's flash after the image)")
    p.add_argument("--ram-region", metavar="START:SIZE",
                   help="firmware: where the instrumentation data may go (default: between the heap's start "
                        "and the stack, from the image's symbols)")
    p.add_argument("--board", help="firmware: place the instrumentation from this board's memory map (default: "
                                   "the known board the image fits best; 'anvil run --help' lists them)")
    p.add_argument("--transport", choices=["semihosting", "uart"],
                   help="firmware ReHost: how records leave the board: semihosting (default; a host file "
                        "the debugger or QEMU writes) or uart (the board's UART at --uart-base, which "
                        "'anvil run --board' connects to its bridge; docs/boards.md)")
    p.add_argument("--uart-base", metavar="ADDR",
                   help=f"firmware ReHost over --transport uart: MMIO base of the CMSDK APB UART to send "
                        f"records through (default: the board's UART0, {DEFAULT_UART_BASE:#x} on MPS2)")
    p.add_argument("--ring-size", metavar="BYTES",
                   help="ReHost: records kept in the program's memory between sends (default 16k on boards, "
                        "256k on Linux; e.g. 1k for a board with little RAM: more, smaller sends)")
    p.add_argument("--return-addresses", default="auto", choices=["auto", "original", "relocated"],
                   help="what calls leave in LR: the original return address (unwinders, C++ exceptions and "
                        "__builtin_return_address see original code; each return takes one more jump) or the "
                        "relocated one (faster); auto: original when the program throws C++ exceptions")
    p.add_argument("-j", "--jobs", metavar="N",
                   help="processes to rewrite with (default: 2 where two cores are usable, or "
                        f"${JOBS_VARIABLE}); the output is the same whatever N is")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="progress messages, and the traceback of an internal error")
    p.set_defaults(func=cmd_instrument)

    p = sub.add_parser("run", help="run a (instrumented) binary under qemu-arm",
                       description="Run BINARY under qemu-arm, passing arguments, stdin and exit status through: "
                                   "anvil run [OPTIONS] BINARY [OPTIONS] [ARGS] [-- ARGS]. Results files an "
                                   "earlier run left are removed as the program starts; a run that writes "
                                   "none says so on stderr and still exits with the program's status.")
    p.add_argument("binary")
    p.add_argument("args", nargs="*", help="program arguments (those starting with '-' after --)")
    p.add_argument("--argv0", help="argv[0] seen by the program")
    p.add_argument("--sysroot", metavar="DIR",
                   help="where qemu-arm finds the program's dynamic loader and libraries (its -L): an unpacked "
                        f"root file system (default $QEMU_LD_PREFIX, else the cross root of the loader the "
                        f"program names: {QEMU_LIB_ROOT}, or {CROSS_ROOTS['ld-linux.so.3']} for armel's)")
    p.add_argument("--board", help=f"run a firmware image on qemu-system-arm's model of this board "
                                   f"({', '.join(sorted(BOARDS))}); console and exit through semihosting")
    p.add_argument("--icount", metavar="SHIFT",
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
    p.add_argument("-o", "--output", help="output file (default BINARY.bin / BINARY.hex)")
    p.add_argument("--fill", type=lambda v: int(v, 0), default=0xFF, metavar="BYTE",
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
    p.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT",
                   help="where the program connects (default 127.0.0.1 and a free port, printed; "
                        "0.0.0.0:PORT for other machines)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up if no program connects in time")
    p.add_argument("--from", dest="records", metavar="PATH",
                   help="read the records from a file, named pipe or serial device instead of TCP "
                        "(e.g. fw.rh.records written by OpenOCD/pyOCD semihosting, or /dev/ttyACM0)")
    p.add_argument("--idle", type=float, default=2.0, metavar="SECONDS",
                   help="--from a serial device: the run is over after this long without a byte (default 2)")
    _results_options(p)
    _server_options(p)
    p.set_defaults(func=cmd_rehost_listen)

    p = sub.add_parser("rehost-server", help="serve ReHost sessions: run analyses on records from programs",
                       description="Receive ReHost records over gRPC and run the analysis on the host: "
                                   "one session per instrumented program, many at once.")
    p.add_argument("--lib", help="analysis: a tool name (its C built for the host), path.so, path.c or path.py "
                                 "(default: the tool each binary was instrumented with)")
    p.add_argument("--listen", default="127.0.0.1:50051", metavar="HOST:PORT",
                   help="address to bind (default 127.0.0.1:50051, loopback only; port 0 picks one)")
    p.add_argument("--token", help="require this shared token from clients (or $ANVIL_REHOST_TOKEN)")
    p.add_argument("--tls-cert", metavar="PEM", help="serve TLS with this certificate chain")
    p.add_argument("--tls-key", metavar="PEM", help="... and this private key")
    p.add_argument("--workers", type=int, default=8, help="sessions served at once (default 8)")
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
    p.add_argument("--out", help="move the tool's results file here afterwards (what an earlier run left "
                                 "here is removed as the program starts)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no note about where results went (missing results are still reported)")


def _server_options(p: argparse.ArgumentParser) -> None:
    """Where ReHost records go: --server (or a local server with --lib), --token, --tls-ca."""
    p.add_argument("--server", metavar="HOST:PORT", help="ReHost: the rehost-server to send records to "
                                                           "(default: none, the analysis runs in this process)")
    p.add_argument("--lib", help="ReHost without --server: the analysis library "
                                 "(tool name, .so, .c or .py; default: the binary's tool)")
    p.add_argument("--token", help="ReHost: shared token the server asks for (or $ANVIL_REHOST_TOKEN)")
    p.add_argument("--tls-ca", metavar="PEM", help="ReHost: connect with TLS, trusting this certificate")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except AnvilError as e:
        print(f"anvil: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `anvil inspect ... | head`: the reader has what it wanted
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
    except OSError as e:
        if e.filename is None or e.strerror is None:
            return _unexpected(args, e)
        # The machine's, not Anvil's: a file that cannot be read or written, a full disk.
        print(f"anvil: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except Exception as e:  # any other: a parser's complaint about the input, or a bug (decision 0036)
        return _unexpected(args, e)


def _unexpected(args: argparse.Namespace, error: Exception) -> int:
    """Report an exception that is not an AnvilError in one line: one a parser raised about
    the input file is bad input (status 2); any other is a bug in Anvil, said as such, its
    traceback shown with -v (status 70, so that scripts and the fuzzer tell the two apart)."""
    binary = getattr(args, "binary", None)
    if is_parser_error(error):
        problem = malformed(binary, error) if binary else one_line(f"malformed input ({error})")
        print(f"anvil: error: {problem}", file=sys.stderr)
        return 2
    verbose = getattr(args, "verbose", None)
    if verbose:
        traceback.print_exc()
    hint = "; -v shows the traceback" if verbose is False else ""
    what = ": ".join(filter(None, (type(error).__name__, one_line(str(error)))))
    print(f"anvil: error: internal error: {what} (a bug in Anvil{hint})", file=sys.stderr)
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
