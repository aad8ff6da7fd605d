"""Bots that play Oklahoma Gin from the observation alone: ``policy.act(observation) -> int``.

| name | class | how it plays |
|---|---|---|
| ``random`` | ``RandomBot`` | a uniformly random legal action |
| ``simple`` | ``SimpleBot`` | Neller's SimpleGinRummyPlayer with the Oklahoma knock limit |
| ``search`` | ``SearchBot`` | determinized Monte Carlo search with ``simple`` rollouts |

``make_bot(name, seed=None, **settings)`` builds one by name. Every bot takes ``seed`` (and is
reproducible for a given seed) and ``rules`` (the table's rules; ``random`` and ``simple`` ignore
them); ``search`` has more settings (``SearchSettings``). The settings are checked when the bot is
made (``okgin_env.bots.settings``): an unknown name, a wrong type or a value out of range raises a
ValueError that lists the bot's settings.
"""

from __future__ import annotations

from typing import Any

from ..observation import ObservationView, num_players_of, view
from .random_bot import RandomBot
from .search import SearchBot
from .settings import SearchSettings
from .simple import SimpleBot

BOTS: dict[str, type] = {"random": RandomBot, "simple": SimpleBot, "search": SearchBot}
BOT_NAMES = tuple(BOTS)


def make_bot(name: str, seed: int | None = None, **settings: Any):
    """A bot by name (``"random"``, ``"simple"``, ``"search"``) with its ``settings``.

    ``rules`` is accepted by every bot (``random`` and ``simple`` ignore it), so a caller may pass
    the table's rules to any of them; a setting the bot does not have, a wrong type or a value
    out of range raises a ValueError (never a TypeError) naming it and listing the bot's settings.
    """
    cls = BOTS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown bot {name!r}; known: {', '.join(BOT_NAMES)}")
    return cls(seed=seed, **settings)


__all__ = [
    "BOTS",
    "BOT_NAMES",
    "ObservationView",
    "RandomBot",
    "SearchBot",
    "SearchSettings",
    "SimpleBot",
    "make_bot",
    "num_players_of",
    "view",
]
