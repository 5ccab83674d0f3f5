"""Shared fixtures: repository root on sys.path so tests import tests.support and tests.oracles."""

import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# `pytest -n 2` keeps both cores busy with a worker each: a rewrite's second process
# would only add the cost of its messages. The image is the same with one process as
# with two (decision 0026); tests/test_later_part.py makes both and compares them.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) >= 2:
    os.environ.setdefault("ANVIL_JOBS", "1")

# One name for this run, which its xdist workers inherit: the QEMU traces a run keeps for
# its later tests (tests/oracles/trace_cache.py).
if "ANVIL_TEST_RUN" not in os.environ:
    os.environ["ANVIL_TEST_RUN"] = uuid.uuid4().hex
    from tests.oracles import trace_cache

    trace_cache.prune()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--extended", action="store_true",
                     help="also run the tests marked extended: more builds of what the default run checks "
                          "(decision 0129)")


def pytest_configure(config: pytest.Config) -> None:
    """Under ``pytest -n``, each worker is handed the next test when it starts one (xdist's
    ``--maxschedchunk 1``; decision 0095), unless the command line says otherwise. xdist's
    default first hands each worker an eighth of the tests in a row: the first worker's
    eighth was the longest modules (the order below), more than half of the run's time,
    and the second worker idled for the last 6 to 8 minutes of a 32-minute run."""
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """The longest tests first (tests/support/durations.py); without ``--extended``, the
    tests marked ``extended`` deselected (not skipped: the default run does not own them)."""
    from tests.support.durations import order

    if not config.getoption("--extended"):
        extended = [item for item in items if item.get_closest_marker("extended")]
        if extended:
            config.hook.pytest_deselected(items=extended)
            items[:] = [item for item in items if not item.get_closest_marker("extended")]
    order(items)


@pytest.fixture(scope="module")
def rehost_server():
    """One in-process ReHost server (the C analysis of each binary's tool) for a module's
    runs; yields its address."""
    from rehost.server import Library, start_server

    srv, port = start_server(Library(None), log=None)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        srv.stop(None)
