"""Reading observations: the typed ``ObservationView`` that bots, features and tools use (from the
array and mask, ``view``, or straight from a round state, ``view_of_state``), and ``decode`` /
``to_text`` for people.

What is read is checked first, cheaply (``view`` runs at every bot decision; the checks cost
it no time, measured, as it builds its ``ObservationView`` without the dataclass ``__init__``):
the array is one flat array of numbers of a layout's size; card planes hold values in 0..1 (a
card counts above 0.5), ``taken_card`` and ``discard_top`` at most one card and ``upcard`` one;
``phase`` and ``seat_from_dealer`` are one-hot, ``acting_seat`` one-hot or, exactly when the
round is over, zero; the numbers are finite and in their ranges (``_RANGES``); the action mask
has 107 entries of 0 and 1. Anything else raises one ``ValueError`` naming the part
(``observation part 'phase': expected a one-hot: ...``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS, action_str
from ..rules.cards import NUM_CARDS, card_str, from_mask
from ..rules.round import Phase, RoundState
from .layout import (
    KNOCK_LIMIT_SCALE, PLAYER_COUNTS, STOCK_SCALE, TARGET_SCALE, _size, _slices, added_decoder, layout_for, layout_of,
)
from .seat import seat_view


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

    @classmethod
    def _built(cls, fields: dict[str, Any]) -> "ObservationView":
        """An instance of checked values for every field, without the frozen dataclass's ``__init__``
        (one ``object.__setattr__`` per field: a sixth of ``view``'s time, paid at every bot decision)."""
        built = object.__new__(cls)
        built.__dict__.update(fields)
        return built


def _bad_part(name: str, message: str) -> ValueError:
    return ValueError(f"observation part {name!r}: {message}")


def _flat_numbers(obs: np.ndarray) -> int:
    """The player count of ``obs``, checked to be one flat array of numbers of a layout's size."""
    if obs.ndim != 1:
        raise ValueError(f"an observation is one flat (1-d) array, got an array of shape {obs.shape}")
    if obs.dtype.kind not in "fiu":  # the env gives float32; ints read the same
        raise ValueError(f"an observation holds numbers (float32 as the env gives), got dtype {obs.dtype}")
    size = obs.shape[0]
    for n in PLAYER_COUNTS:  # the card layout first: what bots read, found without building a layout
        if _size(n) == size:
            return n
    return layout_of(obs).num_players


_FLOAT32 = np.dtype(np.float32)
#: The bits of float32 1.0 read as an uint32: a float32 lies in 0..1 exactly when its bits read so are at
#: most these (a negative one has the sign bit, a larger one, inf or nan a larger exponent).
_ONE_AS_UINT32 = int(np.float32(1.0).view(np.uint32))


def _card_masks(obs: np.ndarray, num_planes: int) -> list[int]:
    """Every card plane as a 52-bit mask: the card block packed by one ``np.packbits``, read as one int, cut by shifts.
    A card counts when above 0.5; a value outside 0..1 (7, -1, inf, nan) raises, naming its plane."""
    block = obs[: NUM_CARDS * num_planes]
    if block.dtype is _FLOAT32:  # the env's: one reduction checks the range
        in_range = block.view(np.uint32).max() <= _ONE_AS_UINT32
    else:
        in_range = block.min() >= 0 and block.max() <= 1
    if not in_range:
        _check_card_range(block, num_planes)
    bits = int.from_bytes(np.packbits(block > 0.5, bitorder="little").tobytes(), "little")
    plane = (1 << NUM_CARDS) - 1
    return [bits >> (NUM_CARDS * i) & plane for i in range(num_planes)]


def _check_card_range(block: np.ndarray, num_planes: int) -> None:
    """Raise for the first card value outside 0..1, naming its plane (-0.0, which the quick check refuses, is 0)."""
    outside = np.flatnonzero(~((block >= 0) & (block <= 1)))
    if outside.size:
        at = int(outside[0])
        plane = layout_for(max(2, (num_planes - 3) // 2)).card_planes[at // NUM_CARDS]
        raise _bad_part(plane, f"a card plane holds 0 or 1 per card, got {block[at].item()!r} for {card_str(at % NUM_CARDS)}")


def _single(mask: int) -> int:
    return mask.bit_length() - 1 if mask else -1


def _check_single_cards(planes: list[int]) -> None:
    """``taken_card`` and ``discard_top`` hold at most one card, ``upcard`` exactly one."""
    for index, name in ((1, "taken_card"), (2, "discard_top"), (4, "upcard")):
        count = planes[index].bit_count()
        if count > 1 or (name == "upcard" and not count):
            raise _bad_part(name, f"{'exactly' if name == 'upcard' else 'at most'} one card, got {count}")


def _one_hot(values: list[float], name: str, required: bool) -> int | None:
    """The index of the 1 of a one-hot part (None if all 0 and not ``required``)."""
    ones = values.count(1.0)
    if ones > 1 or ones + values.count(0.0) != len(values) or (required and not ones):
        expected = "exactly one 1" if required else "one 1 (or all 0 once the round is over)"
        raise _bad_part(name, f"expected a one-hot: {expected}, the rest 0; got {values}")
    return values.index(1.0) if ones else None


@lru_cache(maxsize=None)
def _numeric_slices(num_players: int) -> tuple[int, dict[str, slice]]:
    """``(start of the numeric slices, each numeric slice relative to that start)``."""
    s = _slices(num_players)
    start = s["knock_limit"].start
    return start, {name: slice(s[name].start - start, s[name].stop - start) for name, _ in layout_for(num_players).scalar_parts}


#: The ranges of the numbers, in their units (a knock limit is an upcard's value, at most 10).
_RANGES = {"knock_limit": (0, 10), "stock_size": (0, NUM_CARDS), "target_score": (1, math.inf), "reshuffles": (0, math.inf)}
_MAX_KNOCK_LIMIT, _MAX_STOCK_SIZE = _RANGES["knock_limit"][1], _RANGES["stock_size"][1]


def _numbers(obs: np.ndarray, num_players: int) -> dict[str, Any]:
    """The numeric slices back in their units (the one place that undoes ``SCALES``), checked."""
    start, s = _numeric_slices(num_players)
    # One ``tolist`` for all the numbers: reading array items one at a time costs several times more.
    tail = obs[start : _size(num_players)].tolist()
    if not math.isfinite(sum(tail)):  # one sum finds any inf or nan (or numbers so huge their sum overflows)
        for name, part in s.items():
            if not all(map(math.isfinite, tail[part])):
                raise _bad_part(name, f"expected finite numbers, got {tail[part]}")
    knock_limit = round(tail[s["knock_limit"].start] * KNOCK_LIMIT_SCALE)
    stock_size = round(tail[s["stock_size"].start] * STOCK_SCALE)
    target = round(tail[s["target_score"].start] * TARGET_SCALE)
    reshuffles = round(tail[s["reshuffles"].start])
    if not (0 <= knock_limit <= _MAX_KNOCK_LIMIT and 0 <= stock_size <= _MAX_STOCK_SIZE and target >= 1 and reshuffles >= 0):
        values = {"knock_limit": knock_limit, "stock_size": stock_size, "target_score": target, "reshuffles": reshuffles}
        name = next(name for name, (low, high) in _RANGES.items() if not low <= values[name] <= high)
        raise _bad_part(name, f"expected {_RANGES[name][0]}..{_RANGES[name][1]} in its units, got {values[name]}")
    phase = Phase(_one_hot(tail[s["phase"]], "phase", required=True))
    acting = _one_hot(tail[s["acting_seat"]], "acting_seat", required=False)
    if (acting is None) != (phase is Phase.OVER):
        acting_part = tail[s["acting_seat"]]
        raise _bad_part("acting_seat", f"a seat is to act unless the round is over; got {acting_part} in phase {phase.name}")
    return {
        "knock_limit": knock_limit,
        "stock_size": stock_size,
        "phase": phase,
        "acting_seat": acting,
        "seat_from_dealer": _one_hot(tail[s["seat_from_dealer"]], "seat_from_dealer", required=True),
        "scores": [round(v * target) for v in tail[s["scores"]]],
        "target_score": target,
        "reshuffles": reshuffles,
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
            if mask.dtype.kind not in "biuf":
                raise ValueError(f"action_mask holds 0 and 1 (int8 as the env gives), got dtype {mask.dtype}")
        return np.asarray(observation["observation"]), mask
    return np.asarray(observation), None


def _legal(mask: np.ndarray) -> list[int]:
    """The legal action ids of a mask, checked to hold only 0 and 1."""
    if mask.dtype.itemsize == 1:  # int8 (the env's), uint8, bool: no byte but 0 and 1, without a numpy call
        exact = not mask.tobytes().translate(None, b"\x00\x01")
    else:
        exact = np.count_nonzero(mask == 1) == np.count_nonzero(mask)
    if not exact:
        at = int(np.flatnonzero((mask != 0) & (mask != 1))[0])
        raise ValueError(f"action_mask holds 0 and 1, got {mask[at].item()!r} for action {at}")
    return mask.nonzero()[0].tolist()  # the mask is 1-d (checked): np.flatnonzero's ids, cheaper


def view(observation: dict) -> ObservationView:
    """Decode the environment's observation dict (``{"observation", "action_mask"}``); a malformed
    one raises a ValueError naming the part (see the module docstring)."""
    obs, mask = _split(observation)
    if mask is None:
        raise ValueError("view() needs the observation dict with its 'action_mask'")
    n = _flat_numbers(obs)
    planes = _card_masks(obs, 3 + 2 * n)
    taken, top, upcard = planes[1], planes[2], planes[4]
    if taken & (taken - 1) or top & (top - 1) or upcard & (upcard - 1) or not upcard:  # more than one card
        _check_single_cards(planes)
    fields = _numbers(obs, n)
    fields.update(
        num_players=n,
        hand=planes[0],
        taken_card=_single(taken),
        discard_top=_single(top),
        discard_pile=planes[3],
        upcard=_single(upcard),
        opponent_known=planes[5::2],
        opponent_passed=planes[6::2],
        legal=_legal(mask),
    )
    return ObservationView._built(fields)


def view_of_state(round_state: RoundState, scores: list[int], target_score: int, observer: int) -> ObservationView:
    """``view`` of ``encode``'s observation of seat ``observer`` (with the round's legal actions
    for its mask), read straight from the state: what rollouts and searches that hold the state
    use instead of encoding floats and decoding them again. ``tests/test_observation.py`` checks
    that it equals ``view({"observation": encode(...), "action_mask": legal_mask()})`` field by field."""
    st = round_state
    n = st.num_players
    seen = seat_view(st, observer)
    return ObservationView(
        num_players=n,
        hand=seen.hand,
        taken_card=seen.taken_card,
        discard_top=seen.discard_top,
        discard_pile=seen.discard_pile,
        upcard=seen.upcard,
        opponent_known=list(seen.opponent_known),
        opponent_passed=list(seen.opponent_passed),
        knock_limit=st.knock_limit,
        stock_size=len(st.stock),
        phase=st.phase,
        acting_seat=seen.acting_seat,
        seat_from_dealer=seen.seat_from_dealer,
        scores=[scores[(observer + k) % n] for k in range(n)],
        target_score=target_score,
        reshuffles=st.reshuffles,
        legal=list(st.legal_actions()) if seen.to_act else [],
    )


def decode(observation: Any, num_players: int | None = None) -> dict[str, object]:
    """Named, readable parts of an observation: card planes as card texts, numbers in their units.

    ``observation`` is the flat array or the environment's dict (``env.last()[0]``,
    ``env.observe(agent)``); from a dict the legal actions come too (``"legal"``, as texts)."""
    obs, mask = _split(observation)
    _flat_numbers(obs)
    layout = layout_of(obs)
    n = layout.num_players
    if num_players not in (None, n):
        raise ValueError(f"observation has {obs.shape[-1]} entries: a {n}-player layout, not a {num_players}-player one")
    _check_single_cards(_card_masks(obs, 3 + 2 * n))
    numbers = _numbers(obs, n)
    added = obs[_size(n) :]
    if not np.isfinite(added).all():
        raise _bad_part(layout.observation, "expected finite numbers in the features after the card layout")
    parts: dict[str, object] = {}
    for name, part in _slices(n).items():  # the card layout; the features after it
        if name in numbers:
            value = numbers[name]
            parts[name] = value.name.lower() if isinstance(value, Phase) else value
        else:
            parts[name] = [card_str(int(c)) for c in np.flatnonzero(obs[part] > 0.5)]
    if layout.observation != "cards":
        parts.update(added_decoder(layout.observation)(added))
    if mask is not None:
        parts["legal"] = [action_str(a) for a in _legal(mask)]
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
    _flat_numbers(obs)
    return from_mask(_card_masks(obs, 1)[0])
