"""The action layout (docs/api.md): ``Discrete(107)``, the same for every preset and player count."""

from __future__ import annotations

import operator
from typing import Any

from .cards import card_str

DRAW_STOCK = 0
TAKE_DISCARD = 1  # also: accept the upcard on the first turn
PASS = 2  # decline the upcard on the first turn
DISCARD_BASE = 3  # 3 + c: discard card c
KNOCK_BASE = 55  # 55 + c: knock, discarding card c face down
NUM_ACTIONS = 107


def action_index(value: Any) -> int | None:
    """``value`` as a Python int if it is an integer: a Python or numpy int, or a 0-d integer array
    or tensor (what ``logits.argmax()`` gives); None for a bool, a float, text or anything else.
    The one reading of an action every env, the match loop and the rules core share."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or "bool" in str(getattr(value, "dtype", "")):  # True is no action id
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def discard_action(card: int) -> int:
    return DISCARD_BASE + card


def knock_action(card: int) -> int:
    return KNOCK_BASE + card


def action_str(action: int) -> str:
    """Readable name of an action id, e.g. ``"discard TD"`` (an action as ``action_index`` reads it)."""
    given, action = action, action_index(action)
    if action is None:
        raise ValueError(f"action must be an int in 0..{NUM_ACTIONS - 1}, got {given!r}")
    if action == DRAW_STOCK:
        return "draw stock"
    if action == TAKE_DISCARD:
        return "take discard"
    if action == PASS:
        return "pass"
    if DISCARD_BASE <= action < KNOCK_BASE:
        return f"discard {card_str(action - DISCARD_BASE)}"
    if KNOCK_BASE <= action < NUM_ACTIONS:
        return f"knock {card_str(action - KNOCK_BASE)}"
    raise ValueError(f"action must be an int in 0..{NUM_ACTIONS - 1}, got {given!r}")
