"""QEMU oracle: count every guest instruction a program executes under ``qemu-arm``.

:func:`trace_pcs` runs::

    env -i qemu-arm -L <lib_root> -0 <argv0> -singlestep -d exec,nochain,page -D <log> <binary> <args>

and turns the log into a :class:`collections.Counter` of executed guest PCs.
The log is streamed through a FIFO and parsed while QEMU runs, so nothing
large is written to disk (a log costs about 65-100 bytes per executed
instruction: a million instructions make ~90 MB).

Unless the log itself is needed (``memory_ops``, ``keep_log``, ``trace_firmware``) or
``ANVIL_TRACE_ORACLE=log`` asks for it, the same counts come from a QEMU plugin of our own
instead (``pccount.c`` beside this file, decision 0155)::

    env -i qemu-arm -L <lib_root> -0 <argv0> -d nochain -plugin libpccount.so,out=<table> <binary> <args>

QEMU 7.2 writes its log with a write() per line and the log cost ten to a hundred times
the program's own run; the plugin adds one atomic add per executed instruction to a table
shared with its file, which this module reads when QEMU has exited. It counts what the log
counts: an instruction when it is entered (so one that faults, and again when it runs
after the handler), a forked child's instructions after the fork, every thread's, a process
that a signal kills or that calls exec (tests/test_trace_oracles.py and
scripts/trace_oracles_agree.py compare the two). The plugin is built on first use
(benchmarks/qemu_plugins.py: the header of the installed qemu's Debian source); when it
cannot be, or its table fills, the log serves.

Facts about the log, checked on Debian's qemu-arm 7.2 (``tests/test_oracles.py``
checks the ones that matter):

* With ``-d exec`` QEMU prints one line per *executed translation block*
  (TB), when the TB is entered::

      Trace 0: 0x7fc6f40005c0 [08800480/000100a2/00000000/00000201] _start

  i.e. ``Trace <cpu>: <host code ptr> [<cs_base>/<guest pc>/<tb flags>/<cflags>] <symbol>``.
  The trailing name is the enclosing ``STT_FUNC`` symbol when QEMU has one
  (static non-stripped binaries; empty for plain asm labels), so it is ignored.
  ``nochain`` disables direct TB chaining, without which chained TBs are not
  logged at all; ``-singlestep`` makes every TB exactly one guest instruction.
  So: one ``Trace`` line = one executed instruction.  (An instruction that
  faults and is re-executed after a guest signal handler is logged twice.)
* The guest PC is logged **without** the Thumb bit (bit 0 is always clear).
  In QEMU 7.2 the first bracketed field is ``cs_base``, which for AArch32
  holds the "flags2" TB flags: bit 23 is the Thumb state and bits 24-31 the
  IT-block state (``CONDEXEC``), e.g. ``00800480`` = Thumb, ``08800480`` =
  Thumb inside an IT block, ``00000480`` = ARM.  This layout is
  version-specific, so this module does not depend on it.
* An ``IT`` instruction is logged (counted) itself, and so is every
  predicated instruction whose condition fails, both IT-predicated Thumb
  instructions and conditional A32 instructions: the TB is entered, the
  instruction just has no effect.
* ``svc #0`` is logged like any other instruction (it ends its TB and the
  syscall is handled after the TB ran); so the final ``svc`` of ``exit`` is
  counted.
* ``-d page`` prints ``start_code``/``end_code`` (and ``entry``, ``start_data``,
  ...) for the main executable.  ``start_code`` is ``load_bias`` plus the lowest
  ``p_vaddr`` of the executable's ``PF_X`` ``PT_LOAD`` segments and ``end_code``
  is ``load_bias`` plus the highest ``p_vaddr + p_filesz`` of those segments.
  That is how :func:`trace_pcs` finds the load bias of a PIE (0 for ET_EXEC);
  ``entry`` is not usable for that since it is the interpreter's entry for
  dynamically linked programs.
* Start-up code (ld.so, libc init) executes a few dozen instructions more or
  less with a different ``argv[0]`` or environment (a glibc hello world: 103949,
  103991 and 104057 instructions for argv0 ``p``, ``prog`` and a 31-character
  name); that is why the run uses ``env -i`` and a fixed ``-0 argv0``.  With
  both fixed, repeated runs give identical per-PC counts.

Optionally (``memory_ops=True``) ``-d op`` is added and the TCG ops of each
translated instruction are scanned for ``qemu_ld*``/``qemu_st*``: that gives
QEMU's own number of guest memory accesses per instruction (one per register
for LDM/STM/PUSH/POP/LDRD/STRD, one 8-byte access per D register for
VLDR/VLDM/VPUSH, ...).  :func:`access_counts` multiplies these by the
execution counts; the result counts predicated-off memory instructions too
(an upper bound, exact when no conditional memory instruction fails).  STREX
shows up as one load plus one store (QEMU implements it as a compare-and-swap);
unicorn records the same pair.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from elftools.elf.constants import P_FLAGS
from elftools.elf.elffile import ELFFile

__all__ = [
    "CODE_RE",
    "ORACLE_VARIABLE",
    "QEMU",
    "QemuTraceError",
    "StreamParser",
    "TraceResult",
    "access_counts",
    "counting_plugin",
    "executable_segments",
    "exe_pcs",
    "run_streamed",
    "trace_firmware",
    "trace_pcs",
]

#: The emulator binary.
QEMU = "qemu-arm"
#: The user-mode emulator of each ELF machine the oracle traces.
_EMULATORS = {"EM_ARM": QEMU, "EM_X86_64": "qemu-x86_64"}


def _machine(binary: str | os.PathLike[str]) -> str:
    with open(binary, "rb") as fh:
        return ELFFile(fh)["e_machine"]


def _address_mask(binary: str | os.PathLike[str]) -> int:
    """All ones over the program's address width (32 bits on ARM, 64 on x86-64)."""
    with open(binary, "rb") as fh:
        return (1 << ELFFile(fh).elfclass) - 1

