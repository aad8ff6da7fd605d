"""``simple``: Neller's SimpleGinRummyPlayer, adapted to the Oklahoma knock limit.

Todd Neller's simple player for the EAAI gin rummy challenge plays by three rules; here they are
with the knock limit of Oklahoma Gin in place of the fixed 10:

* **Draw**: take the face-up card (action 1, also when the upcard is offered) only if it would
  be part of some meld with the hand: a set (two more cards of its rank in hand) or a run (with
  hand cards of its suit, three or more consecutive ranks through it). Otherwise draw from the
  stock (0), or pass (2) while the upcard is offered.
* **Knock** as soon as a knock is legal (deadwood after the face-down discard within the knock
  limit; gin only under an Ace upcard), discarding the card that leaves the least deadwood.
* **Discard** otherwise the card, other than the one just taken from the pile, that leaves the
  least deadwood; ties at random.

The same policy runs on the engine state directly (``simple_action_for_state``) for the
rollouts of the ``search`` bot; both give the same action for the same random tie-break.
"""

from __future__ import annotations

import random

from ..observation import view
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import to_mask
from ..rules.config import RulesConfig, check_seed
from ..rules.melds import deadwood_after_discards, in_some_meld
from ..rules.round import Phase, RoundState
from .settings import COMMON_SETTINGS, check_rules, unknown_settings_error


def least_deadwood_discards(hand: int, candidates: list[int] | int) -> tuple[int, list[int]]:
    """``(least deadwood left, the candidate cards reaching it, ascending)`` for discarding one card
    of ``hand``; ``candidates``: ascending card ids, or a mask of them."""
    if not isinstance(candidates, int):
        candidates = to_mask(candidates)
    best = 1 << 30
    cards: list[int] = []
    for card, value in deadwood_after_discards(hand, candidates):
        if value < best:
            best, cards = value, [card]
        elif value == best:
            cards.append(card)
    return best, cards


def _pick(rng: random.Random, options: list[int]) -> int:
    return options[0] if len(options) == 1 else options[rng.randrange(len(options))]


class SimpleBot:
    """Neller's simple player for Oklahoma Gin (see the module docstring). ``act(observation) -> int``."""

    name = "simple"

    def __init__(self, seed: int | None = None, rules: str | RulesConfig | None = None, **unknown):
        """``seed`` breaks ties; ``rules`` is accepted and ignored (the observation shows all that
        simple reads), so that callers may pass the table's rules to every bot; any other name
        raises a ValueError."""
        if unknown:
            raise unknown_settings_error("simple", list(unknown), ["seed", "rules"], COMMON_SETTINGS)
        check_rules(rules)
        self.rng = random.Random(check_seed(seed))

    def act_states(self, states: list[RoundState]) -> list[int]:
        """The same policy on engine states (``simple_action_for_state``, the same tie-breaks from
        this bot's generator): the fast path the envs and training take. It reads only what the
        seat to act may know (its hand, the discard top, the knock limit, the card it may not
        discard), so it is the bot's play, not a peek at hidden cards."""
        rng = self.rng
        return [simple_action_for_state(state, rng) for state in states]

    def act(self, observation: dict) -> int:
        v = view(observation)
        legal = v.legal
        if not legal:
            raise ValueError("no legal action: this observation is not for the agent to act")
        if len(legal) == 1:
            return legal[0]
        if v.phase is Phase.OFFER or v.phase is Phase.DRAW:
            if TAKE_DISCARD in legal and v.discard_top >= 0 and in_some_meld(v.hand, v.discard_top):
                return TAKE_DISCARD
            return PASS if PASS in legal else DRAW_STOCK
        knocks = v.legal_knocks()
        if knocks:
            _, best = least_deadwood_discards(v.hand, knocks)
            return KNOCK_BASE + _pick(self.rng, best)
        _, best = least_deadwood_discards(v.hand, v.legal_discards())
        return DISCARD_BASE + _pick(self.rng, best)


def simple_action_for_state(state: RoundState, rng: random.Random) -> int:
    """The simple policy's action for the seat to act in an engine ``RoundState`` (full information
    is there, but only that seat's hand, the discard top and the knock limit are used)."""
    phase = state.phase
    hand = state.hands[state.current]
    if phase is Phase.DISCARD:
        best, cards = least_deadwood_discards(hand, state.discardable())
        # A knock is legal exactly when the discard leaves deadwood within the knock limit (docs/rules.md §5).
        base = KNOCK_BASE if best <= state.knock_limit else DISCARD_BASE
        return base + _pick(rng, cards)
    if phase is Phase.DRAW:
        if state.must_draw_stock:
            return DRAW_STOCK
        return TAKE_DISCARD if in_some_meld(hand, state.discard_pile[-1]) else DRAW_STOCK
    if phase is Phase.OFFER:
        return TAKE_DISCARD if in_some_meld(hand, state.discard_pile[-1]) else PASS
    raise ValueError("the round is over; no action to choose")
