"""The descent's answers about single entries (decision 0072) against the whole-program ones.

``_Evidence`` finds the strength of one entry by walking back from it, and whether one
procedure returns by walking its tail calls, where ``_strengths`` and ``_returning`` compute
every entry's from the roots: on stripped programs, every answer the descent asks for must be
the one the whole computation gives, and the sorted entries ``_Logged`` keeps up to date
must be the entries sorted.
"""

from __future__ import annotations

import pytest

from rewriter.ir import discovery
from rewriter.ir.elf_loader import load_binary
from tests.support.samples import build, stripped


def _whole(evidence: discovery._Evidence) -> tuple[set[int], dict[int, int]]:
    unwound: dict[int, tuple[int, set[int]]] = {}
    for pad, starts in evidence.found.pad_of.items():
        for start in starts:
            unwound.setdefault(start, (0, set()))[1].add(pad)
    returning = discovery._returning(evidence.found, evidence.plt, evidence.noreturn)
    return returning, discovery._strengths(evidence.roots, evidence.entries, evidence.found, returning, unwound)


@pytest.mark.parametrize("sample,variant", [("containers", "O2-arm-lto-static"), ("calls", "Os-thumb-static")])
def test_single_answers_are_the_whole_programs(sample: str, variant: str, tmp_path, monkeypatch) -> None:
    asked = {"strength": 0, "returns": 0, "order": 0}
    strength, returns, changes = discovery._Evidence.strength, discovery._Evidence.returns, discovery._Logged.changes

    def checked_strength(self: discovery._Evidence, entry: int) -> int:
        got = strength(self, entry)
        assert got == _whole(self)[1].get(entry, discovery.DOUBTFUL), hex(entry)
        asked["strength"] += 1
        return got

    def checked_returns(self: discovery._Evidence, address: int) -> bool:
        got = returns(self, address)
        assert got == (address in _whole(self)[0]), hex(address)
        asked["returns"] += 1
        return got

    def checked_changes(self: discovery._Logged) -> tuple[set[int], set[int]]:
        got = changes(self)
        if self._ordered:
            assert self.order() == sorted(self)
            asked["order"] += 1
        return got

    monkeypatch.setattr(discovery._Evidence, "strength", checked_strength)
    monkeypatch.setattr(discovery._Evidence, "returns", checked_returns)
    monkeypatch.setattr(discovery._Logged, "changes", checked_changes)
    binary = load_binary(str(stripped(build(sample, variant), tmp_path / "stripped")))
    assert "no symbols or mapping symbols: code found by recursive descent" in binary.notes
    assert asked["strength"] and asked["returns"] and asked["order"] > 10, asked
