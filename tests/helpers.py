"""Shared helpers for the rules tests: readable decks, state snapshots, simple policies, checks.

``build_deck`` turns a story ("seat 1 holds 2S 3S 4S ..., the upcard is 5H, the stock starts
with 9C") into the exact 52-card deck that ``RoundState`` deals from, so scripted tests read
like the game they describe.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from okgin_env import RoundState, make_config, parse_cards
from okgin_env.observation import encode
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import NUM_RANKS, card_id, card_value, from_mask, to_mask
from okgin_env.rules.melds import deadwood_of_mask
from okgin_env.rules.round import Phase

Cards = str | Iterable[str | int]


def ids(cards: Cards) -> list[int]:
    """``"AS 2S"`` or ``["AS", 1]`` -> card ids."""
    return parse_cards(cards) if isinstance(cards, str) else [card_id(c) for c in cards]


def mask(cards: Cards) -> int:
    return to_mask(ids(cards))


def build_deck(
    hands: Sequence[Cards | None],
    upcard: str | int,
    stock: Cards = (),
    dealer: int = 0,
    hand_size: int | None = None,
) -> list[int]:
    """The 52-card deck (top first) that deals ``hands[seat]`` to each seat.

    Cards are dealt one at a time starting with the seat after ``dealer`` (docs/rules.md §3), so card
    ``i`` of the deck goes to seat ``(dealer + 1 + i) % n``. Then comes the upcard, then the stock
    with ``stock[0]`` on top; the cards nobody named fill the rest of the stock in id order.
    A hand given as ``None`` ("any cards") gets the highest-id cards nobody named.
    """
    n = len(hands)
    named = [ids(h) if h is not None else None for h in hands]
    if hand_size is None:
        hand_size = next(len(h) for h in named if h is not None)
    if any(h is not None and len(h) != hand_size for h in named):
        raise AssertionError(f"every hand must hold {hand_size} cards: {[h and len(h) for h in named]}")
    story = [c for h in named if h is not None for c in h] + [card_id(upcard)] + ids(stock)
    if len(set(story)) != len(story):
        dupes = sorted({c for c in story if story.count(c) > 1})
        raise AssertionError(f"a card is named twice in the story: {dupes}")
    spare = [c for c in range(51, -1, -1) if c not in set(story)]
    hand_cards = []
    for h in named:
        if h is None:
            h, spare = spare[:hand_size], spare[hand_size:]
        hand_cards.append(h)
    deck = [hand_cards[(dealer + 1 + i) % n][i // n] for i in range(n * hand_size)]
    deck.append(card_id(upcard))
    deck.extend(ids(stock))
    used = set(deck)
    deck.extend(c for c in range(52) if c not in used)
    return deck


def new_round(
    hands: Sequence[Cards | None],
    upcard: str | int,
    stock: Cards = (),
    dealer: int = 0,
    rules: str = "classic",
    seed: int = 0,
    **options,
) -> RoundState:
    """A round dealt from the story; ``num_players`` is the number of hands given."""
    cfg = make_config(rules, num_players=len(hands), **options)
    deck = build_deck(hands, upcard, stock, dealer, cfg.hand_size)
    return RoundState(cfg, deck, dealer, np.random.default_rng(seed))


def snapshot(state: RoundState) -> tuple:
    """Everything an illegal action must leave untouched."""
    return (
        tuple(state.hands),
        tuple(state.stock),
        tuple(state.discard_pile),
        state.phase,
        state.current,
        state.taken_card,
        state.offers_declined,
        state.must_draw_stock,
        state.discards,
        state.reshuffles,
        len(state.history),
        state.outcome is None,
        tuple(state.legal_actions()),
    )


def discard(card: str | int) -> int:
    return DISCARD_BASE + card_id(card)


def knock(card: str | int) -> int:
    return KNOCK_BASE + card_id(card)


def knocks_in(legal: Iterable[int]) -> set[int]:
    """Card ids of the knock actions in ``legal``."""
    return {a - KNOCK_BASE for a in legal if a >= KNOCK_BASE}


def discards_in(legal: Iterable[int]) -> set[int]:
    return {a - DISCARD_BASE for a in legal if DISCARD_BASE <= a < KNOCK_BASE}


# ----------------------------------------------------------------------------- policies


def random_action(state: RoundState, rng: np.random.Generator) -> int:
    legal = state.legal_actions()
    return legal[int(rng.integers(len(legal)))]


def greedy_action(state: RoundState) -> int:
    """Knock when legal (least deadwood); else take the discard top when it lowers the best
    deadwood, else draw (decline the upcard); discard the card that leaves the least deadwood."""
    legal = state.legal_actions()
    hand = state.hands[state.current]
    knocks = [a for a in legal if a >= KNOCK_BASE]
    if knocks:
        return min(knocks, key=lambda a: (deadwood_of_mask(hand & ~(1 << (a - KNOCK_BASE))), a))
    if state.phase in (Phase.OFFER, Phase.DRAW):
        if TAKE_DISCARD in legal:
            top = state.discard_top
            with_top = hand | (1 << top)
            may_drop = from_mask(hand) if not state.config.allow_discard_taken else from_mask(with_top)
            after = min(deadwood_of_mask(with_top & ~(1 << c)) for c in may_drop)
            if after < deadwood_of_mask(hand):
                return TAKE_DISCARD
        return DRAW_STOCK if DRAW_STOCK in legal else PASS
    discards = [a for a in legal if DISCARD_BASE <= a < KNOCK_BASE]
    return min(
        discards,
        key=lambda a: (deadwood_of_mask(hand & ~(1 << (a - DISCARD_BASE))), -card_value(a - DISCARD_BASE), a),
    )


# ----------------------------------------------------------------------------- independent checks


def is_meld(cards: Sequence[int]) -> bool:
    """A set of 3-4 cards of one rank, or a run of 3+ consecutive cards of one suit (Ace low)."""
    cards = sorted(cards)
    if len(cards) < 3 or len(set(cards)) != len(cards):
        return False
    ranks = [c % NUM_RANKS for c in cards]
    suits = [c // NUM_RANKS for c in cards]
    if len(set(ranks)) == 1:
        return len(cards) <= 4
    return len(set(suits)) == 1 and ranks == list(range(ranks[0], ranks[0] + len(cards)))


def layoffs_fit(melds: Sequence[Sequence[int]], laid: Iterable[int]) -> bool:
    """Can the cards of ``laid`` be shared out over ``melds`` so that each meld plus its share is
    still a meld (a set's missing card; cards chained onto a run's ends)?"""
    laid = sorted(laid)
    groups = [set(m) for m in melds]

    def place(index: int) -> bool:
        if index == len(laid):
            return all(is_meld(sorted(g)) for g in groups)
        card = laid[index]
        for group in groups:
            some = next(iter(group))
            if card % NUM_RANKS == some % NUM_RANKS or card // NUM_RANKS == some // NUM_RANKS:
                group.add(card)
                if place(index + 1):
                    return True
                group.discard(card)
        return False

    return place(0)


def observation_of(state: RoundState, seat: int | None = None, scores=None) -> dict:
    """The observation dict the env gives ``seat`` (default: the seat to act)."""
    seat = state.current if seat is None else seat
    scores = scores or [0] * state.num_players
    mask = state.legal_mask() if seat == state.current else np.zeros_like(state.legal_mask())
    return {"observation": encode(state, scores, 100, seat), "action_mask": mask}


def position(hands, pile, *, stock=None, known=None, passed=None, current=0, rules="classic",
             dealer=1) -> RoundState:  # fmt: skip
    """Seat ``current`` to discard (it drew from the stock) in a round built from readable parts.

    ``pile`` lists the discard pile bottom first, the upcard first; the cards nobody named form the
    stock, or with ``stock=k`` its first ``k`` and the rest lie under the upcard (thrown earlier)."""
    config = make_config(rules, num_players=len(hands))
    hand_masks = [to_mask(parse_cards(h)) for h in hands]
    pile_ids = parse_cards(pile)
    named = to_mask(pile_ids)
    for m in hand_masks:
        named |= m
    rest = [c for c in range(52) if not named >> c & 1]
    count = len(rest) if stock is None else stock
    return RoundState.from_parts(
        config, hands=hand_masks, stock=rest[:count], discard_pile=pile_ids[:1] + rest[count:] + pile_ids[1:],
        upcard=pile_ids[0], dealer=dealer, current=current, phase=Phase.DISCARD,
        known=[to_mask(parse_cards(k)) for k in known] if known else None,
        passed=[to_mask(parse_cards(p)) for p in passed] if passed else None,
    )  # fmt: skip
