"""Reading observations: the typed ``ObservationView`` that bots, features and tools use (from the
array and mask, ``view``, or straight from a round state, ``view_of_state``), and ``decode`` /
``to_text`` for people."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS, action_str
from ..rules.cards import NUM_CARDS, card_str
from ..rules.round import Phase, RoundState
from .layout import (
    KNOCK_LIMIT_SCALE, STOCK_SCALE, TARGET_SCALE, _size, _slices, added_decoder, layout_for, layout_of, num_players_of,
)


@dataclass(frozen=True)
class ObservationView:
    """What one seat knows, decoded (``view``). Card sets are 52-bit masks (bit ``id`` set = card
    present), as the rules core uses; opponent lists are indexed by ``k - 1`` (opponent k sits k
    seats later)."""

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
    scores: list[int]  # match totals, observer first (in points)
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


def _card_masks(obs: np.ndarray, num_planes: int) -> list[int]:
    """Every card plane as a 52-bit mask: the card block packed by one ``np.packbits``, read as one int, cut by shifts."""
    bits = int.from_bytes(np.packbits(obs[: NUM_CARDS * num_planes] > 0.5, bitorder="little").tobytes(), "little")
    plane = (1 << NUM_CARDS) - 1
    return [bits >> (NUM_CARDS * i) & plane for i in range(num_planes)]


def _single(mask: int) -> int:
    return mask.bit_length() - 1 if mask else -1


def _one_hot(values: list[float]) -> int | None:
    """The index of the first largest value (as ``np.argmax``); None if every value is 0."""
    return values.index(max(values)) if any(values) else None


@lru_cache(maxsize=None)
def _numeric_slices(num_players: int) -> tuple[int, dict[str, slice]]:
    """``(start of the numeric slices, each numeric slice relative to that start)``."""
    s = _slices(num_players)
    start = s["knock_limit"].start
    return start, {name: slice(s[name].start - start, s[name].stop - start) for name, _ in layout_for(num_players).scalar_parts}


def _numbers(obs: np.ndarray, num_players: int) -> dict[str, Any]:
    """The numeric slices back in their units (the one place that undoes ``SCALES``)."""
    start, s = _numeric_slices(num_players)
    # One ``tolist`` for all the numbers: reading array items one at a time costs several times more.
    tail = obs[start : _size(num_players)].tolist()
    target = int(round(float(tail[s["target_score"].start]) * TARGET_SCALE))
    return {
        "knock_limit": int(round(float(tail[s["knock_limit"].start]) * KNOCK_LIMIT_SCALE)),
        "stock_size": int(round(float(tail[s["stock_size"].start]) * STOCK_SCALE)),
        "phase": Phase(_one_hot(tail[s["phase"]]) or 0),
        "acting_seat": _one_hot(tail[s["acting_seat"]]),
        "seat_from_dealer": _one_hot(tail[s["seat_from_dealer"]]),
        "scores": [round(float(v) * target) for v in tail[s["scores"]]],
        "target_score": target,
        "reshuffles": int(round(float(tail[s["reshuffles"].start]))),
    }


def _split(observation: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``(flat observation, action mask or None)`` from an array or an environment's observation dict."""
    if isinstance(observation, Mapping):
        if "observation" not in observation:
            raise ValueError(f"an observation dict holds 'observation' (and 'action_mask'); got keys {sorted(observation)}")
        mask = observation.get("action_mask")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (NUM_ACTIONS,):
                raise ValueError(f"action_mask must have shape ({NUM_ACTIONS},), got {mask.shape}")
        return np.asarray(observation["observation"]), mask
    return np.asarray(observation), None


