"""Generate the C unit that describes the instrumented image to the analysis code.

It holds the site tables (blocks, procedures, names), the arrays tools declared,
the strings passed as arguments, and the program start / program end functions
that call the tools' routines registered at those points.
"""

from __future__ import annotations

from collections import Counter

from ..api import Arg
from ..ir.model import Binary, Hook, Point
from .target_build import FACTS_SECTION


def c_string(text: str) -> str:
    """A C string literal for ``text`` (bytes outside printable ASCII escaped)."""
    out = ['"']
    for b in text.encode():
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


# Sizes the GNU assembler reads alike for every target (".word" is 4 bytes on ARM, 2 on x86).
_DIRECTIVES = {"uint8_t": (".byte", 1), "uint16_t": (".2byte", 2), "uint32_t": (".4byte", 4)}


def asm_array(ctype: str, name: str, values: list[int], per_line: int = 32) -> str:
    """A constant array in the fact section of its own (_fact), as assembler directives in a
    top-level ``__asm__``: a C initializer of a large program's tens of thousands of
    values took the compiler most of a second, the assembler a tenth of that."""
    directive, align = _DIRECTIVES[ctype]
    if not values:
        values = [0]
    rows = "\\n".join(f"{directive} " + ",".join(map(str, values[i:i + per_line]))
                       for i in range(0, len(values), per_line))
    return (f'__asm__(".section {FACTS_SECTION}.{name},\\"a\\",%progbits\\n.balign {align}\\n'
            f'.global {name}\\n.hidden {name}\\n.type {name}, %object\\n{name}:\\n{rows}\\n'
            f'.size {name}, . - {name}\\n.previous");\n')


def _fact(name: str) -> str:
    """The attribute that puts fact ``name`` in a section the link drops when no code reads it."""
    return f'__attribute__((section("{FACTS_SECTION}.{name}")))'


def image_facts(binary: Binary) -> dict[str, list]:
    """The static facts analysis code may read: blocks (address | Thumb bit, instructions,
    procedure index) and procedures (address, name), in the IR's order."""
    blocks = list(binary.blocks())
    return {
        "block_addr": [b.address | int(b.procedure.thumb) for b in blocks],
        "block_insns": [min(b.size, 0xFFFF) for b in blocks],
        "block_proc": [b.procedure.index for b in blocks],
        "proc_addr": [p.address for p in binary.procedures],
        "proc_name": result_names(binary),
    }


def result_names(binary: Binary) -> list[str]:
    """Each procedure's name in the results, in the IR's order: its own, or where another
    procedure has it too (static functions of the same name in two files), the name with
    its address (``f@0x1234``), so that no procedure's counts hide another's."""
    seen = Counter(proc.name for proc in binary.procedures)
    return [proc.name if seen[proc.name] == 1 else f"{proc.name}@{proc.address:#x}" for proc in binary.procedures]


