"""Writing observations: ``encode`` (one seat of one round) and ``PackedEncoder`` (many games at
once, bit for bit the same)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..rules.actions import DISCARD_BASE, KNOCK_BASE
from ..rules.cards import NUM_CARDS
from ..rules.round import RoundState
from .layout import KNOCK_LIMIT_SCALE, STOCK_SCALE, TARGET_SCALE, _size, layout_for
from .seat import seat_view


def encode(round_state: RoundState, scores: list[int], target_score: int, observer: int) -> np.ndarray:
    """The observation of seat ``observer`` (float32, ``layout_for(n).size`` entries)."""
    st = round_state
    n = st.num_players
    seen = seat_view(st, observer)
    # All card planes packed into one big int, then unpacked to bits in a single numpy call.
    bits = 0
    for k, plane in enumerate(seen.planes):
        bits |= plane << (NUM_CARDS * k)
    num_bits = NUM_CARDS * len(seen.planes)
    planes = np.unpackbits(np.frombuffer(bits.to_bytes((num_bits + 7) // 8, "little"), np.uint8), bitorder="little")
    obs = np.zeros(_size(n), dtype=np.float32)
    obs[:num_bits] = planes[:num_bits]
    i = num_bits
    obs[i] = st.knock_limit / KNOCK_LIMIT_SCALE
    obs[i + 1] = len(st.stock) / STOCK_SCALE
    obs[i + 2 + int(st.phase)] = 1.0
    i += 6
    if seen.acting_seat is not None:
        obs[i + seen.acting_seat] = 1.0
    i += n
    obs[i + seen.seat_from_dealer] = 1.0
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
    column-wise. The discard pile plane is the round's ``pile_mask``, kept in step by the rules core.
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

    def pack_acting(self, rounds: Sequence[RoundState], games) -> list[int]:
        """The words of the seat to act in ``rounds[g]`` for each ``g`` of ``games`` (no round over)."""
        return self.pack_seats(rounds, games, None)

    def pack_seats(self, rounds: Sequence[RoundState], games, seats: Sequence[int] | None) -> list[int]:
        """The words of seat ``seats[j]`` in ``rounds[games[j]]`` (any seat; a round may be over;
        ``seats`` None: each game's seat to act)."""
        acting_bit, dealer_bit = _ACTING_BIT, self._dealer_bit
        words: list[int] = []
        put = words.extend
        chosen = [rounds[g] for g in games]
        for st, seat in zip(chosen, [st.current for st in chosen] if seats is None else seats):
            planes, acting, from_dealer, to_act = seat_view(st, seat)
            flags = 1 << st.phase | 1 << (dealer_bit + from_dealer)
            if to_act:
                small, playable, knocks = st.legal_parts()
                flags |= 1 << acting_bit | small << _MASK_BIT
            else:
                playable = knocks = 0
                if acting is not None:
                    flags |= 1 << (acting_bit + acting)
            put(planes)  # (two extends cost less than one tuple built by unpacking ``planes``)
            put((flags, playable, knocks, len(st.stock) | st.knock_limit << 8 | st.current << 16 | st.reshuffles << 24))
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
