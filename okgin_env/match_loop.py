"""The match loop: policies play one match (or one round) on the rules engine.

``play_match(config, policies, rng)`` is what evaluation, training's evaluation and decision
labelling all run. Each decision gives the acting seat exactly the observation dict that
``raw_env.observe`` gives it (``observation.encode`` and the legal-action mask), without the
PettingZoo wrappers, which would cost more than fast bots themselves::

    from gymnasium.utils import seeding
    from okgin_env.bots import make_bot
    from okgin_env.match_loop import play_match
    from okgin_env.rules.config import make_config

    config = make_config("classic")
    rng, _ = seeding.np_random(7)  # the generator raw_env.reset(seed=7) deals with
    result = play_match(config, [make_bot("simple", seed=1), make_bot("random", seed=2)], rng)
    result.winner, result.scores, result.rounds

``on_decision(match, seat, observation)`` is called before each decision (to record or label
it) and may return True to stop the match there. ``on_round(match, outcome)`` is called at the
end of each round, before the next deal, while ``match.round`` is still the finished round (its
``deck``, ``history`` and ``reshuffle_orders``: what ``okgin_env.records`` writes).
``max_rounds`` bounds a match whose rounds keep ending without a winner (policies that never
knock): the match then ends *truncated*.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .echo import failure, shown
from .episode import (
    DEFAULT_MAX_ROUNDS,
    EPISODES,
    check_max_rounds,
    round_cap_reached,
    seat_observation,
)
from .rules.actions import NUM_ACTIONS, action_index
from .rules.config import RulesConfig
from .rules.match import MatchState
from .rules.showdown import RoundOutcome


class PolicyError(ValueError):
    """A policy failed at a decision of ``play_match``: its ``act`` raised, or returned no legal
    action id. ``seat`` is whose policy; the message says what happened in one line."""

    def __init__(self, seat: int, message: str):
        super().__init__(message)
        self.seat = seat

    def __reduce__(self) -> tuple:  # (so that it crosses from a worker process intact)
        return PolicyError, (self.seat, str(self))


DecisionHook = Callable[[MatchState, int, dict[str, np.ndarray]], Any]
RoundHook = Callable[[MatchState, RoundOutcome], Any]


@dataclass
class MatchResult:
    """How one match (or round) ended.

    ``winner``: the winning seat; None for a drawn round with ``episode="round"`` and for a
    match that was stopped or truncated. ``outcomes``: every round's ``RoundOutcome`` in order.
    ``decisions[seat]`` and ``seconds[seat]``: how many decisions each seat made and the time
    its policy spent in ``act``. ``match``: the final ``MatchState``.
    """

    winner: int | None
    scores: list[int]
    outcomes: list[RoundOutcome]
    decisions: list[int]
    seconds: list[float]
    rounds: int
    truncated: bool
    stopped: bool
    match: MatchState


def play_match(
    config: RulesConfig,
    policies: Sequence[Any],
    rng: np.random.Generator,
    *,
    episode: str = "match",
    deck: Sequence[int | str] | None = None,
    dealer: int | None = None,
    on_decision: DecisionHook | None = None,
    max_rounds: int | None = DEFAULT_MAX_ROUNDS,
    on_round: RoundHook | None = None,
) -> MatchResult:
    """Play one match (``episode="match"``) or one round (``"round"``) with ``policies[seat]``.

    ``rng`` deals every round (``gymnasium.utils.seeding.np_random(s)`` deals as
    ``raw_env.reset(seed=s)`` does); ``deck``/``dealer`` fix the first round as the env's reset
    options do. A policy that raises, or returns no legal action id, ends the match with a
    ``PolicyError`` (a ValueError) naming its seat.
    """
    if episode not in EPISODES:
        raise ValueError(f"episode={episode!r}; allowed: {', '.join(EPISODES)}")
    n = config.num_players
    if len(policies) != n:
        raise ValueError(f"policies must give one policy per seat ({n}), got {len(policies)}")
    max_rounds = check_max_rounds(max_rounds)
    match = MatchState(config, rng, deck=deck, dealer=dealer)
    decisions = [0] * n
    seconds = [0.0] * n
    outcomes: list[RoundOutcome] = []
    winner: int | None = None
    truncated = stopped = False
    while True:
        state = match.round
        seat = state.current
        observation = seat_observation(state, match.scores, config.target_score, seat, to_act=True)
        if on_decision is not None and on_decision(match, seat, observation):
            stopped = True
            break
        start = time.perf_counter()
        try:
            action = policies[seat].act(observation)
        except Exception as error:  # the policy's own failure: named with its seat, in one line
            raise PolicyError(seat, f"player_{seat}'s policy raised {failure(error)}") from error
        seconds[seat] += time.perf_counter() - start
        decisions[seat] += 1
        action_id = _action_id(seat, action)
        try:
            checked = match.round.checked(action_id)
        except ValueError as error:
            raise PolicyError(seat, f"player_{seat}'s policy played an illegal move: {error}") from None
        outcome = match.apply_unchecked(checked)
        if outcome is None:
            continue
        outcomes.append(outcome)
        if on_round is not None:
            on_round(match, outcome)
        if episode == "round":
            winner = outcome.winner
            break
        if match.is_over:
            winner = match.winner
            break
        if round_cap_reached(match, max_rounds):
            truncated = True
            break
        match.deal_next_round()
    return MatchResult(
        winner=winner,
        scores=list(match.scores),
        outcomes=outcomes,
        decisions=decisions,
        seconds=seconds,
        rounds=len(outcomes),
        truncated=truncated,
        stopped=stopped,
        match=match,
    )


def _action_id(seat: int, action: Any) -> int:
    """``action`` as an int (``rules.actions.action_index``); a PolicyError otherwise."""
    index = action_index(action)
    if index is None:
        raise PolicyError(seat, f"player_{seat}'s policy played {shown(action)}, which is no action id (an int "
                                f"in 0..{NUM_ACTIONS - 1})")
    return index