class SiteUnit:
    """Collects strings and produces the generated C source."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        # Arrays whose length the emitter set instead of the tool (Derivations.sizes).
        self.lengths: dict[str, int] = {}

    def string_symbol(self, text: str) -> str:
        """The C symbol of a string constant passed to a routine."""
        return self.strings.setdefault(text, f"anvil_str_{len(self.strings)}")

    def source(self, binary: Binary, arrays: dict[str, tuple[str, int]], facts: bool = True,
               placed: dict[str, tuple[str, int]] | None = None) -> str:
        """The C unit: site facts (unless ``facts`` is False), ``arrays``, strings, start/end functions.

        ``placed``: arrays that live inside another one at a byte offset (Tool.filter_placement):
        their symbols are defined there instead of as arrays of their own.
        """
        placed = placed or {}
        parts = ['#include "anvil_rt.h"\n', "#pragma GCC visibility push(hidden)\n"]
        if facts:
            parts += self._facts(binary)
        for name, (ctype, length) in arrays.items():
            length = self.lengths.get(name, length)
            storage = "extern " if name in placed else ""
            parts.append(f"{storage}{ctype} anvil_array_{name}[{length}] __attribute__((aligned(8)));\n")
        for name, (inside, offset) in placed.items():
            symbol = f"anvil_array_{name}"
            parts.append(f'__asm__(".globl {symbol}\\n.hidden {symbol}\\n.type {symbol}, %object\\n'
                         f'.set {symbol}, anvil_array_{inside} + {offset}");\n')
        return "".join(parts + self._calls_source(binary))

    @staticmethod
    def _facts(binary: Binary) -> list[str]:
        facts = image_facts(binary)
        names = bytearray()
        name_offsets = []
        for name in facts["proc_name"]:
            name_offsets.append(len(names))
            names += name.encode(errors="replace") + b"\0"
        return [
            f"const uint32_t anvil_nblocks {_fact('anvil_nblocks')} = {len(facts['block_addr'])};\n",
            f"const uint32_t anvil_nprocs {_fact('anvil_nprocs')} = {len(facts['proc_addr'])};\n",
            asm_array("uint32_t", "anvil_block_addr", facts["block_addr"]),
            asm_array("uint16_t", "anvil_block_insns", facts["block_insns"]),
            asm_array("uint32_t", "anvil_block_proc", facts["block_proc"]),
            asm_array("uint32_t", "anvil_proc_addr", facts["proc_addr"]),
            asm_array("uint32_t", "anvil_proc_name", name_offsets),
            f"const char anvil_names[{len(names) + 1}] {_fact('anvil_names')} = "
            f"{c_string(names.decode(errors='replace'))};\n",
        ]

    def _calls_source(self, binary: Binary) -> list[str]:
        parts = []
        start = [h for h in binary.hooks if h.point is Point.BEFORE]
        end = [h for h in binary.hooks if h.point is Point.AFTER]
        for hook in start + end:
            self._check_static(hook)
        declared = set()
        for hook in start + end:
            proto = hook.prototype
            if proto.name not in declared:
                declared.add(proto.name)
                params = ", ".join("anvil_word" for _ in proto.kinds) or "void"
                parts.append(f"void {proto.name}({params});\n")
        calls_start = "".join(self._call(h) for h in start)
        calls_end = "".join(self._call(h) for h in end)
        for text, symbol in self.strings.items():
            parts.append(f"const char {symbol}[] = {c_string(text)};\n")
        parts.append(f"void anvil_program_start(void)\n{{\n{calls_start}}}\n")
        # Counts the program did not count inline are derived before anyone reads them. The
        # end holds the analysis lock (runtime_stubs/common/anvil_rt.h): a program may end on
        # a thread outside any call site (x86-64's exit_group, a library's _exit, a fatal
        # signal) while its other threads still call the tool's routines, whose records and
        # output would land in the middle of the results or after the end record.
        parts.append("void anvil_derive_counts(void);\n"
                     "void anvil_program_end(void)\n{\n  static int done;\n"
                     "  anvil_word taken = anvil_analysis_take();\n"
                     "  if (!done) {\n    done = 1;\n    anvil_derive_counts();\n"
                     f"{calls_end}  }}\n  anvil_analysis_give(taken);\n}}\n")
        return parts

    @staticmethod
    def _check_static(hook: Hook) -> None:
        for kind in hook.prototype.kinds:
            if kind not in (Arg.CONST, Arg.STRING):
                raise ValueError(f"{hook.prototype.name}: program start/end calls take CONST and STRING only")

    def _call(self, hook: Hook) -> str:
        args = []
        for kind, value in zip(hook.prototype.kinds, hook.args):
            if kind is Arg.STRING:
                args.append(f"(anvil_word){self.string_symbol(str(value))}")
            else:
                args.append(f"{int(value) & 0xFFFFFFFF}u")
        return f"  {hook.prototype.name}({', '.join(args)});\n"
