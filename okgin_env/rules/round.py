"""One round as a state machine: deal, upcard offer, draw, discard/knock, showdown (docs/rules.md §3-§9).

``RoundState`` holds only plain ints and lists (hands are 52-bit masks), so it copies and pickles
cheaply. Each phase has one handler; ``apply`` checks the action against ``legal_actions`` first,
so an illegal action raises ``ValueError`` and changes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from .actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD, action_index, action_str
from .cards import from_mask, to_mask
from .config import MAX_PLAYERS, RulesConfig, is_int
from .melds import knock_discards_of_mask, knock_ruled_out
from .round_parts import STOCK_LEFT_AT_WALL, Phase, check_deck, checked_round_parts, knock_limit_for
from .showdown import RoundOutcome, draw_outcome, knock_outcome

# Module-level aliases for the legality queries and the transitions, which run for every game at
# every step of a batch: looking up ``Phase.DISCARD`` on the Enum costs ~70 ns a time.
_OFFER, _DRAW, _DISCARD, _OVER = Phase.OFFER, Phase.DRAW, Phase.DISCARD, Phase.OVER
#: The actions 0-2 that a bit pattern of ``RoundState.legal_parts()[0]`` stands for.
_SMALL_ACTIONS = [tuple(a for a in (DRAW_STOCK, TAKE_DISCARD, PASS) if bits >> a & 1) for bits in range(8)]
_DRAW_EITHER = 1 << DRAW_STOCK | 1 << TAKE_DISCARD
_TAKE_OR_PASS = 1 << TAKE_DISCARD | 1 << PASS


#: The ``(seat, action)`` pair of every move, shared by every ``RoundState.history``: a batch
#: step appends a thousand pairs, and a fresh tuple each set off a collection by the garbage
#: collector every other step (tuples are tracked until it has looked at them once).
_MOVES = tuple(tuple((seat, action) for action in range(NUM_ACTIONS)) for seat in range(MAX_PLAYERS))


class RoundState:
    """The full (hidden and public) state of one round."""

    def __init__(self, config: RulesConfig, deck: list[int], dealer: int, rng: np.random.Generator | None = None):
        deck = check_deck(deck)
        n = config.num_players
        if not is_int(dealer) or not 0 <= dealer < n:
            raise ValueError(f"dealer must be a seat in 0..{n - 1}, got {dealer!r}")
        dealer = int(dealer)
        self.config = config
        self.num_players = n
        self.dealer = dealer
        # Only the penalty preset shuffles during a round (stock reshuffle); a local generator, never a global one.
        self.rng = rng if rng is not None else np.random.default_rng()
        dealt = n * config.hand_size
        self.deck = tuple(deck)  # dealt from, top first (game records); None for a round built from parts
        self.hands = [0] * n
        for i in range(dealt):  # one card at a time, starting with the player after the dealer
            self.hands[(dealer + 1 + i) % n] |= 1 << deck[i]
        self.upcard = deck[dealt]
        self.knock_limit = knock_limit_for(self.upcard, config)
        self.discard_pile = [self.upcard]  # bottom first, top last
        self.pile_mask = 1 << self.upcard  # the same cards as a mask, kept in step (observations read it)
        self.stock = deck[:dealt:-1]  # top last, so pop() draws the top
        self.phase = Phase.OFFER
        self.current = (dealer + 1) % n
        self.offers_declined = 0
        self.must_draw_stock = False  # after everybody declined the upcard
        self.taken_card = -1  # card taken from the discard pile this turn (may not be discarded)
        self.known = [0] * n  # cards each seat is publicly known to hold (taken from the pile, not yet thrown)
        self.passed = [0] * n  # cards each seat declined (upcard, discard top left for the stock) or threw
        self.discards = 0
        self.reshuffles = 0
        # Each reshuffle's cards in the order they are drawn (game records replay them); a tuple,
        # replaced rather than changed, so that copies share it safely.
        self.reshuffle_orders: tuple[tuple[int, ...], ...] = ()
        self.history: list[tuple[int, int]] = []  # (seat, action) in order
        self.outcome: RoundOutcome | None = None
        self._legal: list[int] | None = None

    # ------------------------------------------------------------------ queries
    @property
    def is_over(self) -> bool:
        return self.phase is _OVER

    @property
    def discard_top(self) -> int:
        return self.discard_pile[-1] if self.discard_pile else -1

    def hand(self, seat: int) -> list[int]:
        return from_mask(self.hands[seat])

    def legal_actions(self) -> list[int]:
        """Legal action ids for the player to act (``current``), ascending; empty when over."""
        if self._legal is None:
            self._legal = self._compute_legal()
        return self._legal

    def legal_parts(self) -> tuple[int, int, int]:
        """The legal actions as three masks, the one legality rule (``legal_actions`` is built on it):
        ``(bits of the actions 0-2, cards c whose discard 3 + c is legal, cards c whose knock 55 + c
        is legal)``; all zero when the round is over. Batched engines pack them into action masks."""
        phase = self.phase
        if phase is _DISCARD:
            hand = self.hands[self.current]
            playable = self.discardable() if self.taken_card >= 0 else hand  # (no card taken: no call)
            limit = self.knock_limit
            if knock_ruled_out(hand, limit):  # a cheap bound settles most discard decisions
                return 0, playable, 0
            return 0, playable, to_mask(knock_discards_of_mask(hand, limit, hand ^ playable))
        if phase is _DRAW:
            return (1 << DRAW_STOCK if self.must_draw_stock else _DRAW_EITHER), 0, 0
        if phase is _OFFER:
            return _TAKE_OR_PASS, 0, 0
        return 0, 0, 0

    def discardable(self) -> int:
        """The cards the player to act may throw now, by a discard or a knock (a mask; 0 outside the
        discard phase): the hand, less the card just taken from the pile (docs/rules.md §4) unless
        ``allow_discard_taken``."""
        if self.phase is not _DISCARD:
            return 0
        hand = self.hands[self.current]
        taken = self.taken_card
        return hand if taken < 0 or self.config.allow_discard_taken else hand & ~(1 << taken)

    def _compute_legal(self) -> list[int]:
        small, discards, knocks = self.legal_parts()
        actions = list(_SMALL_ACTIONS[small])
        if discards:
            actions += [DISCARD_BASE + c for c in from_mask(discards)]
        if knocks:
            actions += [KNOCK_BASE + c for c in from_mask(knocks)]
        return actions

    def legal_mask(self) -> np.ndarray:
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        mask[self.legal_actions()] = 1
        return mask

    # ------------------------------------------------------------------ transitions
    def apply(self, action: int) -> None:
        """Play ``action`` for the player to act. Illegal actions raise ValueError and change nothing."""
        self.apply_unchecked(self.checked(action))

    def checked(self, action: Any) -> int:
        """``action`` as an int if it is legal now; else a ValueError that names the legal actions."""
        legal = self.legal_actions()
        # Type first: ``True in [1, 2]`` and ``1.0 in [1, 2]`` hold in Python, yet neither is an action id.
        index = action_index(action)
        if index is None or index not in legal:
            self._reject(action, legal)
        return index

    def apply_unchecked(self, action: int) -> None:
        """``apply`` without the legality check, for callers that already checked (batched engines)."""
        # (the shared pair when the action is a Python int, as from ``checked`` and the batched engines)
        self.history.append(_MOVES[self.current][action] if type(action) is int else (self.current, action))
        self._legal = None
        phase = self.phase
        if phase is _DISCARD:
            self._apply_discard(action)
        elif phase is _DRAW:
            self._apply_draw(action)
        else:
            self._apply_offer(action)

    def _reject(self, action: Any, legal: list[int]) -> None:
        if self.phase is Phase.OVER:
            raise ValueError("the round is over; no action is legal")
        index = action_index(action)
        if index is None or not 0 <= index < NUM_ACTIONS:
            raise ValueError(f"action must be an int in 0..{NUM_ACTIONS - 1}, got {action!r}; legal now: {legal}")
        names = ", ".join(f"{a} ({action_str(a)})" for a in legal)
        raise ValueError(
            f"action {index} ({action_str(index)}) is not legal for player {self.current} "
            f"in phase {self.phase.name}; legal: {names}"
        )

    def _take_discard_top(self, seat: int) -> None:
        card = self.discard_pile.pop()
        self.pile_mask ^= 1 << card
        self.hands[seat] |= 1 << card
        self.known[seat] |= 1 << card
        self.taken_card = card
        self.phase = _DISCARD

    def _apply_offer(self, action: int) -> None:
        seat = self.current
        if action == TAKE_DISCARD:
            self._take_discard_top(seat)
            return
        self.passed[seat] |= 1 << self.upcard
        self.offers_declined += 1
        if self.offers_declined == self.num_players:
            # Everybody declined: the player after the dealer must begin from the stock.
            self.current = (self.dealer + 1) % self.num_players
            self.phase = _DRAW
            self.must_draw_stock = True
        else:
            self.current = (seat + 1) % self.num_players

    def _apply_draw(self, action: int) -> None:
        seat = self.current
        if action == TAKE_DISCARD:
            self._take_discard_top(seat)
            return
        self.passed[seat] |= 1 << self.discard_pile[-1]  # left the discard top for the stock
        self.hands[seat] |= 1 << self.stock.pop()
        self.taken_card = -1
        self.must_draw_stock = False
        self.phase = _DISCARD

    def _apply_discard(self, action: int) -> None:
        seat = self.current
        self.taken_card = -1
        if action >= KNOCK_BASE:
            card = action - KNOCK_BASE
            self.hands[seat] ^= 1 << card
            self.known[seat] &= ~(1 << card)
            self._finish(knock_outcome(self.config, self.hands, seat, self.knock_limit, self.upcard, card))
            return
        card = action - DISCARD_BASE
        bit = 1 << card
        self.hands[seat] ^= bit
        self.known[seat] &= ~bit
        self.passed[seat] |= bit
        self.discard_pile.append(card)
        self.pile_mask |= bit
        self.discards += 1
        if self.discards >= self.config.max_turns:
            self._finish(draw_outcome(self.config, self.hands))
            return
        if len(self.stock) <= STOCK_LEFT_AT_WALL:
            if self.config.reshuffle_stock and self.reshuffles < self.config.max_reshuffles:
                self._reshuffle()
            else:
                self._finish(draw_outcome(self.config, self.hands))
                return
        self.current = (seat + 1) % self.num_players
        self.phase = _DRAW

    def _reshuffle(self) -> None:
        """Penalty preset: the discard pile but its top, shuffled, goes under the stock's last cards."""
        under = self.discard_pile[:-1]
        self.discard_pile = self.discard_pile[-1:]
        self.pile_mask = 1 << self.discard_pile[-1]
        shuffled = [under[i] for i in self.rng.permutation(len(under))]
        self.stock = shuffled + self.stock
        self.reshuffles += 1
        self.reshuffle_orders += (tuple(reversed(shuffled)),)

    def _finish(self, outcome: RoundOutcome) -> None:
        self.outcome = outcome
        self.phase = _OVER
        self._legal = []

    # ------------------------------------------------------------------ copies
    def clone(self) -> "RoundState":
        """An independent copy (the random generator is copied too)."""
        return self.copy(share_rng=False)

    def copy(self, *, share_rng: bool = True) -> "RoundState":
        """A copy whose play leaves this state unchanged; with ``share_rng`` (the default) both draw
        stock reshuffles from the same generator, which makes it cheaper than ``clone`` and fit for
        throw-away playouts (only the penalty preset's reshuffles use the generator)."""
        other = copy.copy(self)
        other.hands = list(self.hands)
        other.stock = list(self.stock)
        other.discard_pile = list(self.discard_pile)
        other.known = list(self.known)
        other.passed = list(self.passed)
        other.history = list(self.history)
        if not share_rng:
            other.rng = copy.deepcopy(self.rng)
        return other

    # ------------------------------------------------------------------ construction from parts
    @classmethod
    def from_parts(
        cls,
        config: RulesConfig,
        *,
        hands: Sequence[int],
        stock: Sequence[int],
        discard_pile: Sequence[int],
        upcard: int,
        dealer: int,
        current: int,
        phase: Phase,
        knock_limit: int | None = None,
        taken_card: int = -1,
        known: Sequence[int] | None = None,
        passed: Sequence[int] | None = None,
        offers_declined: int | None = None,
        must_draw_stock: bool = False,
        discards: int = 0,
        reshuffles: int = 0,
        rng: np.random.Generator | None = None,
        validate: bool = True,
    ) -> "RoundState":
        """A round in progress built from its parts, e.g. a guess of the hidden cards consistent
        with what one seat knows (``rules.infoset``); no action history.

        Hands are 52-bit masks, ``stock`` lists the top card last, ``discard_pile`` the bottom card
        first; ``known``/``passed`` (masks per seat) default to none. ``knock_limit`` defaults to the
        upcard's, ``offers_declined`` (read only while the upcard is offered) to the count that
        puts ``current`` to act. The parts are checked (every card exactly once, hand sizes, phase
        and seat to act consistent; a ValueError names the wrong part); ``validate=False`` skips
        the checks, for hot loops whose parts are right by construction.
        """
        if validate:  # the checked parts come back as plain ints and lists
            (hands, stock, discard_pile, known, passed, upcard, dealer, current, phase, knock_limit, taken_card,
             offers_declined, must_draw_stock, discards, reshuffles) = checked_round_parts(
                config, hands, stock, discard_pile, known, passed, upcard, dealer, current, phase, knock_limit,
                taken_card, offers_declined, must_draw_stock, discards, reshuffles)  # fmt: skip
        n = config.num_players
        if knock_limit is None:
            knock_limit = knock_limit_for(upcard, config)
        if offers_declined is None:
            offers_declined = (current - dealer - 1) % n if phase is Phase.OFFER else 0
        state = cls.__new__(cls)
        state.config = config
        state.num_players = n
        state.dealer = int(dealer)
        state.rng = rng if rng is not None else np.random.default_rng()
        state.hands = list(hands)
        state.upcard = upcard
        state.knock_limit = knock_limit
        state.discard_pile = list(discard_pile)
        state.pile_mask = to_mask(state.discard_pile)
        state.stock = list(stock)
        state.phase = phase
        state.current = int(current)
        state.offers_declined = offers_declined
        state.must_draw_stock = bool(must_draw_stock)
        state.taken_card = taken_card
        state.known = list(known) if known is not None else [0] * n
        state.passed = list(passed) if passed is not None else [0] * n
        state.discards = discards
        state.reshuffles = reshuffles
        state.deck = None
        state.reshuffle_orders = ()  # unknown for a round built from parts
        state.history = []
        state.outcome = None
        state._legal = None
        return state

    def cards_accounted(self) -> int:
        """Number of distinct cards across hands, stock, pile and the knock discard (always 52)."""
        seen = 0
        count = 0
        for mask in self.hands:
            seen |= mask
            count += mask.bit_count()
        for card in self.stock + self.discard_pile:
            seen |= 1 << card
            count += 1
        if self.outcome is not None and self.outcome.knock_card is not None:
            seen |= 1 << self.outcome.knock_card
            count += 1
        return count if seen.bit_count() == count else -1
