"""Run the longest tests first, so that `pytest -n 2` does not end on one long test.

pytest-xdist hands the tests to its workers in collection order, one at a time as a worker
starts its next (tests/conftest.py; decision 0095); when the last ones are long, one
worker runs them while the other waits. ``order`` sorts the modules by
their tests' total time and each module's tests by their own, longest first, from
``tests/data/durations.json`` (recorded on one run, tests of half a second or more; a
test it does not list counts as ``UNKNOWN`` seconds). A module's tests stay together, so its module-scoped fixtures are
set up once per worker. The times only decide the order: a stale file costs speed,
never a result.

Recording: ``python3 -m pytest -q -n 2 --durations=0 --durations-min=0.5 > log``, then
``python3 -m tests.support.durations log > tests/data/durations.json``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parents[1] / "data" / "durations.json"
UNKNOWN = 0.5  # seconds: the file leaves out shorter tests
_LINE = re.compile(r"^\s*([0-9.]+)s\s+(?:setup|call|teardown)\s+(\S+)\s*$")


def order(items: list[pytest.Item]) -> None:
    """Sort ``items`` in place: the longest modules first, within each the longest tests."""
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    cost = {item.nodeid: known.get(item.nodeid, UNKNOWN) for item in items}
    per_module: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        per_module[module] = per_module.get(module, 0.0) + cost[item.nodeid]
    items.sort(key=lambda item: (-per_module[item.nodeid.split("::")[0]], item.nodeid.split("::")[0],
                                 -cost[item.nodeid]))


def parse(lines: Iterable[str]) -> dict[str, float]:
    """Each test's setup, call and teardown seconds from pytest's ``--durations=0`` report."""
    total: dict[str, float] = {}
    for line in lines:
        match = _LINE.match(line)
        if match:
            total[match[2]] = total.get(match[2], 0.0) + float(match[1])
    return {nodeid: round(seconds, 1) for nodeid, seconds in sorted(total.items())}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 -m tests.support.durations PYTEST_LOG > tests/data/durations.json")
    json.dump(parse(Path(sys.argv[1]).read_text().splitlines()), sys.stdout, indent=0)
    sys.stdout.write("\n")
