"""Reading and checking a ReHost site table (written by rewriter/emit/rehost.py).

The table is JSON: ``routines`` (name, argument kinds), ``sites`` (routine index and
one entry per argument: the static value, or null for a value the record carries),
``start``/``end`` (routine calls at program start and end, static arguments only),
``arrays`` (name, C type, length, whether the program fills it) and ``facts`` (blocks
and procedures: what the C runtime offers as anvil_block_addr etc.). A firmware
image's table also has ``channel``: how its records leave the board (``transport``
"semihosting", or "uart" with ``uart_base``); absent for Linux programs. ``word_bytes``:
how wide the words of the program's record stream (and its addresses) are, 8 for an
x86-64 program; absent (4) for an ARM one. ``forks``: false where the rewrite found nothing
in the program that makes a process running its code (absent: it may).
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field

from rewriter.api import Arg
from rewriter.emit.site_format import FORMAT, TRANSPORTS, VERSION, Channel, digest

# The argument kinds a routine may take, by their names in the table (SITE_ID is the record's own).
DYNAMIC_KINDS = {k.value for k in Arg if k.dynamic}
STATIC_KINDS = {k.value for k in Arg if not k.dynamic and k is not Arg.SITE_ID}
CTYPE_SIZES = {"uint8_t": 1, "int8_t": 1, "uint16_t": 2, "int16_t": 2, "uint32_t": 4, "int32_t": 4,
               "uint64_t": 8, "int64_t": 8}
FACT_KEYS = ("block_addr", "block_insns", "block_proc", "proc_addr", "proc_name")


Call = list  # [routine index, its static arguments (None where a record gives the value)]


class SiteTableError(Exception):
    """The site table is not one the server can use."""


@dataclass
class Routine:
    name: str
    kinds: list[str]

    @property
    def dynamic_slots(self) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k in DYNAMIC_KINDS]


@dataclass
class Array:
    name: str
    ctype: str
    length: int
    from_target: bool

    @property
    def element_size(self) -> int:
        return CTYPE_SIZES[self.ctype]

    @property
    def nbytes(self) -> int:
        return self.length * self.element_size


@dataclass
class SiteTable:
    tool: str
    routines: list[Routine]
    sites: list[Call]
    start: list[Call]
    end: list[Call]
    arrays: list[Array]
    facts: dict[str, list]
    digest: bytes  # first 8 bytes of the file's SHA-256: what the binary's stream header carries
    channel: Channel | None = None  # firmware images only
    # A tool file's analysis C (absolute paths where it was instrumented): what `anvil run`
    # and `rehost-listen` build for a local server. A server never builds what a session names.
    analysis_sources: list[str] = field(default_factory=list)
    word_bytes: int = 4  # the record stream's words (rehost/stream.py): the program's address width
    # The program may fork a process that runs its code (Binary.forks): the bridge keeps each
    # stream for the children's sessions only then.
    forks: bool = True

    def static_values(self, routine: int, args: list, bias: int) -> list:
        """A call's argument values as the routine sees them: instruction addresses moved by
        the load bias; strings stay str and dynamic slots None (the dispatcher fills those)."""
        kinds = self.routines[routine].kinds
        mask = (1 << 8 * self.word_bytes) - 1
        return [(v + bias) & mask if k == "inst_addr" else v for k, v in zip(kinds, args)]

    @property
    def output_paths(self) -> set[str]:
        """The strings the program start/end calls pass: the only results files a session may write."""
        return {v for _, args in self.start + self.end for v in args if isinstance(v, str)}

    @property
    def target_arrays(self) -> list[Array]:
        """Arrays the program fills and sends at its end, in the order of their indexes."""
        return [a for a in self.arrays if a.from_target]


def _expect(condition: bool, problem: str) -> None:
    if not condition:
        raise SiteTableError(problem)


def _calls(items: object, routines: list[Routine], what: str, static_only: bool, limit: int) -> list[Call]:
    """``items`` checked: [routine, args] pairs, each a valid call. Returned as they are (a big
    program's table has hundreds of thousands; tables repeat a few calls many times, so each
    distinct one is checked once)."""
    _expect(isinstance(items, list), f"{what} is not a list")
    bad = next((n for n, item in enumerate(items)  # type: ignore[arg-type]
                if not (type(item) is list and len(item) == 2 and type(item[1]) is list)), None)
    if bad is not None:
        raise SiteTableError(f"{what}[{bad}] is not [routine, args]")
    try:
        distinct = {(index, *args) for index, args in items}  # type: ignore[attr-defined]
    except TypeError:  # an unhashable value (certainly not a valid argument): find it in order
        distinct = None
    if distinct is None or not all(_valid(key, routines, static_only, limit) for key in distinct):
        for n, (index, args) in enumerate(items):  # type: ignore[arg-type]
            _check_call(index, args, routines, f"{what}[{n}]", static_only, limit)  # (says the first bad one)
    return items  # type: ignore[return-value]


def _valid(key: tuple, routines: list[Routine], static_only: bool, limit: int) -> bool:
    try:
        _check_call(key[0], list(key[1:]), routines, "", static_only, limit)
    except SiteTableError:
        return False
    return True


def _check_call(index: object, args: list, routines: list[Routine], where: str, static_only: bool,
                limit: int) -> None:
    """``limit``: the largest static value (the program's word)."""
    _expect(isinstance(index, int) and 0 <= index < len(routines), f"{where}: no routine {index!r}")
    kinds = routines[index].kinds  # type: ignore[index]
    _expect(len(args) == len(kinds), f"{where}: {routines[index].name} takes {len(kinds)} arguments")  # type: ignore[index]
    for kind, value in zip(kinds, args):
        if kind in DYNAMIC_KINDS:
            _expect(value is None and not static_only, f"{where}: {kind} argument must come from records")
        elif kind == "string":
            _expect(isinstance(value, str), f"{where}: string argument expected")
        else:
            _expect(isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit,
                    f"{where}: {limit.bit_length()}-bit value expected")


def _channel(value: object) -> Channel | None:
    if value is None:
        return None
    _expect(isinstance(value, dict) and value.get("transport") in TRANSPORTS,
            f"channel {value!r} is not one this version knows")
    base = value.get("uart_base")  # type: ignore[union-attr]
    if value["transport"] == "uart":  # type: ignore[index]
        _expect(isinstance(base, int) and not isinstance(base, bool) and 0 <= base <= 0xFFFFFFFF,
                "channel: uart_base is not a 32-bit address")
        return Channel("uart", base)
    return Channel("semihosting")


def parse(document: bytes, tool: str | None = None) -> SiteTable:
    """Check ``document`` and return the table; ``tool``: the tool the session claims."""
    # A big program's table is millions of small lists: the collector, which the allocations
    # would start over and over meanwhile, finds no cycles in what JSON makes.
    collecting = gc.isenabled()
    gc.disable()
    try:
        data = json.loads(document)
    except (ValueError, UnicodeDecodeError) as e:
        raise SiteTableError(f"site table is not JSON: {e}") from None
    finally:
        if collecting:
            gc.enable()
    _expect(isinstance(data, dict) and data.get("format") == FORMAT, "not an Anvil ReHost site table")
    _expect(data.get("version") == VERSION, f"site table version {data.get('version')!r}, expected {VERSION}")
    _expect(tool is None or data.get("tool") == tool, f"site table is for tool {data.get('tool')!r}, not {tool!r}")
    routines = []
    for n, r in enumerate(data.get("routines", [])):
        _expect(isinstance(r, dict) and isinstance(r.get("name"), str) and r["name"].isidentifier(),
                f"routine {n} has no valid name")
        kinds = r.get("kinds")
        _expect(isinstance(kinds, list) and len(kinds) <= 4 and all(k in DYNAMIC_KINDS | STATIC_KINDS for k in kinds),
                f"routine {r['name']}: bad argument kinds {kinds!r}")
        _expect(sum(k in DYNAMIC_KINDS for k in kinds) <= 3, f"routine {r['name']}: more than 3 dynamic arguments")
        routines.append(Routine(r["name"], kinds))
    arrays = []
    for n, a in enumerate(data.get("arrays", [])):
        _expect(isinstance(a, dict) and isinstance(a.get("name"), str) and a["name"].isidentifier()
                and a.get("ctype") in CTYPE_SIZES and isinstance(a.get("length"), int) and 0 < a["length"] < 1 << 28,
                f"array {n} is malformed")
        arrays.append(Array(a["name"], a["ctype"], a["length"], bool(a.get("from_target"))))
    facts = data.get("facts")
    _expect(isinstance(facts, dict) and all(isinstance(facts.get(k), list) for k in FACT_KEYS), "facts missing")
    _expect(len(facts["block_addr"]) == len(facts["block_insns"]) == len(facts["block_proc"]), "block facts differ")
    _expect(len(facts["proc_addr"]) == len(facts["proc_name"]), "procedure facts differ in length")
    word_bytes = data.get("word_bytes", 4)
    _expect(word_bytes in (4, 8) and not isinstance(word_bytes, bool), f"word_bytes {word_bytes!r} is not 4 or 8")
    limit = (1 << 8 * word_bytes) - 1
    forks = data.get("forks", True)
    _expect(isinstance(forks, bool), f"forks {forks!r} is not true or false")
    sources = data.get("analysis_sources", [])
    _expect(isinstance(sources, list) and all(isinstance(s, str) for s in sources), "analysis_sources malformed")
    return SiteTable(
        tool=str(data.get("tool")), routines=routines,
        sites=_calls(data.get("sites"), routines, "sites", False, limit),
        start=_calls(data.get("start", []), routines, "start", True, limit),
        end=_calls(data.get("end", []), routines, "end", True, limit),
        arrays=arrays, facts=facts, digest=digest(document), channel=_channel(data.get("channel")),
        analysis_sources=sources, word_bytes=word_bytes, forks=forks,
    )
