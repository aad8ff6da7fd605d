"""``search``: determinized Monte Carlo search over the engine, with ``simple`` rollouts.

At each of its decisions that has a real choice, the bot

1. lists **candidate actions**: both choices of an upcard offer or a draw; for a discard the
   few cards that leave the least deadwood (``max_discards``) and, if knocking is legal, the few
   best knocks (``max_knocks``). A legal gin is played at once; a single legal action returned.
2. samples **determinizations**: full round states consistent with what its observation shows:
   its own hand, the discard pile (top card known; the order of the cards below it is not in the
   observation and is sampled), the cards each opponent is known to hold (taken from the pile),
   the knock limit, phase, stock size and reshuffle count. The unseen cards are dealt out to the
   opponents' hands (each holds ``hand_size`` cards: the bot only acts on its own turn) and the
   stock, with an **opponent model** (``opponent_model="greedy"``): a sampled hand plays as many
   greedy turns as the opponent has had (draw an unseen card, throw back the one leaving the
   least deadwood; turns are counted across stock reshuffles, ``stock_draws``), so it holds
   melds and low cards like a real player's; every card a player took from the pile gets a meld
   (``infer_takes``), since players take face-up cards to meld them; and (``infer_discard``)
   the previous player's hand is improved until the card they just threw is one of their
   least-deadwood discards, as it was. Of ``consistency_tries`` such samples the bot keeps the
   first that agrees with what the opponents did, else the one that disagrees least
   (``SearchBot.inconsistencies``): a hand with which its player could have knocked (they did
   not), or a hand that melds a card its player passed or threw. Optionally
   (``max_resamples > 1``) only the previous player's hand is drawn again while it could have
   knocked. ``opponent_model="uniform"`` deals the unseen cards uniformly. The engine turns each
   guess into a round state (``okgin_env.rules.infoset.InfoSet.state``); the sampling helpers are
   ``okgin_env.bots.belief``'s.
3. for every determinization plays **each candidate** and then the ``simple`` policy (or, with
   ``policy=PATH``, that policy file's player, greedy, for every seat (suit-symmetric where the
   file asks for it, as the shipped ones do): all playouts of a stage
   advance in lockstep, one batched forward pass per step) for every
   seat to the end of the round (common random numbers: all candidates see the same
   determinizations and the same rollout tie-breaks), and plays the candidate with the best mean
   round reward for itself (docs/api.md ``reward="points"``: zero-sum points), plus
   ``default_bonus`` points (1 by default) for the action ``simple`` would play. With more than
   two candidates the budget is spent in two stages (see ``SearchBot.search``): half picks two
   finalists, half compares them on fresh samples, so that an exactly scored knock is not beaten
   by the luckiest of several simulated discards.

The rules options that the observation does not show (preset scoring, bonuses, ``spade_double``
…) come from ``rules`` (a preset name or a ``RulesConfig``; default ``"classic"`` for two players
and ``"penalty"`` for three or four). The settings are one ``SearchSettings`` (checked: a wrong
name, type or range is a ValueError). The budget is ``rollouts`` playouts per decision (spread
over the candidates; reproducible for a seed). ``time_limit`` (seconds per decision, off by
default) is a budget the bot keeps as well: a new sample starts only if, at the pace of the
samples before it, it ends in time, and no playout starts once the time is spent (the first
stage may use half of it), so a decision runs over by little more than the playout under way;
with it, how far the search gets depends on the machine's speed, so decisions are no longer
reproducible. The bot keeps no memory between decisions: everything comes from the current
observation.
"""

from __future__ import annotations

import random
from dataclasses import replace
from time import perf_counter
from typing import Any

import numpy as np

from ..observation import ObservationView, view
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import FULL_DECK_MASK, from_mask
from ..rules.config import OPTION_NAMES, RulesConfig, check_seed, make_config
from ..rules.infoset import InfoSet
from ..rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask, in_some_meld
from ..rules.round import Phase, RoundState
from .belief import complete_melds, greedy_draws, stock_draws
from .settings import (
    COMMON_SETTINGS,
    SEARCH_SETTING_NAMES,
    SearchSettings,
    check_rules,
    unknown_settings_error,
)
from .simple import simple_action_for_state
from ..episode import seat_observation
from ..policy_loaders import load_policy_file


