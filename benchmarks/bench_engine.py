"""Raw engine speed: okgin's rules engine against OpenSpiel's ``gin_rummy`` (oklahoma=True).

Both play uniformly random legal actions, resets included (new rounds dealt, new matches
started), and count player decisions per second:

- okgin: ``MatchState`` (classic, and the penalty preset for 2-4 players) driven directly
  through ``round.legal_actions()`` and ``match.apply()``; each deal shuffles a new deck.
- OpenSpiel: the bare ``pyspiel`` game loop; chance nodes (the deal, stock draws) are sampled
  with a seeded RNG and are not counted as decisions. OpenSpiel's chance outcomes in
  gin_rummy are uniform (checked at start), so a uniform index is an exact sample.

Target (project issue): okgin classic >= 1.5x OpenSpiel's bare loop.

    python benchmarks/bench_engine.py --seconds 3 --repeats 5
"""

from __future__ import annotations

import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHECK_EVERY, measure, parse_args, print_table, require_pyspiel  # noqa: E402

from okgin_env import MatchState, make_config  # noqa: E402

TARGET = 1.5


def okgin_loop(seed: int, rules: str = "classic", num_players: int = 2):
    config = make_config(rules, num_players=num_players)
    rng = random.Random(seed)
    deal_rng = np.random.default_rng(seed)
    state = {"match": MatchState(config, deal_rng)}

    def run(seconds: float) -> int:
        match = state["match"]
        decisions = 0
        end = time.perf_counter() + seconds
        while True:
            for _ in range(CHECK_EVERY):
                legal = match.round.legal_actions()
                if match.apply(legal[rng.randrange(len(legal))]) is not None:
                    if match.is_over:
                        match = MatchState(config, deal_rng)
                    else:
                        match.deal_next_round()
            decisions += CHECK_EVERY
            if time.perf_counter() >= end:
                state["match"] = match
                return decisions

    return run


def openspiel_loop(pyspiel, seed: int):
    game = pyspiel.load_game("gin_rummy", {"oklahoma": True})
    rng = random.Random(seed)
    holder = {"state": game.new_initial_state()}

    def run(seconds: float) -> int:
        state = holder["state"]
        decisions = 0
        end = time.perf_counter() + seconds
        while True:
            made = 0
            while made < CHECK_EVERY:
                if state.is_terminal():
                    state = game.new_initial_state()
                elif state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
                else:
                    legal = state.legal_actions()
                    state.apply_action(legal[rng.randrange(len(legal))])
                    made += 1
            decisions += made
            if time.perf_counter() >= end:
                holder["state"] = state
                return decisions

    return run


def check_uniform_chance(pyspiel, seed: int) -> None:
    """Sampling a uniform index is exact only if OpenSpiel's chance outcomes are uniform."""
    game = pyspiel.load_game("gin_rummy", {"oklahoma": True})
    rng = random.Random(seed)
    for _ in range(3):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                probabilities = [p for _, p in outcomes]
                assert max(probabilities) - min(probabilities) < 1e-9, "non-uniform chance node"
                state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
            else:
                legal = state.legal_actions()
                state.apply_action(legal[rng.randrange(len(legal))])


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    pyspiel = require_pyspiel()
    check_uniform_chance(pyspiel, args.seed)
    systems = {
        "okgin engine, classic 2p": lambda: okgin_loop(args.seed),
        "OpenSpiel gin_rummy oklahoma, bare loop": lambda: openspiel_loop(pyspiel, args.seed),
        "okgin engine, penalty 3p": lambda: okgin_loop(args.seed, "penalty", 3),
        "okgin engine, penalty 4p": lambda: okgin_loop(args.seed, "penalty", 4),
    }
    results = measure(systems, args.seconds, args.repeats)
    met = print_table(
        "Raw engine: uniformly random legal actions, resets included (decisions per second)",
        results,
        [("okgin engine, classic 2p", "OpenSpiel gin_rummy oklahoma, bare loop", TARGET)],
        args.seconds,
    )
    print("(penalty rows: 3-4 players, 7 cards each, stock reshuffles; OpenSpiel has no such game: for reference only)")
    if not met:
        print("target not met on this run (the machine is noisy: rerun before concluding)")


if __name__ == "__main__":
    main()
