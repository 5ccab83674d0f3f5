"""QEMU's two instruction oracles give the same traces (decision 0155).

trace_pcs counts executed instructions with the pccount plugin (tests/oracles/pccount.c)
unless asked for QEMU's ``-d exec`` log; the log is the independent oracle here: per-PC
counts, exit status, output and the code's bounds must be the same, on programs that exit,
that are killed by a signal after a fault, that fork, that run threads through the same
code at once (the plugin's adds must be atomic), and on x86-64.
``scripts/trace_oracles_agree.py`` runs a wider set (Go, exec, handlers, ``ls``).
Also: the choice of oracle (``ANVIL_TRACE_ORACLE``, the log for ``memory_ops``) and the
fallback to the log when the plugin cannot count.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.oracles import qemu_trace
from tests.oracles.oracle_agreement import compare
from tests.oracles.qemu_trace import QemuTraceError, trace_pcs
from tests.support import samples
from tests.test_fatal_signals import DIES_C
from tests.test_threads import THREADS_C


@pytest.fixture(scope="module", autouse=True)
def _plugin() -> None:
    """The plugin, built (the bootstrap builds it; what these tests compare needs it)."""
    try:
        qemu_trace.counting_plugin(required=True)
    except QemuTraceError as exc:
        pytest.fail(f"pccount cannot be built here: {exc}")


def _c_program(tmp_path: Path, text: str, flags: list[str]) -> Path:
    source = tmp_path / "prog.c"
    source.write_text(text)
    binary = tmp_path / "prog"
    subprocess.run(["arm-linux-gnueabihf-gcc", "-O2", *flags, str(source), "-o", str(binary), "-lpthread"],
                   check=True)
    return binary


def _assert_agree(binary: Path, args: list[str], tmp_path: Path) -> None:
    agreement = compare(binary, args, argv0="prog", cwd=tmp_path)
    assert agreement.agree, agreement.describe()


@pytest.mark.parametrize(("flags", "how"), [(["-mthumb"], "segv"), (["-marm", "-static"], "abort")],
                         ids=["thumb-dyn-segv", "arm-static-abort"])
def test_a_program_killed_by_a_signal(flags: list[str], how: str, tmp_path: Path) -> None:
    """QEMU runs no plugin's exit callback for a program a signal kills: the counts are in the
    shared table already. The faulting load is counted once, as the log counts it."""
    _assert_agree(_c_program(tmp_path, DIES_C, flags), [how], tmp_path)


def test_threads_through_the_same_code(tmp_path: Path) -> None:
    """Four threads run one loop at once, each a vCPU of its own: a plain add per execution
    would lose counts; the plugin's are atomic. The executable's own counts: how often the C
    library's join and locks wait depends on the host's schedule (the log's writes
    serialise the threads, the plugin's run does not). Bound at start (``-z now``): threads
    that call a function for the first time at once may both run the PLT's resolver stub."""
    agreement = compare(_c_program(tmp_path, THREADS_C, ["-mthumb", "-Wl,-z,now"]), [], argv0="prog",
                        cwd=tmp_path, executable_only=True)
    assert agreement.agree, agreement.describe()


@pytest.mark.parametrize("variant", ["O2-arm-static", "O2-thumb-dyn"])
def test_forks(variant: str, tmp_path: Path) -> None:
    """A child shares its parent's table: its instructions after the fork count, its parent's
    before the fork once (as the log, which the child inherits and goes on writing)."""
    _assert_agree(samples.build("forks", variant), [], tmp_path)


def test_x86_64(tmp_path: Path) -> None:
    """qemu-x86_64: the same plugin, the same counts (x86-64 blocks hold many instructions)."""
    _assert_agree(samples.build_x86_64("sort", "x64-gcc-O2"), [], tmp_path)


def test_the_oracle_chosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin by default; the log with ANVIL_TRACE_ORACLE=log and for memory_ops."""
    binary = samples.build("sort", "O2-thumb-dyn")
    monkeypatch.delenv(qemu_trace.ORACLE_VARIABLE, raising=False)
    assert trace_pcs(binary, cwd=tmp_path).oracle == "plugin"
    assert trace_pcs(binary, cwd=tmp_path, memory_ops=True).oracle == "log"
    monkeypatch.setenv(qemu_trace.ORACLE_VARIABLE, "log")
    assert trace_pcs(binary, cwd=tmp_path).oracle == "log"
    monkeypatch.setenv(qemu_trace.ORACLE_VARIABLE, "other")
    with pytest.raises(QemuTraceError):
        trace_pcs(binary, cwd=tmp_path)


def test_a_full_table_falls_back_to_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table too small for the program's instructions: the log counts, the same counts."""
    binary = samples.build("sort", "O2-thumb-dyn")
    counted = trace_pcs(binary, cwd=tmp_path, oracle="plugin")
    monkeypatch.setattr(qemu_trace, "_PLUGIN_SLOTS", 64)
    fallen = trace_pcs(binary, cwd=tmp_path, oracle="plugin")
    assert (counted.oracle, fallen.oracle) == ("plugin", "log")
    assert counted.pcs == fallen.pcs


def test_no_plugin_warns_and_uses_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the plugin cannot be built (no network for QEMU's header): one warning, the log."""
    from benchmarks import qemu_plugins

    def fails(source: Path) -> Path:
        raise qemu_plugins.PluginBuildError("no network")

    monkeypatch.setattr(qemu_plugins, "compile_plugin", fails)
    monkeypatch.setattr(qemu_trace, "_plugin", [])
    monkeypatch.delenv(qemu_trace.ORACLE_VARIABLE, raising=False)
    with pytest.warns(UserWarning, match="no network"):
        assert qemu_trace.counting_plugin() is None
    assert qemu_trace.counting_plugin() is None  # warned once, remembered
    assert trace_pcs(samples.build("sort", "O2-thumb-dyn"), cwd=tmp_path).oracle == "log"
    with pytest.raises(QemuTraceError, match="no network"):
        qemu_trace.counting_plugin(required=True)
