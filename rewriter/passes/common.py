"""Things every tool shares: output formats, option parsers."""

from __future__ import annotations

FORMATS = {"text": 0, "json": 1}


def parse_size(text: str) -> int:
    """'32k' -> 32768, '1m' -> 1048576, '64' -> 64."""
    text = text.strip().lower()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:], 1)
    if scale != 1:
        text = text[:-1]
    if text.endswith("i"):
        text = text[:-1]
    return int(text, 0) * scale


def power_of_two(value: int) -> str | None:
    """An Option check: the value must be a power of two."""
    if value <= 0 or value & (value - 1):
        return "must be a power of two"
    return None
