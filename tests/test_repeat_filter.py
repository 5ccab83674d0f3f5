"""RepeatFilter declarations: what a tool may ask for is checked when it declares it.

(What a filter does at run time is covered by the cachesim oracles: every cachesim
result in the suite passes through its two-deep filter, in T32 and A32, with d16-d31
and with the stack fallback; direct-mapped caches through a one-deep one. The T32 test
itself is checked under unicorn in test_encoders.)
"""

from __future__ import annotations

import pytest

from rewriter.api import Arg, RepeatFilter, Tool
from rewriter.errors import AnvilError


def _tool() -> Tool:
    tool = Tool()
    tool.array("skipped", 2)
    return tool


def test_filter_gets_its_slot_table_and_counter_length() -> None:
    tool = _tool()
    proto = tool.prototype("f", Arg.EFFADDR, Arg.ACCESS_IS_STORE,
                           filter=RepeatFilter(shift=6, slots=32, counter="skipped", count_by=1))
    assert proto.filter is not None and proto.filter.counts == 2 and proto.filter.slot_bits == 5
    # The counter lives right after the 32 slots (one base register reaches both).
    assert tool.filter_arrays() == {"filter_f": ("uint32_t", 32 + 2 * 2)}
    assert tool.filter_placement() == {"skipped": ("filter_f", 4 * 32)}
    assert "filter_f" not in tool.arrays  # target memory only: never reported or shipped


def test_a_two_deep_filter_has_two_words_per_slot() -> None:
    tool = _tool()
    proto = tool.prototype("f", Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT,
                           filter=RepeatFilter(shift=6, slots=32, counter="skipped", count_by=1, depth=2))
    assert proto.filter is not None and proto.filter.counter_offset == 2 * 4 * 32
    assert tool.filter_arrays() == {"filter_f": ("uint32_t", 2 * 32 + 2 * 2)}
    assert Arg.FILTER_LEFT.dynamic  # ReHost records carry it


def test_a_counter_lives_after_one_slot_table_only() -> None:
    tool = _tool()
    first = tool.prototype("f", Arg.EFFADDR, Arg.ACCESS_IS_STORE, filter=RepeatFilter(4, 1, "skipped", 1))
    second = tool.prototype("g", Arg.EFFADDR, Arg.ACCESS_IS_STORE, filter=RepeatFilter(6, 8, "skipped", 1))
    assert first.filter.counter_offset == 8  # one 4-byte slot, the counter 8-aligned
    assert second.filter.counter_offset is None
    assert tool.filter_arrays() == {"filter_f": ("uint32_t", 2 + 2 * 2), "filter_g": ("uint32_t", 8)}
    assert tool.filter_placement() == {"skipped": ("filter_f", 8)}


@pytest.mark.parametrize("kinds, flt, problem", [
    ((Arg.CONST, Arg.ACCESS_IS_STORE), RepeatFilter(6, 32, "skipped", 1), "key must be"),
    ((Arg.EFFADDR, Arg.EFFADDR), RepeatFilter(6, 32, "skipped", 1), "count_by must be"),
    ((Arg.EFFADDR, Arg.ACCESS_IS_STORE), RepeatFilter(0, 32, "skipped", 1), "shift"),
    ((Arg.EFFADDR, Arg.ACCESS_IS_STORE), RepeatFilter(6, 24, "skipped", 1), "power of two"),
    ((Arg.EFFADDR, Arg.ACCESS_IS_STORE), RepeatFilter(6, 32, "nothing", 1), "must be declared"),
    ((Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT), RepeatFilter(6, 32, "skipped", 1, depth=3), "depth"),
    ((Arg.EFFADDR, Arg.ACCESS_IS_STORE), RepeatFilter(6, 32, "skipped", 1, depth=2), "needs a FILTER_LEFT"),
    ((Arg.EFFADDR, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT), RepeatFilter(13, 32, "skipped", 1), "at most 12"),
    ((Arg.EFFADDR, Arg.FILTER_LEFT, Arg.ACCESS_IS_STORE, Arg.FILTER_LEFT), RepeatFilter(6, 32, "skipped", 2),
     "one argument"),
])
def test_bad_filters_are_refused(kinds, flt, problem) -> None:
    with pytest.raises(AnvilError, match=problem):
        _tool().prototype("f", *kinds, filter=flt)


def test_const_counter_index_is_checked_at_the_call() -> None:
    proto = _tool().prototype("f", Arg.EFFADDR, Arg.CONST, filter=RepeatFilter(6, 32, "skipped", 1))
    proto.check_args((Arg.EFFADDR, 1))
    with pytest.raises(AnvilError, match="outside skipped"):
        proto.check_args((Arg.EFFADDR, 2))


def test_filter_left_needs_a_filter() -> None:
    with pytest.raises(AnvilError, match="needs a repeat filter"):
        _tool().prototype("f", Arg.EFFADDR, Arg.FILTER_LEFT)


@pytest.mark.parametrize("kind, value", [(Arg.CONST, "1"), (Arg.STRING, 3), (Arg.REG_VALUE, 16),
                                         (Arg.REG_VALUE, Arg.REG_VALUE), (Arg.EFFADDR, 0),
                                         (Arg.EFFADDR, Arg.ACCESS_SIZE)])
def test_call_arguments_must_fit_their_kinds(kind: Arg, value: object) -> None:
    proto = Tool().prototype("f", kind)
    with pytest.raises(AnvilError, match="does not fit kind"):
        proto.check_args((value,))
    proto.check_args(({Arg.CONST: 1, Arg.STRING: "s", Arg.REG_VALUE: 15}.get(kind, kind),))
