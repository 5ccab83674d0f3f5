"""Checks of the sample builder (tests/support/samples.py): builds, caching and qemu runs."""

from __future__ import annotations

import pytest

from tests.support import samples

#: One dynamic PIE variant: it also checks that qemu-arm finds the armhf sysroot.
VARIANT = "O2-thumb-dyn"


@pytest.mark.parametrize("sample", samples.SAMPLES)
def test_sample_builds_and_runs(sample: str) -> None:
    """Each sample builds, runs under qemu-arm, prints something and exits as expected."""
    exe = samples.build(sample, VARIANT)
    result = samples.run_qemu(exe, argv0=sample)
    assert result.returncode == samples.EXPECTED_STATUS[sample], result.stderr.decode()
    assert result.stdout.strip()
    assert b"FAIL" not in result.stdout


def test_build_is_cached() -> None:
    """A second build of the same sample and variant reuses the first binary."""
    first = samples.build("addresses", "O0-thumb-static")
    mtime = first.stat().st_mtime_ns
    second = samples.build("addresses", "O0-thumb-static")
    assert second == first
    assert second.stat().st_mtime_ns == mtime


def test_variants_are_distinct() -> None:
    """Different variants give different cache entries."""
    paths = {samples.build("calls", variant) for variant in ("O2-arm-static", "Os-thumb-static")}
    assert len(paths) == 2


def test_calls_sees_argv_and_stdin() -> None:
    """run_qemu passes arguments, standard input and argv[0] through to the program."""
    exe = samples.build("calls", "O0-arm-dyn")
    result = samples.run_qemu(exe, ["stdin", "two"], stdin=b"x" * 5000, argv0="calls")
    assert result.returncode == 3
    out = result.stdout.decode()
    assert "argc=3\n" in out
    assert "argv[2]=two\n" in out
    assert "stdin bytes=5000\n" in out
    assert result.stderr == b"calls: this line goes to stderr\n"


def test_addresses_are_reproducible() -> None:
    """The same binary, argv and environment print the same addresses twice."""
    exe = samples.build("addresses", "O2-arm-dyn-nopie")
    runs = [samples.run_qemu(exe, argv0="addresses").stdout for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0].startswith(b"global=0x")


def test_unknown_names_are_rejected() -> None:
    """Unknown samples and variants raise a SampleBuildError naming the problem."""
    with pytest.raises(samples.SampleBuildError, match="variant"):
        samples.build("calls", "O9-nothing")
    with pytest.raises(samples.SampleBuildError, match="sample"):
        samples.build("no-such-sample", VARIANT)


def test_lua_interpreter_runs_bench() -> None:
    """The Lua interpreter built from Debian's liblua5.4.a runs the bench script."""
    lua = samples.build_lua()
    result = samples.run_qemu(lua, [str(samples.LUA_BENCH)], argv0="lua")
    assert result.returncode == 0, result.stderr.decode()
    assert b"fib(18) = 2584" in result.stdout
    assert b"agree=true" in result.stdout
