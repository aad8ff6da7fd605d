"""What one seat may know, as one flat float32 array built from named slices.

Layout (version ``OBSERVATION_VERSION``), for ``N`` players; "opponent k" is the seat ``k`` places
after the observer (k = 1 … N-1). Card planes hold 52 entries, one per card id (RULES.md §1).

| slice | size | meaning |
|---|---|---|
| ``hand`` | 52 | cards in the observer's hand |
| ``taken_card`` | 52 | the card the observer took from the discard pile this turn (may not be discarded) |
| ``discard_top`` | 52 | top card of the discard pile |
| ``discard_pile`` | 52 | every card now in the discard pile (the public history of throws) |
| ``upcard`` | 52 | the round's first upcard (sets the knock limit) |
| ``opponent_k_known`` | 52 | cards opponent k is known to hold (taken from the pile, not thrown since); at the end of a round, the hand they showed |
| ``opponent_k_passed`` | 52 | cards opponent k declined (upcard passed, discard top left for the stock) or threw |
| ``knock_limit`` | 1 | knock limit / 10 (0 = gin only) |
| ``stock_size`` | 1 | cards in the stock / 52 |
| ``phase`` | 4 | one-hot: upcard offer, draw, discard, round over |
| ``acting_seat`` | N | one-hot, relative to the observer (index 0 = the observer is to act) |
| ``seat_from_dealer`` | N | one-hot: 0 = the observer deals, 1 = first after the dealer, … |
| ``scores`` | N | match totals / target_score, observer first, then opponents 1 … N-1 |
| ``target_score`` | 1 | target_score / 100 |
| ``reshuffles`` | 1 | stock reshuffles so far this round (penalty preset) |

Nothing else is encoded: no opponent card that was not shown, no stock order. ``decode`` turns
an observation back into named, readable parts and ``to_text`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .rules.cards import NUM_CARDS, card_str
from .rules.round import Phase, RoundState

OBSERVATION_VERSION = 1


@dataclass(frozen=True)
class ObservationLayout:
    """Named slices of the flat observation for one player count."""

    num_players: int

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
        return _slices(self.num_players)

    @property
    def size(self) -> int:
        return _size(self.num_players)

    @property
    def num_card_bits(self) -> int:
        return NUM_CARDS * len(self.card_planes)


@lru_cache(maxsize=None)
def _slices(num_players: int) -> dict[str, slice]:
    layout = ObservationLayout(num_players)
    result, start = {}, 0
    for name in layout.card_planes:
        result[name] = slice(start, start + NUM_CARDS)
        start += NUM_CARDS
    for name, width in layout.scalar_parts:
        result[name] = slice(start, start + width)
        start += width
    return result


@lru_cache(maxsize=None)
def _size(num_players: int) -> int:
    return max(s.stop for s in _slices(num_players).values())


def layout_for(num_players: int) -> ObservationLayout:
    return ObservationLayout(num_players)


def encode(round_state: RoundState, scores: list[int], target_score: int, observer: int) -> np.ndarray:
    """The observation of seat ``observer`` (float32, ``layout_for(n).size`` entries)."""
    st = round_state
    n = st.num_players
    over = st.phase is Phase.OVER
    taken = 1 << st.taken_card if st.taken_card >= 0 and st.current == observer and not over else 0
    pile = 0
    for card in st.discard_pile:
        pile |= 1 << card
    top = 1 << st.discard_pile[-1] if st.discard_pile else 0
    # All card planes packed into one big int, then unpacked to bits in a single numpy call.
    bits = st.hands[observer] | taken << 52 | top << 104 | pile << 156 | (1 << st.upcard) << 208
    shift = 260
    for k in range(1, n):
        seat = (observer + k) % n
        known = st.hands[seat] if over else st.known[seat]
        bits |= known << shift | st.passed[seat] << (shift + 52)
        shift += 104
    num_bits = shift
    planes = np.unpackbits(np.frombuffer(bits.to_bytes((num_bits + 7) // 8, "little"), np.uint8), bitorder="little")
    obs = np.zeros(_size(n), dtype=np.float32)
    obs[:num_bits] = planes[:num_bits]
    i = num_bits
    obs[i] = st.knock_limit / 10.0
    obs[i + 1] = len(st.stock) / 52.0
    obs[i + 2 + int(st.phase)] = 1.0
    i += 6
    if not over:
        obs[i + (st.current - observer) % n] = 1.0
    i += n
    obs[i + (observer - st.dealer) % n] = 1.0
    i += n
    for k in range(n):
        obs[i + k] = scores[(observer + k) % n] / target_score
    i += n
    obs[i] = target_score / 100.0
    obs[i + 1] = st.reshuffles
    return obs


def decode(observation: np.ndarray, num_players: int | None = None) -> dict[str, object]:
    """Named, readable parts of an observation: card planes as card texts, scalars as numbers."""
    obs = np.asarray(observation)
    if num_players is None:
        matches = [n for n in (2, 3, 4) if _size(n) == obs.shape[-1]]
        if not matches:
            raise ValueError(f"observation of size {obs.shape[-1]} matches no layout (sizes: {[_size(n) for n in (2, 3, 4)]})")
        num_players = matches[0]
    layout = layout_for(num_players)
    if obs.shape[-1] != layout.size:
        raise ValueError(f"observation has {obs.shape[-1]} entries; the {num_players}-player layout has {layout.size}")
    parts: dict[str, object] = {}
    for name, part in layout.slices.items():
        values = obs[part]
        if name in layout.card_planes:
            parts[name] = [card_str(int(c)) for c in np.flatnonzero(values > 0.5)]
        elif name == "knock_limit":
            parts[name] = int(round(float(values[0]) * 10))
        elif name == "stock_size":
            parts[name] = int(round(float(values[0]) * 52))
        elif name == "phase":
            parts[name] = Phase(int(np.argmax(values))).name.lower()
        elif name in ("acting_seat", "seat_from_dealer"):
            parts[name] = int(np.argmax(values)) if values.any() else None
        elif name == "target_score":
            parts[name] = int(round(float(values[0]) * 100))
        elif name == "reshuffles":
            parts[name] = int(values[0])
        else:
            parts[name] = [float(v) for v in values]
    parts["scores"] = [round(s * parts["target_score"]) for s in parts["scores"]]  # type: ignore[union-attr]
    return parts


def to_text(observation: np.ndarray, num_players: int | None = None) -> str:
    """One line per named part, for reading an observation by eye."""
    return "\n".join(
        f"{name:>20}: {' '.join(value) if isinstance(value, list) and value and isinstance(value[0], str) else value}"
        for name, value in decode(observation, num_players).items()
    )


def hand_from_observation(observation: np.ndarray) -> list[int]:
    """Card ids in the observer's hand (bots use this)."""
    return [int(c) for c in np.flatnonzero(np.asarray(observation)[:NUM_CARDS] > 0.5)]


__all__ = ["OBSERVATION_VERSION", "ObservationLayout", "decode", "encode", "hand_from_observation", "layout_for", "to_text"]
