"""Words in data that are numbers counting up or down, not code addresses.

A table of numbers (the Unicode code points of glibc's transliteration tables, say) reads
as code addresses where its values fall in the text: in a static program the code points
0x1d5ee, 0x1d5ef, ... land on every halfword of a function, odd ones with the Thumb bit.
Two words one apart cannot both be code addresses (they would name the same instruction in
both instruction sets), so such pairs, at the stride of a table of words or of pairs, are
taken as numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

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
