"""A pattern source's regular expression as the engine reads it (RE2)."""

from __future__ import annotations

import re


def pattern_of(pattern: re.Pattern[str]) -> str:
    """The regular expression a pattern source sends the engine: the
    pattern's text, with re.IGNORECASE and re.DOTALL as RE2's inline
    ``(?i)`` and ``(?s)``; other flags are refused."""
    if not isinstance(pattern.pattern, str):
        raise TypeError("stream: a topic pattern must be a str pattern, not bytes")
    other = pattern.flags & ~(re.UNICODE | re.IGNORECASE | re.DOTALL)
    if other:
        raise ValueError(f"stream: pattern {pattern.pattern!r} has flags {re.RegexFlag(other)!r}; a topic pattern takes only IGNORECASE and DOTALL")
    inline = ("i" if pattern.flags & re.IGNORECASE else "") + ("s" if pattern.flags & re.DOTALL else "")
    return (f"(?{inline})" if inline else "") + pattern.pattern
