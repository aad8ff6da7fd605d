"""The full state of a match as one flat float32 array: ``raw_env.state()`` and ``state_space``.

**Privileged.** It holds what no player may see: every hand and the stock in drawing order. It is
for centralized critics (MAPPO, QMIX-style training: the critic sees everything during training,
the policies act on their own observations), for logging and for tools, **never as a policy's
input**. Seats are absolute (entry ``s`` is ``player_s``), not relative to an observer.

Layout (version ``STATE_VERSION``) for ``N`` players; a card plane has 52 entries, one per card id.

| slice | size | meaning |
|---|---|---|
| ``hand_s`` (s = 0 … N-1) | 52 each | the cards seat ``s`` holds |
| ``known_s`` | 52 each | the cards seat ``s`` is publicly known to hold (taken from the pile, not thrown since) |
| ``passed_s`` | 52 each | the cards seat ``s`` declined or threw |
| ``stock_order`` | 52 | the stock in drawing order: ``(depth + 1) / 52`` for a stock card, depth 0 = the next card drawn; 0 = not in the stock |
| ``discard_order`` | 52 | the discard pile: ``(depth + 1) / 52``, depth 0 = its top card; 0 = not in the pile |
| ``upcard`` | 52 | the round's first upcard |
| ``taken_card`` | 52 | the card the seat to act took from the pile this turn (it may not be discarded) |
| ``knock_limit`` | 1 | knock limit / 10 (0 = gin only) |
| ``stock_size`` | 1 | cards in the stock / 52 |
| ``phase`` | 4 | one-hot: upcard offer, draw, discard, round over |
| ``current_seat`` | N | one-hot: the seat to act (all zeros when the round is over) |
| ``dealer`` | N | one-hot: the dealer's seat |
| ``scores`` | N | match totals / target_score, by seat (as the observations: without the match-end house-rule bonuses) |
| ``target_score`` | 1 | target_score / 100 |
| ``reshuffles`` | 1 | stock reshuffles so far this round (penalty preset) |
| ``offers_declined`` | 1 | upcard offers declined so far this round / N |
| ``must_draw_stock`` | 1 | 1 when the seat to act must draw from the stock (everybody passed the upcard) |
| ``discards`` | 1 | discards so far this round / ``max_turns`` (the round ends as a draw at ``max_turns``) |

Sizes: 537 (2 players), 696 (3), 855 (4). The state determines the rest of the round given the
actions (the penalty preset's stock reshuffles draw from the env's generator, which is not in it).
Not in it: the rounds played and won so far, and the history of actions.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .episode import max_round_points
from .observation import KNOCK_LIMIT_SCALE, STOCK_SCALE, TARGET_SCALE
from .rules.cards import NUM_CARDS
from .rules.config import RulesConfig
from .rules.match import MatchState
from .rules.round import Phase

STATE_VERSION = 1


def _parts(num_players: int) -> list[tuple[str, int]]:
    n = num_players
    planes = [f"{kind}_{seat}" for kind in ("hand", "known", "passed") for seat in range(n)]
    planes += ["stock_order", "discard_order", "upcard", "taken_card"]
    return [(name, NUM_CARDS) for name in planes] + [
        ("knock_limit", 1), ("stock_size", 1), ("phase", 4), ("current_seat", n), ("dealer", n), ("scores", n),
        ("target_score", 1), ("reshuffles", 1), ("offers_declined", 1), ("must_draw_stock", 1), ("discards", 1),
    ]


@lru_cache(maxsize=None)
def state_slices(num_players: int) -> dict[str, slice]:
    """Each named slice of the state array for ``num_players`` players."""
    out, start = {}, 0
    for name, width in _parts(num_players):
        out[name] = slice(start, start + width)
        start += width
    return out


def state_size(num_players: int) -> int:
    return max(part.stop for part in state_slices(num_players).values())


def state_bounds(config: RulesConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` float32 of every state entry under ``config`` (finite: the ``state_space``).
    Scores as ``okgin_env.episode.observation_bounds``; reshuffles at most ``max(max_reshuffles, 1)``."""
    n, target = config.num_players, config.target_score
    at = state_slices(n)
    high = np.ones(state_size(n), dtype=np.float32)
    high[at["scores"]] = (target + max_round_points(config)) / target
    high[at["target_score"]] = target / TARGET_SCALE
    high[at["reshuffles"]] = max(config.max_reshuffles if config.reshuffle_stock else 0, 1)
    return np.zeros_like(high), high


def encode_state(match: MatchState) -> np.ndarray:
    """The state array of ``match`` (its current round and match totals): see the module docstring."""
    st, config = match.round, match.config
    n = st.num_players
    at = state_slices(n)
    out = np.zeros(state_size(n), dtype=np.float32)
    over = st.phase is Phase.OVER
    planes = [*st.hands, *st.known, *st.passed]
    bits = 0
    for i, plane in enumerate(planes):
        bits |= plane << (NUM_CARDS * i)
    shift = NUM_CARDS * len(planes)
    count = len(planes)
    out[: NUM_CARDS * count] = np.unpackbits(
        np.frombuffer(bits.to_bytes((shift + 7) // 8, "little"), np.uint8), bitorder="little"
    )[:shift]
    for name, cards in (("stock_order", st.stock), ("discard_order", st.discard_pile)):  # both: top card last
        start = at[name].start
        for depth, card in enumerate(reversed(cards)):
            out[start + card] = (depth + 1) / STOCK_SCALE
    out[at["upcard"].start + st.upcard] = 1.0
    if st.taken_card >= 0 and not over:
        out[at["taken_card"].start + st.taken_card] = 1.0
    out[at["knock_limit"].start] = st.knock_limit / KNOCK_LIMIT_SCALE
    out[at["stock_size"].start] = len(st.stock) / STOCK_SCALE
    out[at["phase"].start + int(st.phase)] = 1.0
    if not over:
        out[at["current_seat"].start + st.current] = 1.0
    out[at["dealer"].start + st.dealer] = 1.0
    out[at["scores"]] = np.asarray(match.round_totals, dtype=np.float64) / config.target_score
    out[at["target_score"].start] = config.target_score / TARGET_SCALE
    out[at["reshuffles"].start] = st.reshuffles
    out[at["offers_declined"].start] = st.offers_declined / n
    out[at["must_draw_stock"].start] = 1.0 if st.must_draw_stock else 0.0
    out[at["discards"].start] = st.discards / config.max_turns
    return out


__all__ = ["STATE_VERSION", "encode_state", "state_bounds", "state_size", "state_slices"]
