"""Words in data that are numbers counting up or down, not code addresses.

A table of numbers (the Unicode code points of glibc's transliteration tables, say) reads
as code addresses where its values fall in the text: in a static program the code points
0x1d5ee, 0x1d5ef, ... land on every halfword of a function, odd ones with the Thumb bit.
Two words one apart cannot both be code addresses (they would name the same instruction in
both instruction sets), so such pairs, at the stride of a table of words or of pairs, are
taken as numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

STRIDES = (1, 2)  # in words: a table of words, or of pairs (from, to)


def counted(values: Sequence[int], k: int) -> bool:
    """Whether ``values[k]`` (of consecutive words of data) is one more or one less than
    the word a stride before or after it: a number, not an address."""
    value = values[k]
    for stride in STRIDES:
        if k >= stride and abs(values[k - stride] - value) == 1:
            return True
        if k + stride < len(values) and abs(values[k + stride] - value) == 1:
            return True
    return False


#: Strides of the columns ``in_offset_column`` looks at, in words: records of up to four words.
COLUMN_STRIDES = (1, 2, 3, 4)
#: Steps between neighbours of a column of offsets: closer than two functions in different
#: instruction sets ever are.
COLUMN_STEP = 64


def in_offset_column(values: Sequence[int], k: int, in_code: Callable[[int], bool]) -> bool:
    """Whether the odd ``values[k]`` is one of a column of ascending (or descending) offsets
    that happen to fall in the text's range, not a Thumb code address.

    In some column (``COLUMN_STRIDES``: a table of records) three words in a row, this one
    among them, all fall in the text (``in_code``), run one way in steps shorter than
    ``COLUMN_STEP``, and one of them is even. Code addresses that close would name
    functions in both instruction sets next to each other: GHC's static ``Text`` literals
    are records of (info pointer, offset, length), whose offsets into one array run through
    the text's range of numbers; one taken for a Thumb function got a Thumb jump written over
    the A32 code at that address (hspec-discover)."""
    for stride in COLUMN_STRIDES:
        for first in (k - 2 * stride, k - stride, k):  # the three-word runs of the column through k
            if first < 0 or first + 2 * stride >= len(values):
                continue
            a, b, c = values[first], values[first + stride], values[first + 2 * stride]
            if a & b & c & 1 or not (in_code(a) and in_code(b) and in_code(c)):
                continue
            if all(0 < d < COLUMN_STEP for d in (b - a, c - b)) or all(0 < d < COLUMN_STEP for d in (a - b, b - c)):
                return True
    return False


#: Bytes of text: printable ASCII, tab, line feed, carriage return.
_TEXT = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}
#: Words either side of a word that ``in_text`` reads with it.
TEXT_WINDOW = 2


def in_text(values: Sequence[int], k: int) -> bool:
    """Whether ``values[k]`` (of consecutive words of data) is four bytes of character
    strings, not a code address: with up to ``TEXT_WINDOW`` words either side (at least
    three words in all), every byte is text or NUL and at least half of them are text.

    In a fixed-address program whose text runs past 0x202020, three characters and a NUL
    ("-16" of "UTF-16", "dle" of "Handle") read as an address in it. A table of code
    addresses cannot pass: each of its words would need every byte printable, the address's
    top byte too; nor a word alone among zeros or numbers (too few bytes of text). GHC's
    programs keep their string literals in .rodata beside A32 code whose info tables (small
    numbers) the A32 test of weak Thumb entries does not count: jumps for such words were
    written over the info tables the runtime reads (HsColour, shellcheck)."""
    lo, hi = max(0, k - TEXT_WINDOW), min(len(values), k + TEXT_WINDOW + 1)
    if hi - lo < 3:
        return False
    text = 0
    for value in values[lo:hi]:
        for byte in value.to_bytes(4, "little"):
            if byte in _TEXT:
                text += 1
            elif byte:
                return False
    return 2 * text >= 4 * (hi - lo)
