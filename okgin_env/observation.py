"""The observation codec: what one seat may know, as one flat float32 array built from named slices.

Layout (version ``OBSERVATION_VERSION``), for ``N`` players; "opponent k" is the seat ``k`` places
after the observer (k = 1 … N-1). Card planes hold 52 entries, one per card id (docs/rules.md §1).

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

Nothing else is encoded: no opponent card that was not shown, no stock order. The option
``observation="features"`` appends ``okgin_env.features.FEATURE_PARTS`` (solver features computed
from the slices above and the action mask). This module is the only place that knows the layout
and its scales (``SCALES``):

* ``encode(round_state, scores, target_score, observer)``: one observation;
* ``PackedEncoder``: the observations and action masks of many games at once (``BatchEnv``), a
  few ints per game unpacked with one ``np.unpackbits`` per batch, bit for bit ``encode``'s;
* ``view(observation_dict) -> ObservationView``: the typed decoded view that bots, training
  features and tools read (card sets as 52-bit masks, numbers as ints);
* ``decode`` / ``to_text``: named, readable parts (card texts) of an observation or of the dict
  the environment gives (``env.last()``, ``env.observe(agent)``), for people.

A new slice is added here (``ObservationLayout``, ``encode``, ``PackedEncoder``, the view) and in
``tests/test_observation.py``; nothing else reads positions in the array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS, action_str
from .rules.cards import NUM_CARDS, card_str
from .rules.round import Phase, RoundState

OBSERVATION_VERSION = 1

KNOCK_LIMIT_SCALE = 10.0
STOCK_SCALE = 52.0
TARGET_SCALE = 100.0
#: What each numeric slice is divided by (``scores`` by the match's target score).
SCALES = {"knock_limit": KNOCK_LIMIT_SCALE, "stock_size": STOCK_SCALE, "target_score": TARGET_SCALE}
PLAYER_COUNTS = (2, 3, 4)
#: The env option ``observation``: the card layout alone, or followed by the solver features.
OBSERVATIONS = ("cards", "features")


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
    if observation == "features":
        from .features import FEATURE_PARTS  # (features imports this module: imported when first needed)

        parts += FEATURE_PARTS
    result, start = {}, 0
    for name, width in parts:
        result[name] = slice(start, start + width)
        start += width
    return result


@lru_cache(maxsize=None)
def _size(num_players: int, observation: str = "cards") -> int:
    return max(s.stop for s in _slices(num_players, observation).values())


def layout_for(num_players: int, observation: str = "cards") -> ObservationLayout:
    return ObservationLayout(num_players, check_observation(observation))


def layout_of(observation: np.ndarray) -> ObservationLayout:
    """The layout (player count and ``observation`` option) that has this observation's size."""
    size = int(np.asarray(observation).shape[-1])
    for kind in OBSERVATIONS:
        for n in PLAYER_COUNTS:
            if _size(n, kind) == size:
                return ObservationLayout(n, kind)
    raise ValueError(f"observation of size {size} matches no layout (sizes for 2-4 players: "
                     f"{ {kind: [_size(n, kind) for n in PLAYER_COUNTS] for kind in OBSERVATIONS} })")


def num_players_of(observation: np.ndarray) -> int:
    """The player count whose layout (either ``observation`` option) has this observation's size."""
    return layout_of(observation).num_players


# ----------------------------------------------------------------------------- encoding


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
    obs[i] = st.knock_limit / KNOCK_LIMIT_SCALE
    obs[i + 1] = len(st.stock) / STOCK_SCALE
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
    obs[i] = target_score / TARGET_SCALE
    obs[i + 1] = st.reshuffles
    return obs



# Bits of the packed flags word (``PackedEncoder``): the phase one-hot is bits 0-3.
_ACTING_BIT = 4  # acting_seat one-hot, then seat_from_dealer one-hot
_MASK_BIT = 32  # actions 0-2 of the mask