#: One ``-d exec`` line: capture the guest PC (second bracketed field).
_TRACE_RE = re.compile(rb"^Trace \d+: 0x[0-9a-fA-F]+ \[[0-9a-fA-F]+/([0-9a-fA-F]+)/", re.M)
#: ``-d page`` facts about the main executable (also read by qemu_accesses.py).
CODE_RE = re.compile(rb"^(start_code|end_code)\s+0x([0-9a-fA-F]+)\s*$", re.M)
#: ``-d op``: an instruction start marker or a guest memory access op.
_OP_RE = re.compile(rb"^ (?:---- ([0-9a-fA-F]+)\b|qemu_(ld|st)\w*)", re.M)
#: ``-d int`` (system mode): interrupt entries and returns, between the trace lines.
#: ``-d exec``: QEMU entered a block (its Trace line is written) but stopped before its
#: first instruction (an exit request: an interrupt, masked or not, a timer, I/O); the
#: block is entered again, with a Trace line of its own, when it does run.
_STOPPED_RE = re.compile(rb"^Stopped execution of TB chain before \S+ \[([0-9a-fA-F]+)\]", re.M)
_EVENT_RE = re.compile(rb"^(?:" + _TRACE_RE.pattern[1:]  # the trace line, without its anchor
                       + rb"|Taking exception (\d+)|\.\.\.successful exception (return)|"
                       + _STOPPED_RE.pattern[1:] + rb")", re.M)
#: Exceptions that are not interrupts: semihosting calls (16) and M-profile exception exit (8).
_NOT_INTERRUPTS = {b"8", b"16"}

_CHUNK = 1 << 20
#: How long the reader of a log waits after a small read (_pump): QEMU logs 50-150 MB a
#: second, a quarter of the pipe (_CHUNK) in a few milliseconds.
_NAP = 0.005


class QemuTraceError(RuntimeError):
    """QEMU could not be run, timed out, or its log lacked what was needed."""


