"""Episodes and rewards: the options and their checks, and what the end of a round pays.

Shared by the AEC env (``okgin_env.env``) and the batch engine (``okgin_env.batch``), so both end
episodes and pay rewards by one rule:

* ``episode="match"`` (default): rounds are dealt until the match ends (RULES.md §8);
  ``episode="round"``: the episode is one round.
* ``reward="points"`` (default): at the end of every round each seat receives the round's
  zero-sum reward (``RoundOutcome.rewards``); ``reward="win"``: +1 to the winner and -1 to the
  others when the episode ends (with ``episode="round"`` the round's winner; 0 to all on a draw).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .rules.config import OPTION_NAMES
from .rules.match import MatchState
from .rules.showdown import RoundOutcome

EPISODES = ("match", "round")
REWARDS = ("points", "win")


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


def end_of_round(outcome: RoundOutcome, match: MatchState, episode: str, reward: str) -> tuple[bool, list[float] | None]:
    """``(the episode is over, each seat's reward for this round or None when it pays nothing)``.

    Called once the round's outcome is recorded in ``match`` (``match.is_over`` already says
    whether the match ended)."""
    episode_over = episode == "round" or match.is_over
    if reward == "points":
        return episode_over, outcome.rewards
    if episode_over:
        winner = outcome.winner if episode == "round" else match.winner
        if winner is not None:
            return True, [1.0 if seat == winner else -1.0 for seat in range(match.num_players)]
    return episode_over, None


__all__ = ["EPISODES", "REWARDS", "check_options", "end_of_round"]