class PackedEncoder:
    """Observations and action masks of many games at once, bit for bit those of ``encode`` and
    ``RoundState.legal_mask`` (``BatchEnv`` uses it: about 4x faster than a loop of ``encode``).

    Each game is packed as ``words`` ints (all < 2**63): one per card plane (bit c = card c, in
    the layout's plane order); a flags word (bits 0-3 the phase one-hot, then the ``acting_seat``
    and ``seat_from_dealer`` one-hots, bits 32-34 the actions 0-2 of the mask); the cards of the
    legal discards and of the legal knocks (``RoundState.legal_parts``); and a word of small ints:
    stock size (bits 0-7), knock limit (8-15), acting seat (16-23), reshuffles (24-). ``unpack``
    turns the words of all games into rows with one ``np.unpackbits`` and fills the numbers
    column-wise. ``piles[g]`` is game ``g``'s discard pile as a card mask, kept up to date by the
    caller (cheaper than rebuilding it from the pile at every decision).
    """

    def __init__(self, num_players: int, target_score: int):
        layout = layout_for(num_players)
        s, planes, n = layout.slices, layout.card_planes, num_players
        # The packing loops below hard-code this plane order: check it once.
        assert all(s[name].start == NUM_CARDS * i for i, name in enumerate(planes))
        assert planes[:5] == ("hand", "taken_card", "discard_top", "discard_pile", "upcard")
        assert planes[5:] == tuple(f"opponent_{k}_{w}" for k in range(1, n) for w in ("known", "passed"))
        assert s["acting_seat"].start == s["phase"].start + _ACTING_BIT == s["seat_from_dealer"].start - n
        self.num_players = n
        self.target_score = target_score
        self.size = layout.size
        self.planes = len(planes)
        self.words = self.planes + 4
        self._dealer_bit = _ACTING_BIT + n
        self._flags_start = s["phase"].start
        self._flags_width = 4 + 2 * n
        self._numbers = {name: s[name].start for name in ("knock_limit", "stock_size", "scores", "target_score", "reshuffles")}
        self._rotation = np.arange(n, dtype=np.int64)

    def pack_acting(self, rounds: Sequence[RoundState], piles: Sequence[int], games) -> list[int]:
        """The words of the seat to act in ``rounds[g]`` for each ``g`` of ``games`` (no round over)."""
        n = self.num_players
        acting, dealer_bit = 1 << _ACTING_BIT, self._dealer_bit
        two, others = n == 2, range(1, n)
        words: list[int] = []
        put = words.extend
        for g in games:
            st = rounds[g]
            cur = st.current
            small, playable, knocks = st.legal_parts()
            taken = st.taken_card
            pile = st.discard_pile
            flags = 1 << st.phase | acting | small << _MASK_BIT | 1 << (dealer_bit + (cur - st.dealer) % n)
            extras = len(st.stock) | st.knock_limit << 8 | cur << 16 | st.reshuffles << 24
            top = 1 << pile[-1] if pile else 0
            taken_bit = 1 << taken if taken >= 0 else 0
            if two:
                other = 1 - cur
                put((st.hands[cur], taken_bit, top, piles[g], 1 << st.upcard, st.known[other], st.passed[other],
                     flags, playable, knocks, extras))
            else:
                put((st.hands[cur], taken_bit, top, piles[g], 1 << st.upcard))
                known, passed = st.known, st.passed
                for k in others:
                    seat = (cur + k) % n
                    put((known[seat], passed[seat]))
                put((flags, playable, knocks, extras))
        return words

    def pack_seats(self, rounds: Sequence[RoundState], piles: Sequence[int], games, seats) -> list[int]:
        """The words of seat ``seats[j]`` in ``rounds[games[j]]`` (any seat; a round may be over)."""
        n = self.num_players
        words: list[int] = []
        put = words.extend
        for g, seat in zip(games, seats):
            st = rounds[g]
            cur = st.current
            over = st.phase is Phase.OVER
            flags = 1 << st.phase | 1 << (self._dealer_bit + (seat - st.dealer) % n)
            taken_bit = playable = knocks = 0
            if cur == seat and not over:
                small, playable, knocks = st.legal_parts()
                flags |= 1 << _ACTING_BIT | small << _MASK_BIT
                if st.taken_card >= 0:
                    taken_bit = 1 << st.taken_card
            elif not over:
                flags |= 1 << (_ACTING_BIT + (cur - seat) % n)
            pile = st.discard_pile
            put((st.hands[seat], taken_bit, 1 << pile[-1] if pile else 0, piles[g], 1 << st.upcard))
            for k in range(1, n):
                other = (seat + k) % n
                put((st.hands[other] if over else st.known[other], st.passed[other]))
            put((flags, playable, knocks, len(st.stock) | st.knock_limit << 8 | cur << 16 | st.reshuffles << 24))
        return words

    def unpack(self, words: list[int], scores: np.ndarray, observations: np.ndarray, masks: np.ndarray,
               viewers: np.ndarray | None = None) -> np.ndarray:
        """Write the rows of ``words`` into ``observations`` (M, size) float32 and ``masks`` (M, 107)
        int8; ``scores`` (M, num_players) are each row's match totals by seat, ``viewers`` the
        observing seats (default: the seats to act). Returns the seat to act of each row."""
        w, p, n = self.words, self.planes, self.num_players
        packed = np.fromiter(words, dtype=np.int64, count=len(words)).astype("<i8", copy=False).reshape(-1, w)
        m = packed.shape[0]
        bits = np.unpackbits(packed.view(np.uint8)[:, : 8 * (w - 1)], axis=1, bitorder="little")
        obs = observations
        card_end = NUM_CARDS * p
        obs[:, :card_end] = bits[:, : 64 * p].reshape(m, p, 64)[:, :, :NUM_CARDS].reshape(m, card_end)
        f, start = 64 * p, self._flags_start  # the flags word, then the discard and knock card words
        obs[:, start : start + self._flags_width] = bits[:, f : f + self._flags_width]
        masks[:, :DISCARD_BASE] = bits[:, f + _MASK_BIT : f + _MASK_BIT + DISCARD_BASE]
        masks[:, DISCARD_BASE:KNOCK_BASE] = bits[:, f + 64 : f + 64 + NUM_CARDS]
        masks[:, KNOCK_BASE:] = bits[:, f + 128 : f + 128 + NUM_CARDS]
        at = self._numbers
        extras = packed[:, w - 1]
        obs[:, at["stock_size"]] = (extras & 255) / STOCK_SCALE
        obs[:, at["knock_limit"]] = ((extras >> 8) & 255) / KNOCK_LIMIT_SCALE
        acting = (extras >> 16) & 255
        obs[:, at["reshuffles"]] = extras >> 24
        target = self.target_score
        obs[:, at["target_score"]] = target / TARGET_SCALE
        seat_order = ((acting if viewers is None else viewers)[:, None] + self._rotation) % n
        obs[:, at["scores"] : at["scores"] + n] = np.take_along_axis(scores, seat_order, axis=1) / target
        return acting


# ----------------------------------------------------------------------------- decoding


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
        discard_pile=sum(1 << card for card in st.discard_pile),
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
    if layout.observation == "features":
        from .features import decode_features

        parts.update(decode_features(obs[_size(n) :]))
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


__all__ = [
    "KNOCK_LIMIT_SCALE", "OBSERVATIONS", "OBSERVATION_VERSION", "SCALES", "STOCK_SCALE", "TARGET_SCALE",
    "ObservationLayout", "ObservationView", "PackedEncoder", "check_observation", "decode", "encode",
    "hand_from_observation",
    "layout_for", "layout_of", "num_players_of", "to_text", "view", "view_of_state",
]
