"""Number and string formatting for Python analyses, matching runtime_stubs/common/anvil_format.c.

A Python tool that must write byte for byte what its C twin writes uses these.
"""

from __future__ import annotations

U64 = (1 << 64) - 1  # the C keeps counts in uint64_t: sums wrap like this mask


def ratio(num: int, den: int, decimals: int) -> str:
    """anvil_put_ratio: num/den with ``decimals`` digits after the point, rounded down (uint64 arithmetic)."""
    if den == 0:
        return "0"
    scale = 10**decimals
    scaled = (num * scale & U64) // den
    if not decimals:
        return str(scaled // scale)
    return f"{scaled // scale}.{scaled % scale:0{decimals}d}"


def json_string(s: str) -> str:
    """anvil_put_json_string: quotes, with only '"' and '\\' escaped."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