@dataclass
class TraceResult:
    """Outcome of :func:`trace_pcs`.

    ``pcs`` holds *run-time* guest addresses of every executed instruction in
    every module (executable, ld.so, shared libraries, vDSO-like helpers);
    use :func:`exe_pcs` for the executable's own instructions at link-time
    addresses.
    """

    #: Run-time guest PC (Thumb bit clear) -> number of executions.
    pcs: Counter[int]
    #: Exit status as ``subprocess`` reports it (negative = killed by that signal).
    returncode: int
    #: The program's standard output.
    stdout: bytes
    #: The program's standard error (QEMU's own messages land here too).
    stderr: bytes
    #: Run-time address minus link-time address of the main executable (0 for ET_EXEC).
    load_bias: int
    #: ``start_code``/``end_code`` as QEMU printed them (run-time addresses).
    start_code: int
    end_code: int
    #: With ``memory_ops=True``: run-time PC -> (loads, stores) per execution, from ``-d op``.
    mem_ops: dict[int, tuple[int, int]] | None = None
    #: What counted: ``"log"`` (QEMU's ``-d exec`` log) or ``"plugin"`` (pccount).
    oracle: str = "log"

    @property
    def total(self) -> int:
        """Total number of executed instructions (all modules)."""
        return sum(self.pcs.values())


def _executable_loads(binary: str | os.PathLike[str]) -> tuple[str, list[tuple[int, int, int]]]:
    """``(e_type, [(p_vaddr, p_memsz, p_filesz), ...])`` of the ``PF_X`` ``PT_LOAD`` segments."""
    with open(binary, "rb") as fh:
        elf = ELFFile(fh)
        loads = [
            (seg["p_vaddr"], seg["p_memsz"], seg["p_filesz"])
            for seg in elf.iter_segments()
            if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & P_FLAGS.PF_X
        ]
        return elf["e_type"], loads


def executable_segments(binary: str | os.PathLike[str]) -> tuple[str, list[tuple[int, int]]]:
    """Return ``(e_type, [(start, end), ...])`` of the ``PF_X`` ``PT_LOAD`` segments.

    Ranges are link-time ``[p_vaddr, p_vaddr + p_memsz)``.
    """
    e_type, loads = _executable_loads(binary)
    return e_type, [(vaddr, vaddr + memsz) for vaddr, memsz, _ in loads]


def _file_end_of_code(binary: str | os.PathLike[str]) -> tuple[int, int]:
    """Return (lowest p_vaddr, highest p_vaddr + p_filesz) over ``PF_X`` ``PT_LOAD`` segments."""
    segs = [(vaddr, vaddr + filesz) for vaddr, _, filesz in _executable_loads(binary)[1]]
    if not segs:
        raise QemuTraceError(f"{binary}: no executable PT_LOAD segment")
    return min(s for s, _ in segs), max(e for _, e in segs)


