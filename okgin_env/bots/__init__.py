"""Bots that play Oklahoma Gin from the observation alone: ``policy.act(observation) -> int``.

| name | class | how it plays |
|---|---|---|
| ``random`` | ``RandomBot`` | a uniformly random legal action |
| ``simple`` | ``SimpleBot`` | Neller's SimpleGinRummyPlayer with the Oklahoma knock limit |
| ``search`` | ``SearchBot`` | determinized Monte Carlo search with ``simple`` rollouts |
| ``lookahead`` | ``LookaheadBot`` | one-draw lookahead: races to knock, holds a low hand for gin (the penalty policies' teacher) |
| ``aggressor`` | ``AggressorBot`` | held-out, for evaluation only: takes greedily, knocks at once |
| ``defender`` | ``DefenderBot`` | held-out, for evaluation only: safe discards, waits for a low knock |

``HELD_OUT_BOTS`` names the held-out bots (``okgin_env.bots.heldout``): opponents for measuring
how a policy generalises, never played by any training stage (the training code refuses them).

``make_bot(name, seed=None, **settings)`` builds one by name. Every bot takes ``seed`` (and is
reproducible for a given seed) and ``rules`` (the table's rules; all but ``search`` ignore
them); ``search`` and ``lookahead`` have more settings (``SearchSettings``, ``LookaheadSettings``). The settings are checked when the bot is
made (``okgin_env.bots.settings``): an unknown name, a wrong type or a value out of range raises a
ValueError that lists the bot's settings.
"""

from __future__ import annotations

from typing import Any

from ..observation import ObservationView, num_players_of, view
from .heldout import AggressorBot, DefenderBot
from .lookahead import LookaheadBot
from .random_bot import RandomBot
from .search import SearchBot
from .settings import LookaheadSettings, SearchSettings
from .simple import SimpleBot

BOTS: dict[str, type] = {
    "random": RandomBot,
    "simple": SimpleBot,
    "search": SearchBot,
    "lookahead": LookaheadBot,
    "aggressor": AggressorBot,
    "defender": DefenderBot,
}
BOT_NAMES = tuple(BOTS)
#: Bots for evaluation only: no training stage may play them (docs/api.md, Bots).
HELD_OUT_BOTS = ("aggressor", "defender")


def make_bot(name: str, seed: int | None = None, **settings: Any):
    """A bot by name (one of ``BOT_NAMES``) with its ``settings``.

    ``rules`` is accepted by every bot (all but ``search`` ignore it), so a caller may pass
    the table's rules to any of them; a setting the bot does not have, a wrong type or a value
    out of range raises a ValueError (never a TypeError) naming it and listing the bot's settings.
    """
    cls = BOTS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown bot {name!r}; known: {', '.join(BOT_NAMES)}")
    return cls(seed=seed, **settings)


__all__ = [
    "AggressorBot",
    "BOTS",
    "BOT_NAMES",
    "DefenderBot",
    "HELD_OUT_BOTS",
    "LookaheadBot",
    "LookaheadSettings",
    "ObservationView",
    "RandomBot",
    "SearchBot",
    "SearchSettings",
    "SimpleBot",
    "make_bot",
    "num_players_of",
    "view",
]