def view(observation: dict) -> ObservationView:
    """Decode the environment's observation dict (``{"observation", "action_mask"}``)."""
    obs, mask = _split(observation)
    if mask is None:
        raise ValueError("view() needs the observation dict with its 'action_mask'")
    n = num_players_of(obs)
    planes = _card_masks(obs, 3 + 2 * n)
    numbers = _numbers(obs, n)
    return ObservationView(
        num_players=n,
        hand=planes[0],
        taken_card=_single(planes[1]),
        discard_top=_single(planes[2]),
        discard_pile=planes[3],
        upcard=_single(planes[4]),
        opponent_known=planes[5::2],
        opponent_passed=planes[6::2],
        knock_limit=numbers["knock_limit"],
        stock_size=numbers["stock_size"],
        phase=numbers["phase"],
        acting_seat=numbers["acting_seat"],
        seat_from_dealer=numbers["seat_from_dealer"] or 0,
        scores=numbers["scores"],
        target_score=numbers["target_score"],
        reshuffles=numbers["reshuffles"],
        legal=mask.nonzero()[0].tolist(),  # the mask is 1-d (checked): np.flatnonzero's ids, cheaper
    )


def view_of_state(round_state: RoundState, scores: list[int], target_score: int, observer: int) -> ObservationView:
    """``view`` of ``encode``'s observation of seat ``observer`` (with the round's legal actions
    for its mask), read straight from the state: what rollouts and searches that hold the state
    use instead of encoding floats and decoding them again. ``tests/test_observation.py`` checks
    that it equals ``view({"observation": encode(...), "action_mask": legal_mask()})`` field by field."""
    st = round_state
    n = st.num_players
    over = st.phase is Phase.OVER
    others = [(observer + k) % n for k in range(1, n)]
    return ObservationView(
        num_players=n,
        hand=st.hands[observer],
        taken_card=st.taken_card if st.taken_card >= 0 and st.current == observer and not over else -1,
        discard_top=st.discard_pile[-1] if st.discard_pile else -1,
        discard_pile=st.pile_mask,
        upcard=st.upcard,
        opponent_known=[st.hands[seat] if over else st.known[seat] for seat in others],
        opponent_passed=[st.passed[seat] for seat in others],
        knock_limit=st.knock_limit,
        stock_size=len(st.stock),
        phase=st.phase,
        acting_seat=None if over else (st.current - observer) % n,
        seat_from_dealer=(observer - st.dealer) % n,
        scores=[scores[(observer + k) % n] for k in range(n)],
        target_score=target_score,
        reshuffles=st.reshuffles,
        legal=list(st.legal_actions()) if st.current == observer and not over else [],
    )


def decode(observation: Any, num_players: int | None = None) -> dict[str, object]:
    """Named, readable parts of an observation: card planes as card texts, numbers in their units.

    ``observation`` is the flat array or the environment's dict (``env.last()[0]``,
    ``env.observe(agent)``); from a dict the legal actions come too (``"legal"``, as texts)."""
    obs, mask = _split(observation)
    if obs.ndim != 1:
        raise ValueError(f"decode takes one observation (a 1-d array), got an array of shape {obs.shape}")
    layout = layout_of(obs)
    n = layout.num_players
    if num_players not in (None, n):
        raise ValueError(f"observation has {obs.shape[-1]} entries: a {n}-player layout, not a {num_players}-player one")
    numbers = _numbers(obs, n)
    parts: dict[str, object] = {}
    for name, part in _slices(n).items():  # the card layout; the features after it
        if name in numbers:
            value = numbers[name]
            parts[name] = value.name.lower() if isinstance(value, Phase) else value
        else:
            parts[name] = [card_str(int(c)) for c in np.flatnonzero(obs[part] > 0.5)]
    if layout.observation != "cards":
        parts.update(added_decoder(layout.observation)(obs[_size(n) :]))
    if mask is not None:
        parts["legal"] = [action_str(int(a)) for a in np.flatnonzero(mask)]
    return parts


def to_text(observation: Any, num_players: int | None = None) -> str:
    """One line per named part, for reading an observation (array or the env's dict) by eye."""
    lines = []
    for name, value in decode(observation, num_players).items():
        if isinstance(value, list) and value and isinstance(value[0], str):
            value = (", " if name in ("legal", "draw_take_pass_legal") else " ").join(value)
        elif isinstance(value, dict):
            value = " ".join(f"{card}:{count}" for card, count in value.items())
        lines.append(f"{name:>20}: {value}")
    return "\n".join(lines)


def hand_from_observation(observation: Any) -> list[int]:
    """Card ids in the observer's hand (array or the env's dict)."""
    obs, _ = _split(observation)
    return [int(c) for c in np.flatnonzero(obs[:NUM_CARDS] > 0.5)]
