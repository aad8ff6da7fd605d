"""What a message echoes of user input: ``shown(value)``, its repr cut to about 80 characters, and
``clipped(text)``, another component's message cut to a few lines' length."""

from __future__ import annotations

import reprlib
import sys
from typing import Any

_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlevel = 80, 80, 3


def shown(value: Any) -> str:
    """``repr(value)`` cut to about 80 characters: what a message echoes of a spec or path, so that a
    huge one (a 200,000-character spec) cannot flood the message."""
    try:
        return _SHORT.repr(value)
    except ValueError:  # an int too long for Python to turn into text
        return f"an int of more than {sys.get_int_max_str_digits()} digits"


MESSAGE_LIMIT = 400  # characters of another component's message (a loader's) that one error line repeats


def clipped(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out: a message built by code
    that did not shorten what it echoes (a third-party loader's) stays one readable line."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def failure(error: BaseException) -> str:
    """``"RuntimeError: the first line of its message"``: how a message names a failure of someone
    else's code (a user's agent) in one line."""
    text = str(error).strip()
    return f"{type(error).__name__}: {clipped(text.splitlines()[0], 200)}" if text else type(error).__name__
