"""Held-out opponents, **for evaluation only**: ``aggressor`` and ``defender``.

These two players exist to measure a trained policy against styles it has never met. No training
stage may play them (``okgin_env.bots.HELD_OUT_BOTS`` lists their names; the training code refuses
them), so a result against them says how well a policy generalises, not how well it learned them.
Their rules are fixed: they have no settings besides ``seed`` (ties are broken by a
``random.Random(seed)``) and ``rules`` (accepted and ignored, as by ``simple``).

Both read only the observation (``okgin_env.observation.view``): their hand, the discard pile,
the cards each opponent is known to hold (taken face up, not thrown since) and has passed or
thrown, the knock limit and the stock size. "Unseen" cards are the rest (the stock and the
opponents' other cards); both look one draw ahead by averaging over them, with the exact meld
solver (``okgin_env.bots.reading``, shared with ``lookahead``). With several opponents (penalty
preset, 3-4 players) "the opponent" is every opponent.

``aggressor`` (``AggressorBot``) races to knock and takes risks for it:

* **Draw**: takes the face-up card whenever it can knock with it, or whenever the deadwood it
  leaves is lower than a stock draw leaves on average (also a card that melds with nothing: a low
  card for a high one), else draws from the stock (passes an unwanted upcard).
* **Knock** at the first legal chance, with the discard that leaves the least deadwood.
* **Discard** the card whose loss gives the best next turn: the chance to knock after the next
  stock draw first (``AGGRESSOR_KNOCK_WEIGHT`` points for a certain knock), the mean deadwood
  after it second. It keeps more deadwood now or breaks a set for a run when that makes a knock
  likelier, and never asks what its opponent wants.

``defender`` (``DefenderBot``) plays safe and waits for a strong knock:

* **Draw**: takes the face-up card only if it melds with its hand (it draws hidden cards
  otherwise), or if it lets it knock by its own knock rule below.
* **Discard** the card with the least *cost*: the mean deadwood after the next stock draw plus
  the *danger* of the card to each opponent (``DANGER_POINTS``): whether it completes a meld
  with cards that opponent took from the pile, could form a meld with one of them, could still
  meld at all with cards the opponent may hold, or is dead (no meld possible). Cards near ones
  the opponent passed or threw count as less wanted. So it never feeds a meld it has seen
  unless every other discard costs clearly more deadwood.
* **Knock** only with gin, with deadwood of at most ``DEFENDER_LOW_DEADWOOD``, or once the
  stock is down to ``DEFENDER_LATE_STOCK`` cards; otherwise it holds (for gin, a lower knock or
  an undercut) and discards.
"""

from __future__ import annotations

import random

from ..observation import ObservationView
from ..rules.actions import DISCARD_BASE
from ..rules.cards import NUM_RANKS
from ..rules.config import RulesConfig, check_seed
from ..rules.melds import in_some_meld
from .reading import UnseenCardsPlayer, best_scored, draw_outlook, least_deadwood_after_take, least_deadwood_knock
from .settings import COMMON_SETTINGS, check_rules, unknown_settings_error

#: Aggressor: points of mean deadwood that a certain knock after the next draw is worth (the
#: chance to knock comes first: one more card of ~30 unseen that would let it knock outweighs
#: 3 points of deadwood).
AGGRESSOR_KNOCK_WEIGHT = 100.0
#: Defender: knock (when legal) with at most this much deadwood at any time ...
DEFENDER_LOW_DEADWOOD = 3
#: ... or with any legal knock once the stock holds at most this many cards.
DEFENDER_LATE_STOCK = 12
#: Defender: the danger of a discard to one opponent, by how it could meld in that opponent's
#: hand: dead (no meld possible), live (a meld of cards the opponent may hold), near (a meld
#: with a card the opponent took), completes (a meld with two cards the opponent took).
DANGER_POINTS = {"dead": 0.0, "live": 1.0, "near": 4.0, "completes": 15.0}
#: Defender: a live card beside one the opponent passed or threw (same rank or suit neighbour).
DANGER_LIVE_BUT_PASSED = 0.5

class _HeldOutBot(UnseenCardsPlayer):
    """Seed and rules handling shared by the held-out bots (no other settings)."""

    name = ""

    def __init__(self, seed: int | None = None, rules: str | RulesConfig | None = None, **unknown):
        """``seed`` breaks ties; ``rules`` is accepted and ignored (the observation shows all the
        bot reads); any other name raises a ValueError."""
        if unknown:
            raise unknown_settings_error(self.name, list(unknown), ["seed", "rules"], COMMON_SETTINGS)
        check_rules(rules)
        self.rng = random.Random(check_seed(seed))

# ----------------------------------------------------------------------------- aggressor


