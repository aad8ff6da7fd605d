"""Episodes and rewards: the options and their checks, and what the end of a round pays.

Shared by the AEC env (``okgin_env.env``), the batch engine (``okgin_env.batch``) and the match
loop (``okgin_env.match_loop``), so all end episodes and pay rewards by one rule:

* ``episode="match"`` (default): rounds are dealt until the match ends (docs/rules.md §8);
  ``episode="round"``: the episode is one round.
* ``max_rounds`` (default ``DEFAULT_MAX_ROUNDS`` = 200; ``None``: unbounded): a match still
  undecided after that many rounds ends **truncated** (Gymnasium/PettingZoo truncation: not a
  termination, no winner). Sensible play never reaches it (simple against simple: 10 rounds on
  average, at most 22 in 1,000 seeded classic matches); only policies that (almost) never knock
  do: every round then ends as a draw and the match would never end.
* ``reward="points"`` (default): at the end of every round each seat receives the round's
  zero-sum reward (``RoundOutcome.rewards``); ``reward="win"``: +1 to the winner and -1 to the
  others when the episode ends (with ``episode="round"`` the round's winner; 0 to all on a draw
  and on a truncated match).
* House rules (docs/rules.md §11: ``box_bonus``, ``game_bonus``, ``shutout_multiplier``; classic
  only): when a match ends by the rules (not truncated), ``MatchState`` adds the bonuses to the
  reported ``scores``. With ``reward="points"`` the step that ends the match pays, on top of the
  round's reward, the zero-sum reward of the bonuses (``MatchBonus.rewards``: with two players
  ``+(own bonus - other's)``), so a seat's rewards over a match add up to its final score minus
  the other's, bonuses included; this holds with ``episode="round"`` too, in the rare round that
  ends the match. That step's ``infos`` also hold ``MATCH_BONUS_INFO`` (``"match_bonus"``):
  ``MatchBonus.to_dict()`` (rounds_won, box, game, shutout, multiplier, scores_before, scores,
  points, rewards), whenever a house rule is on, even when every bonus came to 0. ``reward="win"``
  is unchanged (the bonuses never change who won).

Also here: the check of reset options
(``check_reset_options``; seeds use ``rules.config.check_seed``, as the bots do), and the finite observation space every env declares
(``observation_bounds``, from the layout and the largest score one round can give,
``max_round_points``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from .features import feature_bounds, with_features
from .observation import TARGET_SCALE, check_observation, encode, layout_for
from .rules.actions import NUM_ACTIONS
from .rules.config import OPTION_NAMES, RulesConfig, check_seed, is_int
from .rules.match import MatchBonus, MatchState
from .rules.round import RoundState
from .rules.showdown import RoundOutcome

EPISODES = ("match", "round")
REWARDS = ("points", "win")
#: About ten times the most rounds a simple-vs-simple match took (22 in 1,000 seeded classic matches).
DEFAULT_MAX_ROUNDS = 200
#: An episode's settings beside the rule options: what a game record's ``env`` holds besides them.
EPISODE_OPTIONS = ("episode", "reward", "max_rounds")
RESET_OPTIONS = ("deck", "dealer")
#: The ``infos`` key of the match-end house-rule bonuses (``MatchBonus.to_dict()``), at the step that ends the match.
MATCH_BONUS_INFO = "match_bonus"


def check_options(rule_options: Mapping[str, object], episode: str, reward: str, own_options: Iterable[str]) -> None:
    """ValueError for an unknown option (``rule_options`` holds what is left after the caller's own
    keywords, ``own_options``, which the message lists with the rule options) or a bad episode/reward."""
    unknown = sorted(set(rule_options) - set(OPTION_NAMES))
    if unknown:
        allowed = [*own_options, *(name for name in OPTION_NAMES if name not in ("rules", "num_players"))]
        raise ValueError(f"unknown option(s) {unknown}; allowed: {', '.join(allowed)}")
    if episode not in EPISODES:
        raise ValueError(f"episode={episode!r}; allowed: {', '.join(EPISODES)}")
    if reward not in REWARDS:
        raise ValueError(f"reward={reward!r}; allowed: {', '.join(REWARDS)}")


def check_max_rounds(max_rounds: Any) -> int | None:
    """``max_rounds`` as an int, if it is None or a positive int (Python or numpy); else a ValueError."""
    if max_rounds is None:
        return None
    if not is_int(max_rounds) or max_rounds < 1:
        raise ValueError(f"max_rounds must be None (unbounded) or a positive int, got {max_rounds!r}")
    return int(max_rounds)


def check_flag(name: str, value: Any) -> bool:
    """``value`` if it is a bool (Python or numpy); else a ValueError naming the option."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_reset_options(options: Any) -> dict[str, Any]:
    """A copy of the reset ``options`` (None: empty); a ValueError unless it is a dict (a mapping)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(
            f"options must be a dict (keys: {', '.join(RESET_OPTIONS)}) or None, got {type(options).__name__} {options!r}"
        )
    return dict(options)


def round_cap_reached(match: MatchState, max_rounds: int | None) -> bool:
    """The match is undecided after ``max_rounds`` rounds: it ends truncated."""
    return max_rounds is not None and not match.is_over and match.rounds_played >= max_rounds


class RoundEnd(NamedTuple):
    """What the end of a round means for the episode."""

    terminated: bool  # the episode ended by the rules (the round, or the match, is over)
    truncated: bool  # the match reached max_rounds undecided
    rewards: list[float] | None  # each seat's reward for this round, or None when it pays nothing
    bonus: MatchBonus | None = None  # the house-rule bonuses, when this round ended the match with one on


def end_of_round(
    outcome: RoundOutcome, match: MatchState, episode: str, reward: str, max_rounds: int | None = None
) -> RoundEnd:
    """Called once the round's outcome is recorded in ``match`` (``match.is_over`` already says
    whether the match ended, ``match.bonus`` its house-rule bonuses)."""
    terminated = episode == "round" or match.is_over
    truncated = not terminated and round_cap_reached(match, max_rounds)
    bonus = match.bonus  # set only by the round that ended the match (the last one recorded)
    if reward == "points":
        if bonus is None:
            return RoundEnd(terminated, truncated, outcome.rewards)
        paid = [r + b for r, b in zip(outcome.rewards, bonus.rewards)]
        return RoundEnd(terminated, truncated, paid, bonus)
    if terminated:
        winner = outcome.winner if episode == "round" else match.winner
        if winner is not None:
            return RoundEnd(True, False, [1.0 if seat == winner else -1.0 for seat in range(match.num_players)], bonus)
    return RoundEnd(terminated, truncated, None, bonus)


def max_round_points(config: RulesConfig) -> int:
    """An upper bound on the points (classic) or penalty points (penalty) one seat gets in one round.

    A showdown charges or scores at most a whole hand of deadwood (every card counts at most 10)
    plus the larger of the gin and undercut bonuses (an undercut scores the knocker's deadwood,
    at most the knock limit 10, plus its bonus); a spade upcard may double it (docs/rules.md §9)."""
    points = 10 * config.hand_size + max(config.gin_bonus, config.undercut_bonus)
    return 2 * points if config.spade_double else points


def observation_bounds(config: RulesConfig, observation: str = "cards") -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` float32: the least and largest value of every observation entry under
    ``config``, the envs' finite ``Box`` (with ``observation="features"`` followed by
    ``okgin_env.features.feature_bounds``). Card planes and one-hots are 0/1; knock limit and stock
    size are at most 1 once scaled; a seat's score is below the target before the last round,
    which adds at most ``max_round_points``; reshuffles are at most ``max_reshuffles`` (none in
    classic; the bound is at least 1, as Gymnasium warns about an entry whose low equals its high)."""
    target = config.target_score
    slices = layout_for(config.num_players).slices
    high = np.ones(layout_for(config.num_players).size, dtype=np.float32)
    high[slices["scores"]] = (target + max_round_points(config)) / target
    high[slices["target_score"]] = target / TARGET_SCALE
    high[slices["reshuffles"]] = max(config.max_reshuffles if config.reshuffle_stock else 0, 1)
    if check_observation(observation) == "features":
        high = np.concatenate([high, feature_bounds(config)[1]])  # (every feature's low is 0)
    return np.zeros_like(high), high