class _LogParser:
    """Incremental parser of a QEMU ``-d exec,nochain,page[,op]`` log stream."""

    def __init__(self, memory_ops: bool, tee: BinaryIO | None, interrupts: bool = False) -> None:
        self.raw: Counter[bytes] = Counter()
        # The log's lines, counted as they come (in C: split and Counter's update), then
        # read once each (``pcs``). A PC's line is the same each time its block runs (its
        # translation's host address with it), so the distinct lines are few: counting them
        # whole and matching each once is about three times as fast as matching every line,
        # and the parse was more than half of a trace's time in the count tests.
        self._lines: Counter[bytes] = Counter()
        # An interrupt that arrives while QEMU enters a translation block makes the block
        # exit before its first instruction, after its Trace line was written; the
        # handler then returns to that same PC, which runs (and is logged) again.
        self.interrupts = interrupts
        self.aborted: Counter[bytes] = Counter()
        self._last_trace: bytes | None = None  # PC of the line just before, if it was a Trace line
        self._interrupted: list[bytes | None] = []
        self._resume: bytes | None = None
        self.code: dict[bytes, int] = {}
        self.memory_ops = memory_ops
        self.ops: dict[int, tuple[int, int]] = {}
        self._op_pc: int | None = None
        self._op_ld = 0
        self._op_st = 0
        self._rest = b""
        self._tee = tee

    def feed(self, data: bytes) -> None:
        """Consume the next piece of the stream (any split point)."""
        if self._tee is not None:
            self._tee.write(data)
        buf = self._rest + data if self._rest else data
        end = buf.rfind(b"\n") + 1
        if end == 0:
            self._rest = buf
            return
        self._parse(buf, end)
        self._rest = buf[end:]

    def close(self) -> None:
        """Parse any final unterminated line."""
        if self._rest:
            data = self._rest + b"\n"
            self._rest = b""
            self._parse(data, len(data))
        self._flush_op()

    def _parse(self, buf: bytes, end: int) -> None:
        if self.interrupts:
            self._interrupt_events(buf, end)  # counts the Trace lines too
        else:
            self._lines.update(buf[:end].split(b"\n"))
            # A stopped block is rare in a user-mode log: a plain search finds there is none
            # in a fraction of the second regular-expression pass over every piece (that
            # pass was nearly half of the parse, decision 0095).
            if b"Stopped execution" in buf:
                self.aborted.update(_STOPPED_RE.findall(buf, 0, end))
        if len(self.code) < 2 and b"_code" in buf:
            for key, value in CODE_RE.findall(buf, 0, end):
                self.code.setdefault(key, int(value, 16))
        if self.memory_ops:
            for match in _OP_RE.finditer(buf, 0, end):
                pc, kind = match.groups()
                if pc is not None:
                    self._flush_op()
                    self._op_pc = int(pc, 16)
                elif kind == b"ld":
                    self._op_ld += 1
                else:
                    self._op_st += 1

    def _interrupt_events(self, buf: bytes, end: int) -> None:
        """Count Trace lines, and find those whose block an interrupt stopped before it ran (see __init__)."""
        for pc, exception, returned, stopped in _EVENT_RE.findall(buf, 0, end):
            if stopped:  # counted here; an interrupt that follows must not count it again
                self.aborted[stopped] += 1
                self._last_trace = None
            elif pc:
                self.raw[pc] += 1
                if self._resume is not None and pc == self._resume:
                    self.aborted[pc] += 1
                self._resume = None
                self._last_trace = pc
            elif exception:
                if exception not in _NOT_INTERRUPTS:
                    self._interrupted.append(self._last_trace)
                self._last_trace = None
            elif returned:
                self._resume = self._interrupted.pop() if self._interrupted else None
                self._last_trace = None

    def _flush_op(self) -> None:
        if self._op_pc is not None:
            old = self.ops.get(self._op_pc, (0, 0))
            self.ops[self._op_pc] = (max(old[0], self._op_ld), max(old[1], self._op_st))
        self._op_pc = None
        self._op_ld = self._op_st = 0

    def pcs(self) -> Counter[int]:
        """Return the executed-PC counter with integer keys."""
        for line, n in self._lines.items():
            trace = _TRACE_RE.match(line)
            if trace is not None:
                self.raw[trace.group(1)] += n
        self._lines.clear()
        return Counter({int(pc, 16): n - self.aborted[pc] for pc, n in self.raw.items() if n > self.aborted[pc]})


def trace_pcs(
    binary: str | os.PathLike[str],
    args: Sequence[str] = (),
    stdin: bytes = b"",
    argv0: str = "prog",
    lib_root: str = "/usr/arm-linux-gnueabihf",
    *,
    timeout: float | None = 600.0,
    memory_ops: bool = False,
    keep_log: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    reuse: bool = False,
    oracle: str | None = None,
) -> TraceResult:
    """Run ``binary`` under ``qemu-arm -singlestep -d exec,nochain,page`` and count executed PCs
    (or under ``qemu-arm -plugin libpccount.so``, which counts the same a hundred times
    faster: ``oracle``, below).

    The guest gets an empty environment (``env -i``, plus ``env``) and ``argv[0] = argv0``;
    shared libraries and ld.so come from ``lib_root`` (``-L``).  ``stdin`` is
    fed to the program.  ``memory_ops`` adds ``-d op`` and fills
    :attr:`TraceResult.mem_ops`.  ``keep_log`` saves a copy of the raw log.
    ``cwd``: the working directory (default ours), where the program writes its files.
    A run longer than ``timeout`` seconds is killed and raises
    :class:`QemuTraceError`; so does a log without ``start_code``/``end_code``.

    ``reuse``: the program neither reads nor writes files in ``cwd``, so a trace of the same
    bytes with the same inputs made earlier in this test run (``ANVIL_TEST_RUN``, set by
    tests/conftest.py) serves (trace_cache.py): several tests trace one build.

    ``oracle``: ``"plugin"`` counts with pccount (tests/oracles/pccount.c, decision 0155),
    ``"log"`` from QEMU's log; None (the default) chooses as ``ANVIL_TRACE_ORACLE`` says, and
    unset, the plugin when it can be built and the run needs no log (``memory_ops`` and
    ``keep_log`` read the log). The plugin's counts are the log's (tests/test_trace_oracles.py).
    """
    if oracle not in (None, "log", "plugin"):
        raise ValueError(f"oracle={oracle!r}: expected 'log', 'plugin' or None")
    plugin = None if memory_ops or keep_log is not None or oracle == "log" else counting_plugin(oracle == "plugin")
    if not reuse or keep_log is not None or not os.environ.get("ANVIL_TEST_RUN"):
        return _trace_pcs(binary, args, stdin, argv0, lib_root, timeout=timeout, memory_ops=memory_ops,
                          keep_log=keep_log, env=env, cwd=cwd, plugin=plugin)
    from tests.oracles import trace_cache

    inputs = (Path(binary).read_bytes(), *args, "\0", stdin, argv0, lib_root, repr(sorted((env or {}).items())),
              str(memory_ops), *_EMULATORS.values(), "plugin" if plugin is not None else "log")
    return trace_cache.reused(inputs, lambda: _trace_pcs(binary, args, stdin, argv0, lib_root, timeout=timeout,
                                                         memory_ops=memory_ops, env=env, cwd=cwd, plugin=plugin))


