"""Shared pieces of the framework examples: evaluation, mask checks, result files.

Nothing here imports a learning framework; each example script imports only its own.

**Evaluation.** ``play_rounds(policy, opponent, rounds)`` plays single rounds
(``episode="round"``) through the PettingZoo AEC env, the trained policy alternating seats
with the opponent, and counts round wins, losses and draws. A round is won by the seat that
scores it (the knocker, or the defender on an undercut); a round whose stock runs out is a draw.
*Win rate against random* in the examples' results is ``wins / rounds`` over such rounds; the
draw rate is reported beside it (two random players draw almost every round, so a policy that
merely never loses would show a win rate near 0, not 0.5).

``evaluation`` also runs ``okgin_env.evaluate`` (the project's evaluation library: mirrored
deals, win rate among decided rounds with a 95% Wilson interval) against random, reported as
``evaluate_vs_random``.

Every policy is used as docs/api.md says: ``policy.act(observation) -> int`` with the dict the
environment gives the acting agent. ``play_rounds`` checks each action against the action mask
before it reaches the env (the env would also refuse it with a ValueError).
"""

from __future__ import annotations

import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

import okgin_env
from okgin_env.rules.actions import NUM_ACTIONS

# What the examples train on: one round per episode, +1 to the round's winner and -1 to the
# loser (0 on a draw). Points rewards (``reward="points"``) work too; see each script's --reward.
DEFAULT_ENV_OPTIONS: dict[str, Any] = {"episode": "round", "reward": "win"}


def require(modules: tuple[str, ...], extra: str) -> None:
    """Exit 2 with one line naming the install command when a module the example needs is missing
    (before its imports, so that even ``--help`` says what to install rather than a traceback)."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        print(f"{Path(sys.argv[0]).name}: error: this example needs {' and '.join(missing)} (not installed): "
              f'pip install -e ".[{extra}]" from the checkout root', file=sys.stderr)
        raise SystemExit(2)


class Policy(Protocol):
    def act(self, observation: dict[str, np.ndarray]) -> int: ...


class IllegalActionError(AssertionError):
    """A learning-side object chose an action outside the mask the env gave it."""


def check_legal(action: Any, mask: np.ndarray, where: str = "") -> int:
    """Return ``int(action)`` if the mask allows it; otherwise raise ``IllegalActionError``."""
    a = int(action)
    if not (0 <= a < NUM_ACTIONS) or not mask[a]:
        legal = np.flatnonzero(mask).tolist()
        raise IllegalActionError(f"{where}illegal action {a}; legal: {legal}")
    return a


def play_rounds(
    policy: Policy,
    opponent: Policy,
    rounds: int,
    seed: int = 12345,
    env_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Play ``rounds`` single rounds, ``policy`` in seat ``i % 2`` of round ``i``; count its results.

    Returns ``{"rounds", "wins", "losses", "draws", "win_rate", "draw_rate", "loss_rate",
    "mean_points"}`` where ``mean_points`` is the policy's mean round score (points reward).
    """
    options = {"episode": "round", "reward": "points", **(env_options or {})}
    options["episode"] = "round"
    options["reward"] = "points"
    env = okgin_env.env(**options)
    wins = losses = draws = 0
    points = 0.0
    for i in range(rounds):
        env.reset(seed=seed + i)
        learner = env.possible_agents[i % 2]
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, _ = env.last()
            if terminated or truncated:
                if agent == learner:
                    winner = env.unwrapped.last_round_outcome.winner
                    points += reward
                    draws += winner is None
                    wins += winner == env.unwrapped.agent_name_mapping[learner]
                    losses += winner is not None and winner != env.unwrapped.agent_name_mapping[learner]
                env.step(None)
                continue
            actor = policy if agent == learner else opponent
            env.step(check_legal(actor.act(observation), observation["action_mask"], f"{agent}: "))
    return {
        "rounds": rounds,
        "wins": wins,
        "losses": losses,
        "draws": draws,
        "win_rate": wins / rounds,
        "loss_rate": losses / rounds,
        "draw_rate": draws / rounds,
        "mean_points": points / rounds,
    }


def library_eval(policy: Policy, opponent: str, rounds: int, seed: int = 12345) -> dict[str, Any] | None:
    """The same comparison through ``okgin_env.evaluate`` (mirrored deals, 95% Wilson interval).

    Its win rate is among *decided* rounds (draws left out); ``win_rate_all`` is wins / rounds as
    in ``play_rounds``. Returns None when this okgin has no ``okgin_env.evaluate``.
    """
    try:
        from okgin_env.evaluate import evaluate
    except ImportError:
        return None
    results = evaluate(
        {"trained": policy, opponent: opponent}, matches=rounds, episode="round", seed=seed, workers=1, progress=False
    )
    pair = results.pair("trained", opponent)
    return {
        "rounds": pair.games,
        "wins": pair.wins_a,
        "losses": pair.wins_b,
        "draws": pair.draws,
        "win_rate_decided": pair.win_rate_a,
        "win_rate_decided_ci95": [round(pair.ci_low, 4), round(pair.ci_high, 4)],
        "win_rate_all": pair.wins_a / pair.games if pair.games else float("nan"),
        "points_per_round": pair.points_per_round_a,
    }


def evaluation(policy: Policy, rounds: int) -> dict[str, Any]:
    """Everything the examples report about a trained policy (see the module docstring)."""
    from okgin_env.bots import make_bot

    report: dict[str, Any] = {
        "eval_vs_random": play_rounds(policy, make_bot("random", seed=7), rounds, seed=10_000),
        "eval_vs_simple": play_rounds(policy, make_bot("simple", seed=7), rounds, seed=20_000),
    }
    library = library_eval(policy, "random", rounds, seed=30_000)
    if library is not None:
        report["evaluate_vs_random"] = library
    return report


class Stopwatch:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.start


def machine_note() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"


def write_results(path: str | Path | None, results: dict[str, Any]) -> None:
    """Print the results as JSON and, when ``path`` is given, write them there."""
    text = json.dumps(results, indent=2, sort_keys=True, default=float)
    print(text)
    if path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
