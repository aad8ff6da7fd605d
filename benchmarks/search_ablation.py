"""Round-level A/B measurements of the ``search`` bot against ``simple`` (development tool).

    python benchmarks/search_ablation.py --deals 300 --first-deal 1000 --workers 2
    python benchmarks/search_ablation.py --deals 300 --first-deal 1000 rollouts=160 consistency_tries=1
    python benchmarks/search_ablation.py --deals 300 --first-deal 1000 --oracle

Each deal (classic preset, two players) is played twice, search in each seat, against ``simple``;
the figure is search's mean round points per deal (both seats averaged) with its standard
error, and search's thinking time per decision. Deals are numbered, so two settings run with the
same ``--first-deal`` play the same cards and can be compared deal by deal (``--out`` keeps the
per-deal points).

``--oracle`` is a diagnostic, not a bot: search is told the opponent's true hand (the stock
order is still sampled). Its margin over the real bot bounds what better inference about the
opponent's hand could gain.

Full matches and confidence intervals for win rates come from ``okgin-eval`` and
``bench_bots.py``; this script is the faster, lower-variance probe used to choose settings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from multiprocessing import Pool

import numpy as np

from okgin_env.bots import SearchBot
from okgin_env.bots.simple import simple_action_for_state
from okgin_env.players import parse_bot_spec
from okgin_env.observation import encode
from okgin_env.rules.config import make_config
from okgin_env.rules.round import Phase, RoundState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import count_value, output_path  # noqa: E402

CONFIG = make_config("classic")


class OracleSearch(SearchBot):
    """Search that samples only the stock order: it is handed the true round state (diagnostic)."""

    true_state: RoundState

    def _sample_hands(self, v, config):
        state = self.true_state
        seat, n = state.current, state.num_players
        stock = list(state.stock)
        self.rng.shuffle(stock)
        return [state.hands[(seat + k) % n] for k in range(n)], stock


def numbered_deal(deal: int) -> RoundState:
    """Round number ``deal`` (classic, two players): the same cards for every setting compared."""
    rng = np.random.default_rng(deal)
    return RoundState(CONFIG, rng.permutation(52).tolist(), deal % 2, np.random.default_rng(deal + 1))


def observation_for(state: RoundState, seat: int) -> dict:
    """The environment's observation dict of ``seat`` (match scores 0-0)."""
    return {"observation": encode(state, [0, 0], CONFIG.target_score, seat), "action_mask": state.legal_mask()}


def play_deal_seat(task: tuple[dict, bool, int, int]) -> tuple[int, float, float, int]:
    """Play deal ``deal`` with search in ``seat``: (deal, search's points, its seconds, its decisions)."""
    options, oracle, deal, seat = task
    state = numbered_deal(deal)
    bot = (OracleSearch if oracle else SearchBot)(seed=2 * deal + seat, **options)
    tie_breaks = random.Random(7 * deal + 3)
    seconds, decisions = 0.0, 0
    while state.phase is not Phase.OVER:
        if state.current == seat:
            observation = observation_for(state, seat)
            if oracle:
                bot.true_state = state
            start = time.perf_counter()
            action = bot.act(observation)
            seconds += time.perf_counter() - start
            decisions += 1
        else:
            action = simple_action_for_state(state, tie_breaks)
        state.apply(action)
    return deal, state.outcome.rewards[seat], seconds, decisions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("options", nargs="*", help="SearchBot options as key=value (e.g. rollouts=160)")
    parser.add_argument("--deals", type=count_value(1), default=300)
    parser.add_argument("--first-deal", type=count_value(0), default=1000)
    parser.add_argument("--workers", type=count_value(1), default=1)
    parser.add_argument("--oracle", action="store_true", help="tell search the opponent's hand (diagnostic)")
    parser.add_argument("--out", type=output_path, default=None, help="write PREFIX.json with the per-deal points")
    args = parser.parse_args(argv)
    _, options = parse_bot_spec("search:" + ",".join(args.options)) if args.options else ("search", {})
    SearchBot(**options)  # bad options fail here, before any worker starts
    tasks = [(options, args.oracle, d, s) for d in range(args.first_deal, args.first_deal + args.deals) for s in (0, 1)]
    start = time.perf_counter()
    if args.workers > 1:
        with Pool(args.workers) as pool:
            results = pool.map(play_deal_seat, tasks, chunksize=4)
    else:
        results = [play_deal_seat(t) for t in tasks]
    per_deal: dict[int, list[float]] = {}
    for deal, points, _, _ in results:
        per_deal.setdefault(deal, []).append(points)
    means = np.array([np.mean(v) for v in per_deal.values()])
    report = {
        "options": options,
        "oracle": args.oracle,
        "deals": args.deals,
        "first_deal": args.first_deal,
        "points_per_round": float(means.mean()),
        "standard_error": float(means.std(ddof=1) / np.sqrt(len(means))) if len(means) > 1 else float("nan"),
        "ms_per_decision": 1000 * sum(r[2] for r in results) / max(1, sum(r[3] for r in results)),
        "wall_seconds": time.perf_counter() - start,
    }
    print(json.dumps(report))
    if args.out:
        report["per_deal"] = {str(k): float(np.mean(v)) for k, v in per_deal.items()}
        with open(f"{args.out}.json", "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except ValueError as error:  # a bad search option: one line, as argparse's errors
        print(f"search_ablation.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
