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
   least deadwood), so it holds melds and low cards like a real player's; every card a player
   took from the pile gets a meld (``infer_takes``), since players take face-up cards to meld
   them; and (``infer_discard``) the previous player's hand is improved until the card they just
   threw is one of their least-deadwood discards, as it was. Of ``consistency_tries`` such
   samples the bot keeps the first that agrees with what the opponents did, else the one that
   disagrees least (``SearchBot.inconsistencies``): a hand with which its player could have
   knocked (they did not), or a hand that melds a card its player passed or threw. Optionally
   (``max_resamples > 1``) only the previous player's hand is drawn again while it could have
   knocked. ``opponent_model="uniform"`` deals the unseen cards uniformly.
3. for every determinization plays **each candidate** and then the ``simple`` policy for every
   seat to the end of the round (common random numbers: all candidates see the same
   determinizations and the same rollout tie-breaks), and plays the candidate with the best mean
   round reward for itself (CONTRACT.md ``reward="points"``: zero-sum points), plus
   ``default_bonus`` points (1 by default) for the action ``simple`` would play. With more than
   two candidates the budget is spent in two stages (see ``SearchBot.search``): half picks two
   finalists, half compares them on fresh samples, so that an exactly scored knock is not beaten
   by the luckiest of several simulated discards.