def playout(state: RoundState, rng: random.Random) -> RoundState:
    """Play ``simple`` for every seat until the round is over (in place); returns the state.

    ``simple_action_for_state`` only returns legal actions (tests check it against the engine's
    check), so the engine's legality check, a fifth of the search's time, is skipped.
    """
    apply = state.apply_unchecked
    while state.phase is not Phase.OVER:
        apply(simple_action_for_state(state, rng))
    return state


#: Rule options that change the bot's rules (``num_players`` is read from each observation).
RULE_OPTIONS = tuple(name for name in OPTION_NAMES if name not in ("rules", "num_players"))


class SearchBot:
    """Determinized Monte Carlo search with simple rollouts (see the module docstring).

    ``SearchBot(seed=None, rules=None, settings=None, **options)``: ``settings`` a
    ``SearchSettings`` (default: the defaults), ``options`` its fields by name (they override
    ``settings``) and rule options (``gin_bonus=...``: they change ``rules``). Anything else, or a
    value of the wrong type or out of range, raises a ValueError listing the settings.
    """

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | RulesConfig | None = None,
        settings: SearchSettings | None = None,
        **options: Any,
    ):
        seed = check_seed(seed)
        rules = check_rules(rules)
        if settings is None:
            settings = SearchSettings()
        elif not isinstance(settings, SearchSettings):
            raise ValueError(f"settings must be a SearchSettings, got {type(settings).__name__}")
        changes = {k: v for k, v in options.items() if k in SEARCH_SETTING_NAMES}
        rule_options = {k: v for k, v in options.items() if k not in changes}
        if "num_players" in rule_options:
            raise ValueError("num_players is not a search setting: the bot reads the player count from the observation")
        unknown = [k for k in rule_options if k not in RULE_OPTIONS]
        if unknown:
            raise unknown_settings_error(
                "search",
                unknown,
                [*SEARCH_SETTING_NAMES, "seed", "rules", "settings"],
                f"{COMMON_SETTINGS}, settings (a SearchSettings), {SearchSettings.describe()}; "
                "rule options such as gin_bonus are also accepted and change rules",
            )
        self.settings = replace(settings, **changes) if changes else settings
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(self.rng.getrandbits(64))
        if isinstance(rules, RulesConfig) and rule_options:
            rules, rule_options = make_config(rules, **rule_options), {}  # checked like any derived config
        elif not isinstance(rules, RulesConfig):
            make_config(rules or "classic", **rule_options)  # bad rule values fail here
        self.rules = rules
        self.rule_options = rule_options
        self._configs: dict[int, RulesConfig] = {}
        self._playout_policy: Any = None
        self._network_choice: int | None = None  # the network's move at the decision being searched
        if self.settings.policy is not None:
            # Loaded once, for the table's rules (a file made for others is refused here).
            table = rules if isinstance(rules, RulesConfig) else make_config(rules or "classic", **rule_options)
            self._playout_policy = load_policy_file(self.settings.policy, rules=table)
            if not callable(getattr(self._playout_policy, "act_batch", None)):
                raise ValueError(f"search: policy={self.settings.policy!r} loads no batched policy (act_batch)")
        self.last_values: dict[int, float] = {}  # mean value per candidate of the last search

    # ------------------------------------------------------------------ configuration
    def config_for(self, num_players: int) -> RulesConfig:
        config = self._configs.get(num_players)
        if config is None:
            rules = self.rules
            if isinstance(rules, RulesConfig):
                config = rules if rules.num_players == num_players else make_config(rules, num_players=num_players)
            else:
                preset = rules or ("classic" if num_players == 2 else "penalty")
                config = make_config(preset, num_players=num_players, **self.rule_options)
            self._configs[num_players] = config
        return config

    # ------------------------------------------------------------------ policy
    def act(self, observation: dict) -> int:
        limit = self.settings.time_limit
        deadline = None if limit is None else perf_counter() + limit  # the budget includes decoding
        v = view(observation)
        if not v.legal:
            raise ValueError("no legal action: this observation is not for the agent to act")
        self.last_values = {}
        if len(v.legal) == 1:
            return v.legal[0]
        candidates = self.candidates(v)
        self._network_choice = None
        if self._playout_policy is not None:
            # The network's own move is always searched, first (ties go to it), and is the default
            # that gets ``default_bonus``: the search departs from the network only on evidence.
            choice = int(self._playout_policy.act_batch(np.asarray(observation["observation"])[None],
                                                         np.asarray(observation["action_mask"])[None])[0])
            self._network_choice = choice
            candidates = [choice] + [a for a in candidates if a != choice]
        if len(candidates) == 1:
            return candidates[0]
        return self.search(v, candidates, deadline=deadline)

    def candidates(self, v: ObservationView) -> list[int]:
        """The actions worth searching (a single one when the choice is obvious)."""
        if v.phase is not Phase.DISCARD:
            return list(v.legal)
        hand = v.hand
        knocks = sorted((deadwood_of_mask(hand & ~(1 << c)), c) for c in v.legal_knocks())
        if knocks and knocks[0][0] == 0:
            return [KNOCK_BASE + knocks[0][1]]  # gin: nothing beats it
        discards = sorted((deadwood_of_mask(hand & ~(1 << c)), -(c % 13), c) for c in v.legal_discards())
        chosen = [KNOCK_BASE + c for _, c in knocks[: self.settings.max_knocks]]
        chosen += [DISCARD_BASE + c for _, _, c in discards[: self.settings.max_discards]]
        return chosen

    def search(self, v: ObservationView, candidates: list[int], *, deadline: float | None = None) -> int:
        """Pick among ``candidates`` by simulation; with more than two, in two stages.

        Taking the best of several noisy means favours the noisiest candidates (the winner's
        curse): a knock, scored exactly at the showdown, would lose to the luckiest of several
        discards whose futures are simulated. So half the budget picks two finalists (the best
        knock and the best discard when both kinds are there, else the best two), and the other
        half compares only those two, on fresh determinizations.

        ``deadline`` (a ``time.perf_counter()`` value; default: now plus ``time_limit``, if set)
        stops sampling: the first stage may use half of the time left, the finalists the rest.
        Candidates come in the engine's least-deadwood order; a stage that the time leaves
        without a single full sample falls back on that order, and without any sample the bot
        plays what ``simple`` would.
        """
        settings = self.settings
        config = self.config_for(v.num_players)
        if deadline is None and settings.time_limit is not None:
            deadline = perf_counter() + settings.time_limit
        default = self.default_action(v, candidates)
        values: dict[int, float] = {}
        finalists = candidates
        budget = settings.rollouts
        if len(candidates) > 2:
            half_time = None if deadline is None else (perf_counter() + deadline) / 2
            first = self._simulate(v, config, candidates, max(1, budget // 2 // len(candidates)), half_time)
            values.update(first)
            knocks = [a for a in candidates if a >= KNOCK_BASE]
            discards = [a for a in candidates if a < KNOCK_BASE]
            order = first.get if first else (lambda a: -candidates.index(a))
            if knocks and discards:
                finalists = [max(knocks, key=order), max(discards, key=order)]
            else:
                finalists = sorted(candidates, key=order, reverse=True)[:2]
            network = self._network_choice  # with policy: the network's move stays a finalist, first
            if network in candidates and network not in finalists:
                finalists = [network, max(finalists, key=order)]
            elif network in finalists:
                finalists = [network] + [a for a in finalists if a != network]
            budget -= len(candidates) * max(1, budget // 2 // len(candidates))
        second = self._simulate(v, config, finalists, max(1, budget // len(finalists)), deadline)
        values.update(second)
        self.last_values = values
        scored = second or values  # the first stage's means when the time ran out before a final sample
        if not scored:
            return default
        bonus = settings.default_bonus
        scores = [scored[a] + (bonus if a == default else 0.0) for a in finalists]
        # Ties go to the first finalist: the engine's least-deadwood order.
        return finalists[scores.index(max(scores))]

    def _simulate(
        self, v: ObservationView, config: RulesConfig, actions: list[int], determinizations: int, deadline: float | None
    ) -> dict[int, float]:
        """Mean round reward of each action over the same ``determinizations`` sampled states.

        With a ``deadline``, a new sample starts only if one more, at the mean pace so far, ends
        before it, and past it no playout starts; a sample that not every action was played on
        is dropped (all actions see the same samples), so the result may be empty.
        """
        if self._playout_policy is not None:
            return self._simulate_with_policy(v, config, actions, determinizations, deadline)
        totals = [0.0] * len(actions)
        done = 0
        started = perf_counter() if deadline is not None else 0.0
        for _ in range(determinizations):
            if deadline is not None:
                now = perf_counter()
                if now > deadline or (done and now + (now - started) / done > deadline):
                    break
            base = self.determinize(v, config)
            seed = self.rng.getrandbits(32)
            rewards = []
            for action in actions:
                if deadline is not None and perf_counter() > deadline:
                    break
                state = base.copy()
                state.apply(action)
                playout(state, random.Random(seed))
                rewards.append(state.outcome.rewards[0])
            if len(rewards) < len(actions):
                break
            for i, reward in enumerate(rewards):
                totals[i] += reward
            done += 1
        return {a: t / done for a, t in zip(actions, totals)} if done else {}

    def _simulate_with_policy(
        self, v: ObservationView, config: RulesConfig, actions: list[int], determinizations: int, deadline: float | None
    ) -> dict[int, float]:
        """``_simulate`` with the policy network playing the playouts: every determinization and
        action of the stage is one playout, and all of them advance together (one batched
        forward pass per step). With a ``deadline``, determinizations are sampled while time is
        left and the playouts stop being extended past it (a stage cut short returns nothing)."""
        bases: list[RoundState] = []
        for _ in range(determinizations):
            if deadline is not None and perf_counter() > deadline:
                break
            bases.append(self.determinize(v, config))
        if not bases:
            return {}
        states = []
        for base in bases:
            for action in actions:
                state = base.copy()
                state.apply(action)
                states.append(state)
        scores, target, policy = list(v.scores), v.target_score, self._playout_policy
        live = [state for state in states if state.phase is not Phase.OVER]
        while live:
            if deadline is not None and perf_counter() > deadline:
                return {}
            views = [seat_observation(state, scores, target, state.current) for state in live]
            chosen = policy.act_batch(np.stack([o["observation"] for o in views]), np.stack([o["action_mask"] for o in views]))
            for state, action in zip(live, chosen.tolist()):
                state.apply(action)
            live = [state for state in live if state.phase is not Phase.OVER]
        count = len(actions)
        return {a: sum(states[d * count + i].outcome.rewards[0] for d in range(len(bases))) / len(bases)
                for i, a in enumerate(actions)}

    def default_action(self, v: ObservationView, candidates: list[int]) -> int | None:
        """What ``simple`` would play here, or with ``policy`` what the network plays (it gets
        ``default_bonus`` points: deviating from it on the strength of a tiny, noisy difference
        tends to cost more than it wins)."""
        if self._playout_policy is not None and self._network_choice in candidates:
            return self._network_choice
        if v.phase is not Phase.DISCARD:
            take = TAKE_DISCARD in v.legal and v.discard_top >= 0 and in_some_meld(v.hand, v.discard_top)
            return TAKE_DISCARD if take else (PASS if v.phase is Phase.OFFER else DRAW_STOCK)
        for action in candidates:  # candidates come sorted: best knocks first, then least-deadwood discards
            return action
        return None

    # ------------------------------------------------------------------ sampling
    def _sample_hands(self, v: ObservationView, config: RulesConfig) -> tuple[list[int], list[int]]:
        """Hands for every seat and the stock (top last): of ``consistency_tries`` samples, the first
        that breaks none of the checks of ``inconsistencies`` (else the one that breaks fewest)."""
        if self.settings.consistency_tries == 1:
            return self._sample_hands_once(v, config)
        best = None
        for _ in range(self.settings.consistency_tries):
            hands, stock = self._sample_hands_once(v, config)
            count = self.inconsistencies(v, hands)
            if best is None or count < best[0]:
                best = (count, hands, stock)
            if count == 0:
                break
        return best[1], best[2]

    @staticmethod
    def inconsistencies(v: ObservationView, hands: list[int]) -> int:
        """How badly sampled opponent hands disagree with what their players did, for rejection.

        A player who could have knocked would have (3 counts: most players knock when they can,
        and a hand that could is a much closer threat than one that could not); and nobody passes
        or throws a card that melds with their hand (1 count per such card; their hand has
        changed since, so this is only likely, not certain).
        """
        count = 0
        checks_knock = v.phase is not Phase.OFFER
        for k in range(1, v.num_players):
            hand = hands[k]
            if checks_knock and deadwood_of_mask(hand) <= v.knock_limit:
                count += 3
            count += sum(in_some_meld(hand, card) for card in from_mask(v.opponent_passed[k - 1]))
        return count

    def _sample_hands_once(self, v: ObservationView, config: RulesConfig) -> tuple[list[int], list[int]]:
        """Hands for every seat and the stock (top last), sampled from the observation alone."""
        n = v.num_players
        rng = self.rng
        hands = [v.hand] + list(v.opponent_known)
        seen = v.hand | v.discard_pile
        for known in v.opponent_known:
            seen |= known
        unseen = from_mask(FULL_DECK_MASK & ~seen)
        rng.shuffle(unseen)
        hand_size = config.hand_size
        draws = 0
        settings = self.settings
        last_discard = self._last_discard(v) if settings.infer_discard else -1
        if settings.opponent_model == "greedy":
            turns = stock_draws(n, hand_size, v.stock_size, v.reshuffles) / n
            draws = min(settings.max_model_draws, int(settings.model_scale * turns + 0.5))
        # A player takes a face-up card to meld it: first give each card an opponent took a meld
        # (for every opponent before any hand is filled, so that no partner is dealt away).
        melded = list(hands)
        for k in range(1, n):
            need = hand_size - hands[k].bit_count()
            if need < 0:
                raise ValueError(f"opponent {k} is shown holding more than {hand_size} cards")
            if settings.infer_takes and hands[k]:
                melded[k] = complete_melds(hands[k], need, unseen, rng)
        for k in range(1, n):
            known = hands[k]
            need = hand_size - known.bit_count()
            inferring = k == n - 1 and last_discard >= 0 and need > 0
            hand = melded[k]
            for attempt in range(settings.max_resamples if inferring else 1):
                if attempt:
                    unseen.extend(from_mask(hand & ~melded[k]))  # put the rejected guess back
                    rng.shuffle(unseen)
                fixed = melded[k]
                hand = fixed
                for _ in range(need - (fixed & ~known).bit_count()):
                    hand |= 1 << unseen.pop()
                if draws and need:
                    hand = greedy_draws(hand, fixed, unseen, min(draws, len(unseen)), rng)
                if not inferring:
                    break
                # The previous player just threw the discard top: it was one of their best discards
                # (a few more greedy turns until it is), and they did not knock, so their deadwood
                # is above the knock limit.
                steps = 0
                while steps < settings.max_repair and deadwood_of_mask(hand) > best_discard_deadwood_of_mask(
                    hand | 1 << last_discard
                ):
                    hand = greedy_draws(hand, fixed, unseen, 1, rng)
                    steps += 1
                if deadwood_of_mask(hand) > v.knock_limit:
                    break
            hands[k] = hand
        stock = unseen
        if draws:
            rng.shuffle(stock)  # the thrown-back cards went to the front
        return hands, stock

    @staticmethod
    def _last_discard(v: ObservationView) -> int:
        """The card the previous player just threw, or -1 if nobody has thrown one yet this round."""
        if v.phase is Phase.OFFER:
            return -1
        if v.taken_card >= 0:  # taken from the pile this turn
            upcard_offer = v.taken_card == v.upcard and not v.discard_pile  # the offered upcard
            return -1 if upcard_offer else v.taken_card
        if v.phase is Phase.DRAW and TAKE_DISCARD not in v.legal:
            return -1  # everybody passed the upcard
        if v.discard_top < 0 or v.discard_pile == 1 << v.upcard:
            return -1  # only the declined upcard lies there
        return v.discard_top

    def determinize(self, v: ObservationView, config: RulesConfig) -> RoundState:
        """One full round state consistent with the observation; the observer is seat 0."""
        hands, stock = self._sample_hands(v, config)
        if len(stock) != v.stock_size:
            raise ValueError(
                f"the observation is inconsistent: {len(stock)} unseen cards left for a stock of {v.stock_size}"
            )
        # The samplers deal exactly the unseen cards, as a test checks: no need to check each state.
        return InfoSet.from_view(v, config).state(hands[1:], stock, self.rng, engine_rng=self.np_rng, validate=False)


__all__ = ["RULE_OPTIONS", "SearchBot", "SearchSettings", "playout"]