class AggressorBot(_HeldOutBot):
    """Held-out (evaluation only): races to knock (see the module docstring). ``act(observation) -> int``."""

    name = "aggressor"

    def takes(self, v: ObservationView, unseen: list[int]) -> bool:
        after_take = least_deadwood_after_take(v.hand, v.discard_top)
        if after_take <= v.knock_limit:
            return True
        mean_after_draw = draw_outlook(v.hand, unseen, v.knock_limit).mean_deadwood
        return after_take < mean_after_draw

    def discard_or_knock(self, v: ObservationView, unseen: list[int]) -> int:
        if v.legal_knocks():
            return least_deadwood_knock(self.rng, v)[1]
        scored = []
        for card in v.legal_discards():
            rest = v.hand ^ 1 << card
            knock_share, _, mean_deadwood = draw_outlook(rest, unseen, v.knock_limit)
            scored.append((AGGRESSOR_KNOCK_WEIGHT * knock_share - mean_deadwood, DISCARD_BASE + card))
        return best_scored(self.rng, scored)


# ----------------------------------------------------------------------------- defender


def danger_level(card: int, known: int, available: int) -> str:
    """How ``card`` could meld in an opponent's hand: ``"completes"`` (with two cards they are known
    to hold), ``"near"`` (with one of them and one card they may hold), ``"live"`` (with cards they
    may hold), ``"dead"`` (no meld). ``available`` holds every card they may hold (known included)."""
    rank, suit = card % NUM_RANKS, card // NUM_RANKS
    pairs = []  # the other two cards of every three-card meld through ``card``
    same_rank = [s * NUM_RANKS + rank for s in range(4) if s != suit]
    pairs += [(same_rank[i], same_rank[j]) for i in range(3) for j in range(i + 1, 3)]
    base = suit * NUM_RANKS
    for low in range(max(0, rank - 2), min(rank, NUM_RANKS - 3) + 1):
        pairs.append(tuple(base + r for r in range(low, low + 3) if r != rank))
    level = "dead"
    for a, b in pairs:
        if not (available >> a & 1 and available >> b & 1):
            continue
        held = (known >> a & 1) + (known >> b & 1)
        if held == 2:
            return "completes"
        level = "near" if held == 1 else ("live" if level == "dead" else level)
    return level


def _beside(card: int, cards: int) -> bool:
    """True if ``cards`` holds a card of ``card``'s rank or a suit neighbour (one rank apart)."""
    rank, suit = card % NUM_RANKS, card // NUM_RANKS
    for s in range(4):
        if s != suit and cards >> (s * NUM_RANKS + rank) & 1:
            return True
    return (rank > 0 and cards >> (card - 1) & 1) or (rank < NUM_RANKS - 1 and cards >> (card + 1) & 1)


def discard_danger(card: int, v: ObservationView, unseen_mask: int) -> float:
    """The defender's danger points of throwing ``card``, summed over every opponent."""
    total = 0.0
    for known, passed in zip(v.opponent_known, v.opponent_passed):
        level = danger_level(card, known, unseen_mask | known)
        if level == "live" and _beside(card, passed):
            total += DANGER_LIVE_BUT_PASSED
        else:
            total += DANGER_POINTS[level]
    return total


class DefenderBot(_HeldOutBot):
    """Held-out (evaluation only): safe discards, waits for a strong knock (see the module docstring).
    ``act(observation) -> int``."""

    name = "defender"

    def knock_wanted(self, deadwood: int, v: ObservationView) -> bool:
        return deadwood == 0 or deadwood <= DEFENDER_LOW_DEADWOOD or v.stock_size <= DEFENDER_LATE_STOCK

    def takes(self, v: ObservationView, unseen: list[int]) -> bool:
        if in_some_meld(v.hand, v.discard_top):
            return True
        after_take = least_deadwood_after_take(v.hand, v.discard_top)
        # The stock shrinks by one card at the draw after this one.
        return after_take <= v.knock_limit and self.knock_wanted(after_take, v)

    def discard_or_knock(self, v: ObservationView, unseen: list[int]) -> int:
        if v.legal_knocks():
            deadwood, action = least_deadwood_knock(self.rng, v)
            if self.knock_wanted(deadwood, v):
                return action
        unseen_mask = 0
        for bit in unseen:
            unseen_mask |= bit
        scored = []
        for card in v.legal_discards():
            mean_deadwood = draw_outlook(v.hand ^ 1 << card, unseen, v.knock_limit).mean_deadwood
            scored.append((-mean_deadwood - discard_danger(card, v, unseen_mask), DISCARD_BASE + card))
        return best_scored(self.rng, scored)


__all__ = [
    "AGGRESSOR_KNOCK_WEIGHT",
    "AggressorBot",
    "DANGER_POINTS",
    "DEFENDER_LATE_STOCK",
    "DEFENDER_LOW_DEADWOOD",
    "DefenderBot",
    "danger_level",
    "discard_danger",
]