def _trace_pcs(
    binary: str | os.PathLike[str],
    args: Sequence[str],
    stdin: bytes,
    argv0: str,
    lib_root: str,
    *,
    timeout: float | None,
    memory_ops: bool,
    keep_log: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    plugin: Path | None = None,
) -> TraceResult:
    """trace_pcs without reuse: counted by ``plugin`` (pccount) when given and its table
    held every instruction, else from the log."""
    binary = Path(binary)
    if not binary.is_file():
        raise QemuTraceError(f"{binary}: no such file")
    emulator = _EMULATORS[_machine(binary)]
    qemu = shutil.which(emulator)
    if qemu is None:
        raise QemuTraceError(f"{emulator} not found on PATH")
    if emulator != QEMU and lib_root == "/usr/arm-linux-gnueabihf":
        lib_root = "/"  # an x86-64 program's libraries are this machine's
    variables = [f"{k}={v}" for k, v in (env or {}).items()]
    prefix = ["env", "-i", *variables, qemu, "-L", lib_root, "-0", argv0]
    counted = None
    if plugin is not None:
        counted = _plugin_run(prefix, plugin, binary, args, stdin, timeout, cwd)
    if counted is not None:
        pcs, code, returncode, stdout, stderr = counted
    else:
        flags = "exec,nochain,page" + (",op" if memory_ops else "")
        cmd = [*prefix, "-singlestep", "-d", flags, "-D", "{log}", str(binary), *args]
        parser, returncode, stdout, stderr = _traced_run(cmd, stdin, memory_ops, keep_log, timeout, cwd=cwd)
        pcs, code = parser.pcs(), parser.code
    if b"start_code" not in code or b"end_code" not in code:
        raise QemuTraceError(
            f"{binary}: no start_code/end_code in the QEMU log (exit {returncode}): "
            + stderr.decode(errors="replace")[-500:]
        )
    start_code = code[b"start_code"]
    end_code = code[b"end_code"]
    low, high = _file_end_of_code(binary)
    mask = _address_mask(binary)
    bias = (start_code - low) & mask
    if (end_code - high) & mask != bias or bias % 0x1000:
        raise QemuTraceError(
            f"{binary}: inconsistent load bias: start_code={start_code:#x} end_code={end_code:#x} "
            f"for code {low:#x}..{high:#x}"
        )
    return TraceResult(
        pcs=pcs,
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        load_bias=bias,
        start_code=start_code,
        end_code=end_code,
        mem_ops=parser.ops if memory_ops and counted is None else None,
        oracle="log" if counted is None else "plugin",
    )


