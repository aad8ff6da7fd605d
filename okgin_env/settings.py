"""One way to declare a validated setting, for the rules, the bots and the training commands.

``setting(default, help, low=..., high=..., choices=...)`` is a dataclass field whose metadata
holds its help and its range, declared once; ``expected`` says what a field takes in words and
``checked`` refuses a value outside it with a ``ValueError`` naming the setting::

    @dataclass(frozen=True)
    class Settings:
        rollouts: int = setting(480, "playouts per decision", low=1, high=10_000_000)

    checked("rollouts", 0, field_of(Settings, "rollouts").metadata)
    # ValueError: rollouts=0 is not allowed; expected an int in 1..10000000

The type is the default's (``kind`` where the default is None: an optional setting). ``low`` and
``high`` bound a number inclusively, ``above`` exclusively; ``choices`` lists the values a
setting takes. Further keywords are kept in the metadata for the layer that reads them (the
training commands' ``budget``, ``runtime`` and ``env``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .echo import shown


def setting(default: Any, help: str = "", *, kind: type | None = None, low: float | None = None,  # noqa: A002
            above: float | None = None, high: float | None = None, choices: tuple = (), optional: bool = False,
            **extra: Any) -> Any:
    """A dataclass field with its help and its range (see the module docstring); a default that is
    itself a dataclass (nested settings) is given by a factory."""
    kind = kind if kind is not None else type(default)
    metadata = {"help": help, "kind": kind, "low": low, "above": above, "high": high, "choices": tuple(choices),
                "optional": optional or default is None, **extra}
    if dataclasses.is_dataclass(default):
        return dataclasses.field(default_factory=lambda: default, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def range_text(meta: dict) -> str:
    """A number's bounds or a setting's choices in words (``at least 1 and at most 4``); empty if none."""
    if meta.get("choices"):
        return "one of " + ", ".join(str(choice) if choice != "" else "empty" for choice in meta["choices"])
    parts = []
    for key, words in (("low", "at least"), ("above", "above"), ("high", "at most")):
        bound = meta.get(key)
        if bound is not None:
            parts.append(f"{words} {bound:g}" if isinstance(bound, float) else f"{words} {bound}")
    return " and ".join(parts)


def expected(meta: dict) -> str:
    """What a setting takes, in words: ``an int in 1..52``, ``True or False``, ``'greedy' or 'uniform'``."""
    kind = meta["kind"]
    if meta.get("choices"):
        text = " or ".join(repr(choice) for choice in meta["choices"])
    elif kind is bool:
        text = "True or False"
    elif kind is str:
        text = "a file path"
    else:
        text = "an int" if kind is int else "a number"
        low, above, high = meta.get("low"), meta.get("above"), meta.get("high")
        if low is not None and high is not None:
            text += f" in {low}..{high}"
        elif above is not None:
            text += f" > {above}" + (f" and <= {high}" if high is not None else "")
        elif range_text(meta):
            text += f" {range_text(meta)}"
    return text + (", or None" if meta.get("optional") else "")


def of_kind(value: Any, kind: type, numpy_scalars: bool = True) -> bool:
    """``value`` is of a setting's type: an int (not a bool) for an int, a finite number for a float.
    Any int counts, numpy's too. ``numpy_scalars=False`` refuses numpy bools and floats (and numpy
    ints for a float), for a caller that keeps the value as given: a manifest would write a numpy
    bool as text."""
    if kind is bool:
        return isinstance(value, (bool, np.bool_) if numpy_scalars else bool)
    if isinstance(value, (bool, np.bool_)):
        return False
    if kind is int:
        return isinstance(value, (int, np.integer))
    if kind is float:
        if not numpy_scalars:
            return isinstance(value, (int, float)) and math.isfinite(value)
        # (an int too large for a float is out of range, not an OverflowError)
        return isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and math.isfinite(value))
    return isinstance(value, kind)


def in_range(value: Any, meta: dict, numpy_scalars: bool = True) -> bool:
    """``value`` is of the setting's type (``of_kind``) and within its bounds and choices; None
    only if optional."""
    kind = meta["kind"]
    if value is None:
        return bool(meta.get("optional"))
    if not of_kind(value, kind, numpy_scalars):
        return False
    if kind is str:  # (``nonempty``: a file path, which "" is not)
        if meta.get("choices"):
            return value in meta["choices"]
        return value != "" or not meta.get("nonempty")
    if kind not in (int, float):
        return True
    if meta.get("choices") and value not in meta["choices"]:
        return False
    low, above, high = meta.get("low"), meta.get("above"), meta.get("high")
    return bool((low is None or value >= low) and (above is None or value > above) and (high is None or value <= high))


def checked(name: str, value: Any, meta: dict, numpy_scalars: bool = True) -> Any:
    """``value`` as the setting's type (numpy scalars to Python ones), or a ``ValueError`` naming
    the setting and what it takes (``numpy_scalars``: as ``of_kind``'s)."""
    if not in_range(value, meta, numpy_scalars):
        raise ValueError(f"{name}={shown(value)} is not allowed; expected {expected(meta)}")
    return meta["kind"](value) if value is not None else None


def field_of(cls: type, name: str) -> dataclasses.Field:
    """The field ``name`` of the settings dataclass ``cls``."""
    return {item.name: item for item in dataclasses.fields(cls)}[name]


__all__ = ["checked", "expected", "field_of", "in_range", "of_kind", "range_text", "setting"]
