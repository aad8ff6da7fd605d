"""``lookahead``: a one-draw lookahead player that races to knock and holds a low hand for gin.

Written as the teacher of the penalty-table policies (``training.train --bc-teacher lookahead``,
the penalty recipe of ``training.pipeline``); it plays every table. It reads only the observation and uses the shared reading of
``okgin_env.bots.reading`` (the unseen cards, and a hand's ``Outlook`` over the next stock draw:
the share of draws that allow a knock, the share that go gin, the mean deadwood left). Its
three settings (``LookaheadSettings``) were chosen on 3-player penalty matches against
``simple`` (docs/penalty_policies.md, "The teacher, lookahead", has the measurements):

* **Draw**: takes the face-up card when it allows a knock, or when it leaves more than
  ``take_margin`` points less deadwood than a stock draw leaves on average; else draws from the
  stock (passes an unwanted upcard).
* **Knock** with gin at once. With any other legal knock it looks for the discard that leaves the
  best chance of gin after the next draw (ties: the least deadwood); if that chance is at least
  ``hold_for_gin`` it discards that card and plays on, else it knocks with the least deadwood.
  Holding a hand that could knock costs little at the penalty tables (the hand's deadwood is
  already within the knock limit, and a knocker with more deadwood is undercut) and a gin
  charges every other player their deadwood plus 25.
* **Discard** the card whose loss gives the best next turn: ``knock_weight`` times the share of
  draws that allow a knock, less the mean deadwood after the draw.

Ties are broken by a ``random.Random(seed)``. The ``aggressor`` held-out bot shares the draw and
discard rules with ``take_margin=0`` and no holding; the two were written for different jobs
(``aggressor`` to measure generalisation and never to be trained against, this one to be learned
from), so a policy distilled from ``lookahead`` is no longer held out from the aggressor's style:
docs/penalty_policies.md says so where it reports that row.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from ..observation import ObservationView
from ..rules.actions import DISCARD_BASE
from ..rules.config import RulesConfig, check_seed
from ..rules.melds import deadwood_of_mask
from .reading import UnseenCardsPlayer, best_scored, draw_outlook, least_deadwood_after_take, least_deadwood_knock
from .settings import (
    COMMON_SETTINGS, LOOKAHEAD_SETTING_NAMES, LookaheadSettings, check_rules, unknown_settings_error,
)

class LookaheadBot(UnseenCardsPlayer):
    """One-draw lookahead (see the module docstring). ``LookaheadBot(seed=None, rules=None,
    settings=None, **settings by name)``; ``act(observation) -> int``."""

    name = "lookahead"

    def __init__(self, seed: int | None = None, rules: str | RulesConfig | None = None,
                 settings: LookaheadSettings | None = None, **options: Any):  # fmt: skip
        """``rules`` is accepted and ignored (the observation shows all the bot reads); an unknown
        name, a wrong type or a value out of range raises a ValueError listing the settings."""
        unknown = [name for name in options if name not in LOOKAHEAD_SETTING_NAMES]
        if unknown:
            allowed = [*LOOKAHEAD_SETTING_NAMES, "seed", "rules", "settings"]
            raise unknown_settings_error(
                self.name, unknown, allowed,
                f"{COMMON_SETTINGS}, settings (a LookaheadSettings), {LookaheadSettings.describe()}",
            )
        if settings is None:
            settings = LookaheadSettings()
        elif not isinstance(settings, LookaheadSettings):
            raise ValueError(f"settings must be a LookaheadSettings, got {type(settings).__name__}")
        check_rules(rules)
        self.settings = replace(settings, **options) if options else settings
        self.rng = random.Random(check_seed(seed))

    def discard_or_knock(self, v: ObservationView, unseen: list[int]) -> int:
        if v.legal_knocks():
            deadwood, knock = least_deadwood_knock(self.rng, v)
            held = None if deadwood == 0 else self._gin_hold(v, unseen)
            return knock if held is None else DISCARD_BASE + held
        scored = []
        for card in v.legal_discards():
            outlook = draw_outlook(v.hand ^ 1 << card, unseen, v.knock_limit)
            scored.append((self.settings.knock_weight * outlook.knock - outlook.mean_deadwood, card))
        return DISCARD_BASE + best_scored(self.rng, scored)

    def takes(self, v: ObservationView, unseen: list[int]) -> bool:
        after_take = least_deadwood_after_take(v.hand, v.discard_top)
        if after_take <= v.knock_limit:
            return True
        mean_after_draw = draw_outlook(v.hand, unseen, v.knock_limit).mean_deadwood
        return after_take + self.settings.take_margin < mean_after_draw

    def _gin_hold(self, v: ObservationView, unseen: list[int]) -> int | None:
        """The card to discard instead of knocking, or None to knock."""
        threshold = self.settings.hold_for_gin
        if threshold is None:
            return None
        best_key, best_card = None, None
        for card in v.legal_discards():
            rest = v.hand ^ 1 << card
            key = (draw_outlook(rest, unseen, v.knock_limit).gin, -deadwood_of_mask(rest))
            if best_key is None or key > best_key:
                best_key, best_card = key, card
        if best_key is None or best_key[0] < threshold:
            return None
        return best_card
