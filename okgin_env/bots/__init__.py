"""Bots that play Oklahoma Gin from the observation alone: ``policy.act(observation) -> int``.

| name | class | how it plays |
|---|---|---|
| ``random`` | ``RandomBot`` | a uniformly random legal action |
| ``simple`` | ``SimpleBot`` | Neller's SimpleGinRummyPlayer with the Oklahoma knock limit |
| ``search`` | ``SearchBot`` | determinized Monte Carlo search with ``simple`` rollouts |

``make_bot(name, seed=None, **kw)`` builds one by name; every bot takes ``seed`` and is
reproducible for a given seed.
"""

from __future__ import annotations

from typing import Any

from ._view import ObservationView, num_players_of, view
from .random_bot import RandomBot
from .search import SearchBot
from .simple import SimpleBot

BOTS: dict[str, type] = {"random": RandomBot, "simple": SimpleBot, "search": SearchBot}
BOT_NAMES = tuple(BOTS)


def make_bot(name: str, seed: int | None = None, **kw: Any):
    """A bot by name (``"random"``, ``"simple"``, ``"search"``); ``kw`` go to its constructor.

    Keyword arguments a bot does not use (e.g. ``rules`` for ``random``) are ignored.
    """
    try:
        cls = BOTS[name]
    except KeyError:
        raise ValueError(f"unknown bot {name!r}; known: {', '.join(BOT_NAMES)}") from None
    return cls(seed=seed, **kw)


__all__ = [
    "BOTS",
    "BOT_NAMES",
    "ObservationView",
    "RandomBot",
    "SearchBot",
    "SimpleBot",
    "make_bot",
    "num_players_of",
    "view",
]
