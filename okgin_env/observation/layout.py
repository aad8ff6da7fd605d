"""The observation's layout: named slices of the flat array for each player count, and the scales
of its numbers (see the package docstring for the table)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..rules.cards import NUM_CARDS
from ..rules.config import is_int

OBSERVATION_VERSION = 1

KNOCK_LIMIT_SCALE = 10.0
STOCK_SCALE = 52.0
TARGET_SCALE = 100.0
#: What each numeric slice is divided by (``scores`` by the match's target score).
SCALES = {"knock_limit": KNOCK_LIMIT_SCALE, "stock_size": STOCK_SCALE, "target_score": TARGET_SCALE}
PLAYER_COUNTS = (2, 3, 4)
#: The env option ``observation``: the card layout alone, or followed by the solver features.
OBSERVATIONS = ("cards", "features")
#: Parts after the card layout, by observation kind: the package above the codec that computes them
#: declares them (``register_observation``; ``okgin_env.features`` does so when imported), so
#: that the codec imports nothing above it.
_ADDED_PARTS: dict[str, tuple[tuple[str, int], ...]] = {"cards": ()}
_ADDED_DECODERS: dict[str, object] = {}


def register_observation(observation: str, parts, decode) -> None:
    """Declare the slices (``(name, width)`` pairs) that follow the card layout in observations of
    kind ``observation`` (one of ``OBSERVATIONS``), and ``decode(values) -> dict`` that reads them."""
    if observation not in OBSERVATIONS or observation == "cards":
        raise ValueError(f"observation={observation!r}; a kind to register is one of {OBSERVATIONS[1:]}")
    _ADDED_PARTS[observation] = tuple((str(name), int(width)) for name, width in parts)
    _ADDED_DECODERS[observation] = decode
    _slices.cache_clear()
    _size.cache_clear()


def added_parts(observation: str) -> tuple[tuple[str, int], ...]:
    """The slices that follow the card layout in ``observation``'s kind (none for ``"cards"``)."""
    try:
        return _ADDED_PARTS[observation]
    except KeyError:
        raise ValueError(f"observation={observation!r}: its slices are declared by okgin_env.features; "
                         "import okgin_env.features first (every env does)") from None


def added_decoder(observation: str):
    """``decode(values) -> dict`` for the slices after the card layout in ``observation``'s kind."""
    added_parts(observation)
    return _ADDED_DECODERS[observation]


def check_observation(observation: object) -> str:
    """``observation`` if it is one of ``OBSERVATIONS``; else a ValueError naming the allowed values."""
    if not isinstance(observation, str) or observation not in OBSERVATIONS:
        raise ValueError(f"observation={observation!r}; allowed: {', '.join(map(repr, OBSERVATIONS))}")
    return observation


@dataclass(frozen=True)
class ObservationLayout:
    """Named slices of the flat observation for one player count (and ``observation`` option)."""

    num_players: int
    observation: str = "cards"

    @property
    def card_planes(self) -> tuple[str, ...]:
        opponents = []
        for k in range(1, self.num_players):
            opponents += [f"opponent_{k}_known", f"opponent_{k}_passed"]
        return ("hand", "taken_card", "discard_top", "discard_pile", "upcard", *opponents)

    @property
    def scalar_parts(self) -> tuple[tuple[str, int], ...]:
        n = self.num_players
        return (
            ("knock_limit", 1),
            ("stock_size", 1),
            ("phase", 4),
            ("acting_seat", n),
            ("seat_from_dealer", n),
            ("scores", n),
            ("target_score", 1),
            ("reshuffles", 1),
        )

    @property
    def slices(self) -> dict[str, slice]:
        return _slices(self.num_players, self.observation)

    @property
    def size(self) -> int:
        return _size(self.num_players, self.observation)


@lru_cache(maxsize=None)
def _slices(num_players: int, observation: str = "cards") -> dict[str, slice]:
    layout = ObservationLayout(num_players)
    parts = [(name, NUM_CARDS) for name in layout.card_planes] + list(layout.scalar_parts)
    parts += added_parts(observation)
    result, start = {}, 0
    for name, width in parts:
        result[name] = slice(start, start + width)
        start += width
    return result


@lru_cache(maxsize=None)
def _size(num_players: int, observation: str = "cards") -> int:
    return max(s.stop for s in _slices(num_players, observation).values())


def layout_for(num_players: int, observation: str = "cards") -> ObservationLayout:
    """The layout of ``num_players`` (2, 3 or 4) and the ``observation`` option; a ValueError otherwise."""
    if not is_int(num_players) or num_players not in PLAYER_COUNTS:
        raise ValueError(f"num_players={num_players!r}; allowed: {', '.join(map(str, PLAYER_COUNTS))}")
    return ObservationLayout(int(num_players), check_observation(observation))


def layout_of(observation: np.ndarray) -> ObservationLayout:
    """The layout (player count and ``observation`` option) that has this observation's size."""
    size = int(np.asarray(observation).shape[-1])
    kinds = [kind for kind in OBSERVATIONS if kind in _ADDED_PARTS]
    for kind in kinds:
        for n in PLAYER_COUNTS:
            if _size(n, kind) == size:
                return ObservationLayout(n, kind)
    raise ValueError(f"observation of size {size} matches no layout (sizes for 2-4 players: "
                     f"{ {kind: [_size(n, kind) for n in PLAYER_COUNTS] for kind in kinds} })")


def num_players_of(observation: np.ndarray) -> int:
    """The player count whose layout (either ``observation`` option) has this observation's size."""
    return layout_of(observation).num_players
