"""Oracles for testing Anvil: independent of the rewriter's own code.

* :mod:`tests.oracles.qemu_trace`: executed-instruction counts per PC from
  ``qemu-arm -singlestep -d exec,nochain`` (any Linux ARM program).
* :mod:`tests.oracles.unicorn_trace`: data-access streams, output and
  instruction counts of freestanding ARM ELFs run in unicorn.
* :mod:`tests.oracles.cache_model`: a plain-Python LRU data-cache model.
* :mod:`tests.oracles.freestanding`: freestanding sample programs and builders.

Submodules are imported on demand, so a missing optional dependency (unicorn)
only affects the oracle that needs it.
"""
