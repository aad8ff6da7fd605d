"""Sampling the hidden cards as a player would hold them: the search bot's opponent model.

A hand dealt uniformly from the unseen cards is weaker than a real player's, who keeps melds and
low cards. These helpers bias sampled hands towards what the public record says: how many greedy
turns each player has had (``stock_draws``, ``greedy_draws``), and a meld for every card a player
took from the pile (``complete_melds``). ``okgin_env.bots.search.SearchBot`` composes them.
"""

from __future__ import annotations

import random

from ..rules.cards import NUM_CARDS, NUM_RANKS, from_mask, to_mask
from ..rules.melds import deadwood_of_mask, in_some_meld
from ..rules.round import STOCK_LEFT_AT_WALL


def stock_draws(num_players: int, hand_size: int, stock_size: int, reshuffles: int) -> int:
    """How many cards have been drawn from the stock this round (exact, from public counts).

    The stock and the pile together hold every card not in a hand. A reshuffle (penalty preset)
    happens at ``STOCK_LEFT_AT_WALL`` stock cards and turns the pile but its top into stock, so the
    stock is back at its size after the deal: every reshuffle stands for ``initial -
    STOCK_LEFT_AT_WALL`` draws. Counting only ``initial - stock_size`` would make the opponents of
    a reshuffled round look as if they had just been dealt (weak hands), which they are not.
    """
    initial = NUM_CARDS - num_players * hand_size - 1  # less the upcard
    return reshuffles * (initial - STOCK_LEFT_AT_WALL) + max(0, initial - stock_size)


def greedy_draws(hand: int, fixed: int, pool: list[int], draws: int, rng: random.Random) -> int:
    """Let a sampled hand play ``draws`` greedy turns: draw the last card of ``pool``, throw back
    (to the front of ``pool``) a card other than ``fixed`` that leaves the least deadwood.

    A player who has kept the best cards of each draw holds more melds and less deadwood than a
    random hand; this biases the sample towards such hands.
    """
    for _ in range(draws):
        card = pool.pop()
        hand |= 1 << card
        best = 1 << 30
        worst: list[int] = []
        rest = hand & ~fixed
        while rest:
            low = rest & -rest
            rest ^= low
            value = deadwood_of_mask(hand ^ low)
            if value < best:
                best, worst = value, [low]
            elif value == best:
                worst.append(low)
        drop = worst[0] if len(worst) == 1 else worst[rng.randrange(len(worst))]
        hand ^= drop
        pool.insert(0, drop.bit_length() - 1)
    return hand


def meld_options(card: int, hand: int, pool: int) -> list[int]:
    """Masks of pool cards that, added to ``hand``, put ``card`` in a set or a run (each minimal)."""
    rank, suit = card % NUM_RANKS, card // NUM_RANKS
    reachable = hand | pool
    options = []
    partners = [s * NUM_RANKS + rank for s in range(4) if s != suit and reachable >> (s * NUM_RANKS + rank) & 1]
    for i in range(len(partners)):
        for j in range(i + 1, len(partners)):
            options.append((1 << partners[i] | 1 << partners[j]) & ~hand)
    base = suit * NUM_RANKS
    for low in (rank - 2, rank - 1, rank):
        if low < 0 or low + 2 >= NUM_RANKS:
            continue
        cards = [base + r for r in range(low, low + 3) if r != rank]
        if all(reachable >> c & 1 for c in cards):
            options.append((1 << cards[0] | 1 << cards[1]) & ~hand)
    return options


def complete_melds(known: int, slots: int, pool: list[int], rng: random.Random) -> int:
    """``known`` plus, for each known card not yet in a meld, unseen cards that give it one
    (taken out of ``pool``), within ``slots`` added cards."""
    hand = known
    added = 0
    pool_mask = to_mask(pool)
    for card in from_mask(known):
        if in_some_meld(hand & ~(1 << card), card):
            continue
        options = [m for m in meld_options(card, hand & ~(1 << card), pool_mask) if added + m.bit_count() <= slots]
        if not options:
            continue
        choice = options[rng.randrange(len(options))]
        hand |= choice
        added += choice.bit_count()
        pool_mask &= ~choice
        for c in from_mask(choice):
            pool.remove(c)
    return hand


__all__ = ["complete_melds", "greedy_draws", "meld_options", "stock_draws"]