#: Forces the oracle of trace_pcs: ``log`` (QEMU's ``-d exec`` log) or ``plugin`` (pccount,
#: an error when it cannot be built); unset, the plugin when it builds, else the log.
ORACLE_VARIABLE = "ANVIL_TRACE_ORACLE"
#: pccount's source (a QEMU TCG plugin of our own, decision 0155).
PLUGIN_SOURCE = Path(__file__).with_name("pccount.c")
#: Once asked for: the library built from PLUGIN_SOURCE, or None and why it could not be built.
_plugin: list[tuple[Path | None, str]] = []
#: pccount's table (tests/oracles/pccount.c): magic, capacity, used, overflow, start_code, end_code.
_TABLE_MAGIC = 0x3143504C49564E41
_TABLE_HEADER = 64
#: pccount's table size in slots (None: the plugin's default, 16 M): a test makes it tiny.
_PLUGIN_SLOTS: int | None = None


def counting_plugin(required: bool = False) -> Path | None:
    """The pccount plugin for the installed qemu, built into benchmarks/qemu_plugins.py's cache
    on first use; None when ``ANVIL_TRACE_ORACLE=log`` or when it cannot be built (no
    network for the header, no glib: a warning, once, and the log oracle serves).
    ``required``: the plugin or QemuTraceError, whatever the variable says."""
    choice = "plugin" if required else os.environ.get(ORACLE_VARIABLE, "")
    if choice == "log":
        return None
    if choice not in ("", "plugin"):
        raise QemuTraceError(f"{ORACLE_VARIABLE}={choice}: expected 'log' or 'plugin'")
    if not _plugin:
        from benchmarks import qemu_plugins

        try:
            _plugin.append((qemu_plugins.compile_plugin(PLUGIN_SOURCE), ""))
        except (qemu_plugins.PluginBuildError, OSError) as exc:
            _plugin.append((None, str(exc)))
            if choice != "plugin":
                warnings.warn(f"QEMU's instruction counts come from its -d exec log, a hundred times slower: "
                              f"the pccount plugin cannot be built ({exc})", stacklevel=2)
    built, why = _plugin[0]
    if built is None and choice == "plugin":
        raise QemuTraceError(f"the pccount plugin cannot be built: {why}")
    return built


def _plugin_run(prefix: list[str], plugin: Path, binary: Path, args: Sequence[str], stdin: bytes,
                timeout: float | None, cwd: str | os.PathLike[str] | None
                ) -> tuple[Counter[int], dict[bytes, int], int, bytes, bytes] | None:
    """Run ``binary`` under QEMU with pccount (``prefix``: the emulator's command up to its
    options); return its PC counts, ``{b"start_code": ..., b"end_code": ...}``, exit status,
    stdout and stderr, or None when the plugin did not count everything (its table full, or
    QEMU could not load it): the caller traces with the log instead.

    No ``-singlestep``: pccount counts every instruction of a block by itself. But ``-d nochain``
    (no log without ``-D``, nothing printed): blocks translated as the log's run translates
    them but for their length. QEMU translates x86's ``rep`` string instructions by whether
    blocks chain: chained, the last iteration jumps back to the instruction, which runs once
    more to find ``rcx`` zero; unchained (``-singlestep`` implies it), the last iteration
    leaves at once, one execution fewer of each ``rep`` instruction that iterated (``sort``
    on x86-64: 5 instructions; no cost measured). The program's stdin, stdout and stderr are
    files, as on the log's path (a program may ask what they are)."""
    with tempfile.TemporaryDirectory(prefix="anvil-qemu-") as tmp:
        tmpdir = Path(tmp)
        table = tmpdir / "pcs.table"
        option = f"{_opt(plugin)},out={_opt(table)}" + (f",slots={_PLUGIN_SLOTS}" if _PLUGIN_SLOTS else "")
        cmd = [*prefix, "-d", "nochain", "-plugin", option, str(binary), *args]
        with _standard_files(tmpdir, stdin) as (fin, fout, ferr):
            proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr, cwd=cwd)
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise QemuTraceError(f"QEMU timed out after {timeout} s") from None
            except BaseException:  # QEMU must not outlive the run
                proc.kill()
                proc.wait()
                raise
        stdout, stderr = (tmpdir / "stdout").read_bytes(), (tmpdir / "stderr").read_bytes()
        counted = _read_table(table)
    if counted is None:
        return None
    pcs, code = counted
    return pcs, code, returncode, stdout, stderr


