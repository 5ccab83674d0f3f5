"""Run a session's analysis in a C shared library (the tool's C built for the host).

Each session loads its own copy of the library (a private file, dlopen'ed), so the
tool's static variables are separate per session and sessions run in parallel: the
batch entry point ``anvil_dispatch`` runs without the GIL (ctypes releases it).
"""

from __future__ import annotations

import _ctypes
import ctypes
import os
import shutil
import struct
import tempfile
from pathlib import Path

from . import stream
from .sitetable import SiteTable
from .stream import StreamError, check_results_size

_CTYPES = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}


class _Site(ctypes.Structure):
    """struct anvil_site (runtime_stubs/common/anvil_rt.h), field for field."""

    _fields_ = [("fn", ctypes.c_void_p), ("args", ctypes.c_uint64 * 4), ("ndynamic", ctypes.c_uint16),
                ("shape", ctypes.c_uint16), ("slot", ctypes.c_uint8 * 4)]


_SITE_LAYOUT = struct.Struct("=Q4QHH4B")  # _Site, field for field
assert _SITE_LAYOUT.size == ctypes.sizeof(_Site)


class _Output(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("data", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("cap", ctypes.c_size_t)]


class MissingRoutine(Exception):
    """The library does not define a routine the site table calls."""


class CDispatcher:
    """The Dispatcher (rehost/stream.py) for a host shared library."""

    def __init__(self, library: Path, table: SiteTable) -> None:
        self.table = table
        self.records = 0
        self._tmp = tempfile.mkdtemp(prefix="anvil-session-")
        private = os.path.join(self._tmp, "analysis.so")
        shutil.copyfile(library, private)
        self.lib = ctypes.CDLL(private, mode=ctypes.RTLD_LOCAL)
        self._loaded = True
        try:  # a library built before x86-64 programs had records reads 32-bit words
            word = ctypes.c_uint32.in_dll(self.lib, "anvil_record_word_bytes").value
        except ValueError:
            word = 4
        if word != table.word_bytes:
            self.close()
            programs = {4: "ARM", 8: "x86-64"}
            raise MissingRoutine(f"the analysis library reads the records of {programs.get(word, '?')} programs, "
                                 f"and this one is an {programs.get(table.word_bytes, '?')} program (rebuild it "
                                 f"with{'' if table.word_bytes == 8 else 'out'} -DANVIL_TARGET_X86_64)")
        self._word = word
        self._keep: list[object] = []  # buffers the library points into
        self._strings: dict[str, ctypes.Array] = {}
        self.routines = []
        for routine in table.routines:
            try:
                self.routines.append(ctypes.cast(getattr(self.lib, routine.name), ctypes.c_void_p).value)
            except AttributeError:
                self.close()
                raise MissingRoutine(f"the analysis library does not define routine '{routine.name}'") from None
        if not hasattr(self.lib, "anvil_dispatch"):  # the routines alone, without Anvil's runtime beside them
            self.close()
            raise MissingRoutine("the analysis library has no anvil_dispatch: build it with 'anvil rehost-server "
                                 "--lib file.c' (docs/rehost.md)")
        self.lib.anvil_dispatch.restype = ctypes.c_int
        self.lib.anvil_dispatch.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_uint64)]
        self.arrays: dict[int, ctypes.Array] = {}

    def _string(self, text: str) -> int:
        buf = self._strings.get(text)
        if buf is None:
            buf = self._strings[text] = ctypes.create_string_buffer(text.encode())
        return ctypes.addressof(buf)

    def _values(self, routine: int, args: list, bias: int) -> list[int]:
        """Four machine words: strings as pointers to buffers this session keeps, dynamic slots 0."""
        values = [0 if v is None else self._string(v) if isinstance(v, str) else v
                  for v in self.table.static_values(routine, args, bias)]
        return values + [0] * (4 - len(values))

    def _set_pointer(self, name: str, buffer: object) -> None:
        try:
            ctypes.c_void_p.in_dll(self.lib, name).value = ctypes.addressof(buffer)
        except ValueError:
            return  # the tool does not use it
        self._keep.append(buffer)

    def _set_facts(self, bias: int) -> None:
        facts = self.table.facts
        names = bytearray()
        offsets = []
        for name in facts["proc_name"]:
            offsets.append(len(names))
            names += str(name).encode(errors="replace") + b"\0"
        for key, ctype in (("block_addr", ctypes.c_uint32), ("block_insns", ctypes.c_uint16),
                           ("block_proc", ctypes.c_uint32), ("proc_addr", ctypes.c_uint32)):
            values = facts[key]
            self._set_pointer(f"anvil_{key}", (ctype * max(len(values), 1))(*values))
        self._set_pointer("anvil_proc_name", (ctypes.c_uint32 * max(len(offsets), 1))(*offsets))
        self._set_pointer("anvil_names", ctypes.create_string_buffer(bytes(names)))
        ctypes.c_uint32.in_dll(self.lib, "anvil_nblocks").value = len(facts["block_addr"])
        ctypes.c_uint32.in_dll(self.lib, "anvil_nprocs").value = len(facts["proc_addr"])
        ctypes.c_uint64.in_dll(self.lib, "anvil_bias").value = bias

    def _call(self, calls: list[tuple[int, list]], bias: int) -> None:
        for routine, args in calls:
            fn = ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 4)(self.routines[routine])
            fn(*self._values(routine, args, bias))

    def start(self, bias: int) -> None:
        self._set_facts(bias)
        # The library keeps no more of the tool's output than can come back (anvil_host.c).
        ctypes.c_uint64.in_dll(self.lib, "anvil_results_limit").value = stream.RESULTS_LIMIT
        for index, array in enumerate(self.table.arrays):
            buf = (_CTYPES[array.element_size] * array.length)()
            self.arrays[index] = buf
            self._set_pointer(f"anvil_array_{array.name}", buf)
        # Packed in one go (ctypes field by field costs seconds for large tables); sites
        # repeat a few (routine, static args) shapes, each packed once.
        packed: dict[tuple, bytes] = {}
        parts = []
        for routine, args in self.table.sites:
            key = (routine, *args)
            entry = packed.get(key)
            if entry is None:
                slots = self.table.routines[routine].dynamic_slots
                entry = packed[key] = _SITE_LAYOUT.pack(self.routines[routine], *self._values(routine, args, bias),
                                                        len(slots), 0, *(slots + [0] * (4 - len(slots))))
            parts.append(entry)
        buffer = bytearray(b"".join(parts) or bytes(ctypes.sizeof(_Site)))
        self._sites = (_Site * max(len(self.table.sites), 1)).from_buffer(buffer)
        self.lib.anvil_prepare_sites(self._sites, len(self.table.sites))
        self._keep.append(buffer)
        self._call(self.table.start, bias)
        self._bias = bias

    def dispatch(self, data: bytes) -> tuple[int, bool]:
        consumed = ctypes.c_size_t(0)
        count = ctypes.c_uint64(0)
        status = self.lib.anvil_dispatch(self._sites, len(self.table.sites), data, len(data) // self._word,
                                         ctypes.byref(consumed), ctypes.byref(count))
        self.records += count.value
        used = consumed.value * self._word
        if status < 0:
            site = int.from_bytes(data[used:used + self._word], "little")
            raise StreamError(f"unknown site id {site} after {self.records} records "
                              f"(the site table has {len(self.table.sites)})")
        return used, status == 1

    def set_array(self, index: int, data: bytes) -> None:
        array = self.table.target_arrays[index]
        position = self.table.arrays.index(array)
        ctypes.memmove(self.arrays[position], data, len(data))

    def finish(self) -> dict[str, bytes]:
        self._call(self.table.end, self._bias)
        count = ctypes.c_uint32.in_dll(self.lib, "anvil_noutputs").value
        outputs = (_Output * 64).in_dll(self.lib, "anvil_outputs")
        check_results_size({outputs[i].path.decode(errors="replace"): outputs[i].len for i in range(count)})
        results = {}
        for i in range(count):
            out = outputs[i]
            results[out.path.decode(errors="replace")] = ctypes.string_at(out.data, out.len) if out.len else b""
        self.lib.anvil_free_outputs()
        return results

    def close(self) -> None:
        """End the session: the library frees what it allocated on this process's heap,
        and its private copy is unloaded (a server runs session after session)."""
        if self._loaded:
            end = getattr(self.lib, "anvil_end_session", None)  # a library built before it had none
            if end is not None:
                end()
            _ctypes.dlclose(self.lib._handle)
            self._loaded = False
        shutil.rmtree(self._tmp, ignore_errors=True)