def seat_observation(state: RoundState, scores, target_score: int, seat: int, observation: str = "cards",
                     to_act: bool | None = None) -> dict[str, np.ndarray]:
    """What ``seat`` is given in ``state``: ``{"observation": float32 array, "action_mask": int8 (107,)}``,
    the dict of every env, the match loop and the labelling players (one place builds it).

    ``scores`` are the match scores the seat sees (without the match-end bonuses); the mask holds
    the legal actions when the seat is to act (``to_act``; default: it is the seat to act and the
    round is not over), else zeros; ``observation="features"`` appends the solver features, computed
    from this observation and mask alone.
    """
    if to_act is None:
        to_act = seat == state.current and not state.is_over
    mask = state.legal_mask() if to_act else np.zeros(NUM_ACTIONS, dtype=np.int8)
    encoded = encode(state, scores, target_score, seat)
    if observation == "features":
        encoded = with_features(encoded, mask)
    return {"observation": encoded, "action_mask": mask}


__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "EPISODES",
    "EPISODE_OPTIONS",
    "MATCH_BONUS_INFO",
    "RESET_OPTIONS",
    "REWARDS",
    "RoundEnd",
    "check_flag",
    "check_max_rounds",
    "check_options",
    "check_reset_options",
    "check_seed",
    "end_of_round",
    "seat_observation",
    "max_round_points",
    "observation_bounds",
    "round_cap_reached",
]
