"""The examples' headline figures: a trained policy against the simple bot through ``okgin_env.evaluate``.

``evaluate_vs_simple(policy, rounds, matches)`` plays ``rounds`` mirrored single rounds
(``episode="round"``: each deal twice, the seats swapped) and, when ``matches`` > 0, that many
mirrored whole matches to 100 points. Each comes back with wins / losses / draws, the win rate
among decided games with its 95% Wilson interval, and the points per round; for rounds also
``win_rate_all`` (wins / all rounds, draws counted: the "rounds won" of the tables in docs/frameworks.md) with
its own Wilson interval, ``win_rate_all_ci95``.
The seeds are fixed (40,000 for the rounds, 40,001 for the matches), so every example is
measured on the same deals. No learning framework is imported here.
"""

from __future__ import annotations

from typing import Any

from _common import library_eval

ROUNDS_SEED = 40_000


def evaluate_vs_simple(policy: Any, rounds: int, matches: int = 0, seed: int = ROUNDS_SEED) -> dict[str, Any]:
    """``{"evaluate_vs_simple_rounds": ..., "evaluate_vs_simple_matches": ...}`` (matches when asked)."""
    from okgin_env.evaluate import evaluate

    from okgin_env.eval_results import wilson_interval

    single = library_eval(policy, "simple", rounds, seed=seed)
    # The interval of wins among all rounds (draws count as not won): the "rounds won" figure.
    single["win_rate_all_ci95"] = [round(x, 4) for x in wilson_interval(single["wins"], single["rounds"])]
    report: dict[str, Any] = {"evaluate_vs_simple_rounds": single}
    if matches:
        results = evaluate({"trained": policy, "simple": "simple"}, matches=matches, episode="match", seed=seed + 1, progress=False)
        pair = results.pair("trained", "simple")
        report["evaluate_vs_simple_matches"] = {
            "matches": pair.games,
            "wins": pair.wins_a,
            "losses": pair.wins_b,
            "draws": pair.draws,
            "win_rate_decided": pair.win_rate_a,
            "win_rate_decided_ci95": [round(pair.ci_low, 4), round(pair.ci_high, 4)],
            "rounds": pair.rounds,
            "points_per_round": pair.points_per_round_a,
        }
    return report
