"""Reading an observation back into card masks and numbers, for bots.

Bots get nothing but the observation dict of the environment (CONTRACT.md, "Policies"). This
module turns its flat array into the parts they need, using the observation layout's named
slices (``okgin_env.observation.layout_for``), so it follows the layout if slices move.
Card sets come back as 52-bit masks (bit ``id`` set = card present), like the rules core uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..observation import layout_for
from ..rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS
from ..rules.round import Phase


@lru_cache(maxsize=None)
def _size_to_players() -> dict[int, int]:
    return {layout_for(n).size: n for n in (2, 3, 4)}


def num_players_of(observation: np.ndarray) -> int:
    """The player count whose layout has this observation's size."""
    size = int(np.asarray(observation).shape[-1])
    try:
        return _size_to_players()[size]
    except KeyError:
        raise ValueError(
            f"observation of size {size} matches no layout (sizes: {sorted(_size_to_players())})"
        ) from None


def _plane(obs: np.ndarray, part: slice) -> int:
    bits = np.packbits(obs[part] > 0.5, bitorder="little")
    return int.from_bytes(bits.tobytes(), "little")


def _single(mask: int) -> int:
    return mask.bit_length() - 1 if mask else -1


@dataclass
class ObservationView:
    """What one seat knows, decoded. Opponent lists are indexed by ``k - 1`` (opponent k sits k seats later)."""

    num_players: int
    hand: int
    taken_card: int  # -1 if none
    discard_top: int  # -1 if the pile is empty
    discard_pile: int
    upcard: int
    opponent_known: list[int]
    opponent_passed: list[int]
    knock_limit: int
    stock_size: int
    phase: Phase
    acting_seat: int | None  # relative to the observer; 0 = the observer is to act
    seat_from_dealer: int  # 0 = the observer deals, 1 = first after the dealer, ...
    scores: list[float]  # match totals, observer first (in points)
    target_score: int
    reshuffles: int
    legal: list[int]  # legal action ids from the action mask, ascending

    @property
    def hand_count(self) -> int:
        return self.hand.bit_count()

    def legal_discards(self) -> list[int]:
        """Cards whose plain discard is legal."""
        return [a - DISCARD_BASE for a in self.legal if DISCARD_BASE <= a < KNOCK_BASE]

    def legal_knocks(self) -> list[int]:
        """Cards that may be discarded face down to knock."""
        return [a - KNOCK_BASE for a in self.legal if a >= KNOCK_BASE]


def view(observation: dict) -> ObservationView:
    """Decode the environment's observation dict (``{"observation", "action_mask"}``)."""
    obs = np.asarray(observation["observation"])
    mask = np.asarray(observation["action_mask"])
    if mask.shape != (NUM_ACTIONS,):
        raise ValueError(f"action_mask must have shape ({NUM_ACTIONS},), got {mask.shape}")
    n = num_players_of(obs)
    s = layout_for(n).slices
    target = int(round(float(obs[s["target_score"]][0]) * 100))
    acting = obs[s["acting_seat"]]
    return ObservationView(
        num_players=n,
        hand=_plane(obs, s["hand"]),
        taken_card=_single(_plane(obs, s["taken_card"])),
        discard_top=_single(_plane(obs, s["discard_top"])),
        discard_pile=_plane(obs, s["discard_pile"]),
        upcard=_single(_plane(obs, s["upcard"])),
        opponent_known=[_plane(obs, s[f"opponent_{k}_known"]) for k in range(1, n)],
        opponent_passed=[_plane(obs, s[f"opponent_{k}_passed"]) for k in range(1, n)],
        knock_limit=int(round(float(obs[s["knock_limit"]][0]) * 10)),
        stock_size=int(round(float(obs[s["stock_size"]][0]) * 52)),
        phase=Phase(int(np.argmax(obs[s["phase"]]))),
        acting_seat=int(np.argmax(acting)) if acting.any() else None,
        seat_from_dealer=int(np.argmax(obs[s["seat_from_dealer"]])),
        scores=[float(v) * target for v in obs[s["scores"]]],
        target_score=target,
        reshuffles=int(round(float(obs[s["reshuffles"]][0]))),
        legal=[int(a) for a in np.flatnonzero(mask)],
    )