def _opt(path: Path) -> str:
    """``path`` as a value of QEMU's ``-plugin`` option (QemuOpts: a ``,`` is written twice)."""
    return str(path).replace(",", ",,")


def _read_table(table: Path) -> tuple[Counter[int], dict[bytes, int]] | None:
    """pccount's table: executions summed per address (each translation of an instruction
    has a slot) and the code's bounds; None when it is missing or full."""
    try:
        with open(table, "rb") as fh:
            header = array.array("Q", fh.read(_TABLE_HEADER))
            if len(header) < 6 or header[0] != _TABLE_MAGIC or header[3] or header[2] > header[1]:
                return None
            slots = array.array("Q", fh.read(16 * header[2]))
    except OSError:
        return None
    pcs: Counter[int] = Counter()
    for pc, n in zip(slots[0::2], slots[1::2], strict=True):
        if n:
            pcs[pc] += n
    code = {b"start_code": header[4], b"end_code": header[5]} if header[4] or header[5] else {}
    return pcs, code


class StreamParser(Protocol):
    """What run_streamed feeds QEMU's log to, as it comes."""

    def feed(self, data: bytes) -> None: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def _standard_files(tmpdir: Path, stdin: bytes) -> Iterator[tuple[BinaryIO, BinaryIO, BinaryIO]]:
    """The program's stdin (holding ``stdin``), stdout and stderr: files in ``tmpdir``."""
    (tmpdir / "stdin").write_bytes(stdin)
    with (
        open(tmpdir / "stdin", "rb") as fin,
        open(tmpdir / "stdout", "wb") as fout,
        open(tmpdir / "stderr", "wb") as ferr,
    ):
        yield fin, fout, ferr


def run_streamed(cmd: list[str], stdin: bytes, parser: StreamParser,
                 timeout: float | None, cwd: str | os.PathLike[str] | None = None) -> tuple[int, bytes, bytes]:
    """Run ``cmd`` (its ``{log}`` argument becomes a FIFO QEMU logs to) in ``cwd``, feeding
    the log to ``parser`` as QEMU writes it and closing the parser at the end; returns the
    exit status, stdout and stderr. A run longer than ``timeout`` seconds is killed
    (QemuTraceError)."""
    with tempfile.TemporaryDirectory(prefix="anvil-qemu-") as tmp:
        tmpdir = Path(tmp)
        fifo = tmpdir / "log.fifo"
        os.mkfifo(fifo)
        cmd = [str(fifo) if part == "{log}" else part for part in cmd]
        # O_RDWR keeps a writer on the FIFO, so reads never see a premature EOF
        # and QEMU's open() never blocks; the end is detected by process exit.
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        try:
            try:
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _CHUNK)
            except OSError:
                pass  # keep the default pipe size
            with _standard_files(tmpdir, stdin) as (fin, fout, ferr):
                proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr, cwd=cwd)
                try:
                    _pump(proc, fd, parser, timeout)
                except BaseException:  # a parser's error too: QEMU must not outlive the run
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
                    raise
            parser.close()
        finally:
            os.close(fd)
        return proc.returncode, (tmpdir / "stdout").read_bytes(), (tmpdir / "stderr").read_bytes()


def _traced_run(cmd: list[str], stdin: bytes, memory_ops: bool, keep_log: str | os.PathLike[str] | None,
                timeout: float | None, interrupts: bool = False, cwd: str | os.PathLike[str] | None = None
                ) -> tuple[_LogParser, int, bytes, bytes]:
    """Run ``cmd`` with run_streamed and this module's parser (``keep_log``: a copy of the log)."""
    tee = open(keep_log, "wb") if keep_log is not None else None  # noqa: SIM115
    try:
        parser = _LogParser(memory_ops, tee, interrupts)
        returncode, stdout, stderr = run_streamed(cmd, stdin, parser, timeout, cwd)
    finally:
        if tee is not None:
            tee.close()
    return parser, returncode, stdout, stderr