The rules options that the observation does not show (preset scoring, bonuses, ``spade_double``
…) come from ``rules`` (a preset name or a ``RulesConfig``; default ``"classic"`` for two players
and ``"penalty"`` for three or four). The budget is ``rollouts`` playouts per decision (spread
over the candidates; reproducible for a seed); ``time_limit`` (seconds, optional) also stops
sampling once reached, at the price of reproducibility. The bot keeps no memory between
decisions: everything comes from the current observation.
"""

from __future__ import annotations

import copy
import random
import time

import numpy as np

from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import FULL_DECK_MASK, NUM_RANKS, from_mask, to_mask
from ..rules.config import RulesConfig, make_config
from ..rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask
from ..rules.round import Phase, RoundState
from ._view import ObservationView, view
from .simple import in_some_meld, simple_action_for_state


def round_state_from_parts(
    config: RulesConfig,
    *,
    hands: list[int],
    stock: list[int],
    discard_pile: list[int],
    upcard: int,
    knock_limit: int,
    dealer: int,
    current: int,
    phase: Phase,
    taken_card: int = -1,
    known: list[int] | None = None,
    passed: list[int] | None = None,
    offers_declined: int = 0,
    must_draw_stock: bool = False,
    discards: int = 0,
    reshuffles: int = 0,
    rng: np.random.Generator | None = None,
) -> RoundState:
    """A ``RoundState`` built from its parts (hands as masks; ``stock`` top last; pile bottom first).

    The state is made by the engine's constructor (so every field exists) and then overwritten.
    """
    n = config.num_players
    state = RoundState(config, list(range(52)), dealer, rng)
    state.hands = list(hands)
    state.stock = list(stock)
    state.discard_pile = list(discard_pile)
    state.upcard = upcard
    state.knock_limit = knock_limit
    state.phase = phase
    state.current = current
    state.taken_card = taken_card
    state.known = list(known) if known is not None else [0] * n
    state.passed = list(passed) if passed is not None else [0] * n
    state.offers_declined = offers_declined
    state.must_draw_stock = must_draw_stock
    state.discards = discards
    state.reshuffles = reshuffles
    state.history = []
    state.outcome = None
    state._legal = None
    return state


def _copy_state(state: RoundState) -> RoundState:
    """A copy for one playout (cheaper than ``RoundState.clone``: the random generator is shared)."""
    other = copy.copy(state)
    other.hands = list(state.hands)
    other.stock = list(state.stock)
    other.discard_pile = list(state.discard_pile)
    other.known = list(state.known)
    other.passed = list(state.passed)
    other.history = []
    return other


def playout(state: RoundState, rng: random.Random) -> RoundState:
    """Play ``simple`` for every seat until the round is over (in place); returns the state.

    ``simple_action_for_state`` only returns legal actions (tests check it against the engine's
    check), so the engine's legality check, a fifth of the search's time, is skipped.
    """
    apply = state.apply_unchecked
    while state.phase is not Phase.OVER:
        apply(simple_action_for_state(state, rng))
    return state


def _greedy_draws(hand: int, fixed: int, pool: list[int], draws: int, rng: random.Random) -> int:
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


def _meld_options(card: int, hand: int, pool: int) -> list[int]:
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


def _complete_melds(known: int, slots: int, pool: list[int], rng: random.Random) -> int:
    """``known`` plus, for each known card not yet in a meld, unseen cards that give it one
    (taken out of ``pool``), within ``slots`` added cards."""
    hand = known
    added = 0
    pool_mask = to_mask(pool)
    for card in from_mask(known):
        if in_some_meld(hand & ~(1 << card), card):
            continue
        options = [m for m in _meld_options(card, hand & ~(1 << card), pool_mask) if added + m.bit_count() <= slots]
        if not options:
            continue
        choice = options[rng.randrange(len(options))]
        hand |= choice
        added += choice.bit_count()
        pool_mask &= ~choice
        for c in from_mask(choice):
            pool.remove(c)
    return hand


class SearchBot:
    """Determinized Monte Carlo search with simple rollouts (see the module docstring)."""

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        rules: str | RulesConfig | None = None,
        rollouts: int = 480,
        max_discards: int = 4,
        max_knocks: int = 2,
        time_limit: float | None = None,
        opponent_model: str = "greedy",
        model_scale: float = 0.5,
        max_model_draws: int = 12,
        infer_discard: bool = True,
        max_repair: int = 12,
        default_bonus: float = 1.0,
        max_resamples: int = 1,
        infer_takes: bool = True,
        consistency_tries: int = 8,
        **rule_options,
    ):
        if rollouts < 1:
            raise ValueError(f"rollouts must be >= 1, got {rollouts}")
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(self.rng.getrandbits(64))
        self.rules = rules
        self.rule_options = rule_options
        if not isinstance(rules, RulesConfig):
            make_config(rules or "classic", **rule_options)  # unknown options and bad values fail here
        self.rollouts = rollouts
        self.max_discards = max_discards
        self.max_knocks = max_knocks
        self.time_limit = time_limit
        if opponent_model not in ("uniform", "greedy"):
            raise ValueError(f"opponent_model={opponent_model!r}; allowed: uniform, greedy")
        self.opponent_model = opponent_model
        self.model_scale = model_scale
        self.max_model_draws = max_model_draws
        self.infer_discard = infer_discard
        self.max_repair = max_repair
        self.default_bonus = default_bonus
        self.max_resamples = max_resamples
        self.infer_takes = infer_takes
        if consistency_tries < 1:
            raise ValueError(f"consistency_tries must be >= 1, got {consistency_tries}")
        self.consistency_tries = consistency_tries
        self._configs: dict[int, RulesConfig] = {}
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
        v = view(observation)
        if not v.legal:
            raise ValueError("no legal action: this observation is not for the agent to act")
        return self._choose(v)

    def _choose(self, v: ObservationView) -> int:
        self.last_values = {}
        if len(v.legal) == 1:
            return v.legal[0]
        candidates = self.candidates(v)
        if len(candidates) == 1:
            return candidates[0]
        return self.search(v, candidates)

    def candidates(self, v: ObservationView) -> list[int]:
        """The actions worth searching (a single one when the choice is obvious)."""
        if v.phase is not Phase.DISCARD:
            return list(v.legal)
        hand = v.hand
        knocks = sorted((deadwood_of_mask(hand & ~(1 << c)), c) for c in v.legal_knocks())
        if knocks and knocks[0][0] == 0:
            return [KNOCK_BASE + knocks[0][1]]  # gin: nothing beats it
        discards = sorted((deadwood_of_mask(hand & ~(1 << c)), -(c % 13), c) for c in v.legal_discards())
        chosen = [KNOCK_BASE + c for _, c in knocks[: self.max_knocks]]
        chosen += [DISCARD_BASE + c for _, _, c in discards[: self.max_discards]]
        return chosen

    def search(self, v: ObservationView, candidates: list[int]) -> int:
        """Pick among ``candidates`` by simulation; with more than two, in two stages.

        Taking the best of several noisy means favours the noisiest candidates (the winner's
        curse): a knock, scored exactly at the showdown, would lose to the luckiest of several
        discards whose futures are simulated. So half the budget picks two finalists (the best
        knock and the best discard when both kinds are there, else the best two), and the other
        half compares only those two, on fresh determinizations.
        """
        config = self.config_for(v.num_players)
        deadline = None if self.time_limit is None else time.perf_counter() + self.time_limit
        default = self.default_action(v, candidates)
        values: dict[int, float] = {}
        finalists = candidates
        budget = self.rollouts
        if len(candidates) > 2:
            first = self._simulate(v, config, candidates, max(1, budget // 2 // len(candidates)), deadline)
            values.update(first)
            knocks = [a for a in candidates if a >= KNOCK_BASE]
            discards = [a for a in candidates if a < KNOCK_BASE]
            if knocks and discards:
                finalists = [max(knocks, key=first.get), max(discards, key=first.get)]
            else:
                finalists = sorted(candidates, key=first.get, reverse=True)[:2]
            budget -= len(candidates) * max(1, budget // 2 // len(candidates))
        second = self._simulate(v, config, finalists, max(1, budget // len(finalists)), deadline)
        values.update(second)
        self.last_values = values
        bonus = self.default_bonus
        scores = [second[a] + (bonus if a == default else 0.0) for a in finalists]
        # Ties go to the first finalist: the engine's least-deadwood order.
        return finalists[scores.index(max(scores))]

    def _simulate(
        self, v: ObservationView, config: RulesConfig, actions: list[int], determinizations: int, deadline: float | None
    ) -> dict[int, float]:
        """Mean round reward of each action over the same ``determinizations`` sampled states."""
        totals = [0.0] * len(actions)
        done = 0
        for _ in range(determinizations):
            base = self.determinize(v, config)
            seed = self.rng.getrandbits(32)
            for i, action in enumerate(actions):
                state = _copy_state(base)
                state.apply(action)
                playout(state, random.Random(seed))
                assert state.outcome is not None
                totals[i] += state.outcome.rewards[0]
            done += 1
            if deadline is not None and time.perf_counter() > deadline:
                break
        return {a: t / done for a, t in zip(actions, totals)}

    def default_action(self, v: ObservationView, candidates: list[int]) -> int | None:
        """What ``simple`` would play here (it gets ``default_bonus`` points: deviating from it on
        the strength of a tiny, noisy difference tends to cost more than it wins)."""
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
        if self.consistency_tries == 1:
            return self._sample_hands_once(v, config)
        best = None
        for _ in range(self.consistency_tries):
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
        last_discard = self._last_discard(v) if self.infer_discard else -1
        if self.opponent_model == "greedy":
            initial_stock = 52 - n * hand_size - 1
            draws = min(self.max_model_draws, int(self.model_scale * max(0, initial_stock - v.stock_size) / n + 0.5))
        # A player takes a face-up card to meld it: first give each card an opponent took a meld
        # (for every opponent before any hand is filled, so that no partner is dealt away).
        melded = list(hands)
        for k in range(1, n):
            need = hand_size - hands[k].bit_count()
            if need < 0:
                raise ValueError(f"opponent {k} is shown holding more than {hand_size} cards")
            if self.infer_takes and hands[k]:
                melded[k] = _complete_melds(hands[k], need, unseen, rng)
        for k in range(1, n):
            known = hands[k]
            need = hand_size - known.bit_count()
            inferring = k == n - 1 and last_discard >= 0 and need > 0
            hand = melded[k]
            for attempt in range(self.max_resamples if inferring else 1):
                if attempt:
                    unseen.extend(from_mask(hand & ~melded[k]))  # put the rejected guess back
                    rng.shuffle(unseen)
                fixed = melded[k]
                hand = fixed
                for _ in range(need - (fixed & ~known).bit_count()):
                    hand |= 1 << unseen.pop()
                if draws and need:
                    hand = _greedy_draws(hand, fixed, unseen, min(draws, len(unseen)), rng)
                if not inferring:
                    break
                # The previous player just threw the discard top: it was one of their best discards
                # (a few more greedy turns until it is), and they did not knock, so their deadwood
                # is above the knock limit.
                steps = 0
                while steps < self.max_repair and deadwood_of_mask(hand) > best_discard_deadwood_of_mask(
                    hand | 1 << last_discard
                ):
                    hand = _greedy_draws(hand, fixed, unseen, 1, rng)
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
        n = v.num_players
        hands, stock = self._sample_hands(v, config)
        if len(stock) != v.stock_size:
            raise ValueError(
                f"the observation is inconsistent: {len(stock)} unseen cards left for a stock of {v.stock_size}"
            )
        below_top = from_mask(v.discard_pile & ~(1 << v.discard_top)) if v.discard_top >= 0 else []
        self.rng.shuffle(below_top)
        pile = below_top + ([v.discard_top] if v.discard_top >= 0 else [])
        phase = v.phase
        return round_state_from_parts(
            config,
            hands=hands,
            stock=stock,
            discard_pile=pile,
            upcard=v.upcard,
            knock_limit=v.knock_limit,
            dealer=(-v.seat_from_dealer) % n,
            current=0,
            phase=phase,
            taken_card=v.taken_card if phase is Phase.DISCARD else -1,
            known=[0] + list(v.opponent_known),
            passed=[0] + list(v.opponent_passed),
            offers_declined=(v.seat_from_dealer - 1) % n if phase is Phase.OFFER else 0,
            must_draw_stock=phase is Phase.DRAW and TAKE_DISCARD not in v.legal,
            discards=max(0, v.discard_pile.bit_count() - 1),
            reshuffles=v.reshuffles,
            rng=self.np_rng,
        )


__all__ = ["SearchBot", "playout", "round_state_from_parts"]