def trace_firmware(image: str | os.PathLike[str], board: str, *, memory_ops: bool = False,
                   timeout: float | None = 300.0, cwd: str | os.PathLike[str] | None = None) -> TraceResult:
    """Run the Cortex-M ``image`` on ``qemu-system-arm -M board -singlestep -d exec,nochain``
    (semihosting console) and count executed PCs; the image runs at its link addresses
    (``load_bias`` 0). Exception entry and return are not instructions and are not logged;
    handlers' instructions are. ``-d int`` shows interrupts, so a Trace line whose block an
    interrupt stopped before it ran is not counted (_LogParser). ``cwd``: run there, ``image``
    as given (a start-up that reads its command line, QEMU's ``-kernel`` path, then walks
    the same path as a run of a copy given by the same relative name)."""
    qemu = shutil.which("qemu-system-arm")
    if qemu is None:
        raise QemuTraceError("qemu-system-arm not found on PATH")
    flags = "exec,nochain,int" + (",op" if memory_ops else "")
    cmd = [qemu, "-M", board, "-nographic", "-monitor", "none", "-serial", "none", "-no-reboot",
           "-semihosting-config", "enable=on,target=native", "-singlestep", "-d", flags, "-D", "{log}",
           "-kernel", str(image)]
    # In the image's directory: what it writes through semihosting (results, ReHost's
    # records) goes beside it, as with run_firmware, not into the caller's directory.
    parser, returncode, stdout, stderr = _traced_run(cmd, b"", memory_ops, None, timeout, interrupts=True,
                                                     cwd=Path(cwd) if cwd is not None else Path(image).resolve().parent)
    return TraceResult(pcs=parser.pcs(), returncode=returncode, stdout=stdout, stderr=stderr, load_bias=0,
                       start_code=0, end_code=0, mem_ops=parser.ops if memory_ops else None)


def _pump(proc: subprocess.Popen[bytes], fd: int, parser: StreamParser, timeout: float | None) -> None:
    """Feed the FIFO's contents to ``parser`` until ``proc`` exits and the FIFO is drained."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                data = b""
            if data:
                parser.feed(data)
                if len(data) < _CHUNK // 4:
                    # QEMU writes each line of its log by itself: a reader woken for each
                    # one read a few hundred bytes at a time, and the wake-ups cost QEMU
                    # as much again. Read when the pipe has filled some: a third less time.
                    time.sleep(_NAP)
                continue
        if proc.poll() is not None:
            # QEMU has exited: everything it wrote is in the pipe; drain it.
            while True:
                try:
                    data = os.read(fd, _CHUNK)
                except BlockingIOError:
                    return
                if not data:
                    return
                parser.feed(data)
        if deadline is not None and time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise QemuTraceError(f"QEMU timed out after {timeout} s")


def exe_pcs(result: TraceResult, binary: str | os.PathLike[str]) -> Counter[int]:
    """Return the executable's own executed PCs at link-time addresses.

    PCs are translated by ``pc - load_bias`` and kept only when they fall in a
    ``PF_X`` ``PT_LOAD`` segment of ``binary``: ld.so, shared libraries and
    QEMU's kernel-helper page are left out.
    """
    _, ranges = executable_segments(binary)
    bias = result.load_bias
    mask = _address_mask(binary)
    out: Counter[int] = Counter()
    for pc, n in result.pcs.items():
        link = (pc - bias) & mask
        for start, end in ranges:
            if start <= link < end:
                out[link] += n
                break
    return out


def access_counts(result: TraceResult, pcs: Counter[int] | None = None) -> Counter[str]:
    """Return QEMU's count of guest memory accesses: ``Counter({'L': loads, 'S': stores})``.

    Needs a trace made with ``memory_ops=True``.  ``pcs`` defaults to
    ``result.pcs`` (run-time addresses; pass a filtered counter with run-time
    keys to restrict).  Predicated instructions whose condition failed are
    counted as if they had accessed memory.
    """
    if result.mem_ops is None:
        raise ValueError("trace was made without memory_ops=True")
    counts: Counter[str] = Counter()
    for pc, n in (result.pcs if pcs is None else pcs).items():
        loads, stores = result.mem_ops.get(pc, (0, 0))
        counts["L"] += loads * n
        counts["S"] += stores * n
    return counts
