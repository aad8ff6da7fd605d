"""Decision-level regret of ``search`` settings against true-state values (development tool).

    python benchmarks/search_regret.py --deals 150 --first-deal 5000 --workers 2 \\
        --cache /tmp/regret_5000 base: rollouts=480 rollouts=480,default_bonus=1.0

Whole games are too noisy to tell settings apart that differ by a fraction of a point per round
(``search_ablation.py`` has a standard error near 1 point per round over 300 deals). This script
scores single decisions instead:

1. **Positions.** ``search`` (default settings, seeded) plays ``--deals`` rounds against
   ``simple`` (classic preset, two players); every decision of search's with more than one
   candidate action is kept, with the true round state.
2. **True values.** For each position, every candidate (``SearchBot.candidates``; both choices of
   a draw or an upcard offer) is played from the *true* state, then ``simple`` for both seats to
   the end of the round, ``--truth-rollouts`` times with the stock reshuffled (its order is
   unknown even to a player who sees every hand). Q(a) is the mean round reward of the seat.
3. **Regret.** Each setting chooses at every position from the observation alone (a fresh bot,
   seeded by the position); its regret there is max Q − Q(choice). The report gives the mean
   regret, by kind of decision, and the paired difference to the first setting ± standard error.

Positions and true values take a while (about 15 minutes on two cores for 150 deals); ``--cache``
keeps them. ``--oracle`` adds a diagnostic setting told the opponent's true hand. Q assumes
``simple`` continues for both seats, so this is a proxy: it compares how settings read the
position (beliefs, budget, statistics), not rollout policies. Game-level checks stay with
``search_ablation.py`` and ``bench_bots.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import sys
import time
from multiprocessing import Pool

import numpy as np

from okgin_env.bots import SearchBot
from okgin_env.bots.search import playout
from okgin_env.bots.simple import simple_action_for_state
from okgin_env.players import parse_bot_spec
from okgin_env.observation import view
from okgin_env.rules.actions import KNOCK_BASE
from okgin_env.rules.round import Phase, RoundState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import count_value, output_path  # noqa: E402
from search_ablation import OracleSearch, numbered_deal, observation_for


def record_deal(task: tuple[int, dict]) -> list[tuple[int, dict, RoundState]]:
    """Search's positions with a real choice in deal ``deal`` (search in seat ``deal % 2``)."""
    deal, options = task
    state = numbered_deal(deal)
    seat = deal % 2
    bot = SearchBot(seed=deal, **options)
    tie_breaks = random.Random(deal)
    positions = []
    while state.phase is not Phase.OVER:
        if state.current == seat:
            observation = observation_for(state, seat)
            if len(bot.candidates(view(observation))) > 1:
                positions.append((deal, observation, state.clone()))
            action = bot.act(observation)
        else:
            action = simple_action_for_state(state, tie_breaks)
        state.apply(action)
    return positions


def true_values(task: tuple[tuple[int, dict, RoundState], int]) -> dict[int, float]:
    """Q of every candidate from the true state (stock reshuffled each time; common random numbers)."""
    (deal, observation, state), rollouts = task
    v = view(observation)
    actions = sorted(set(SearchBot(seed=0).candidates(v)) | (set(v.legal) if v.phase is not Phase.DISCARD else set()))
    rng = random.Random(deal * 7919 + len(state.stock))
    totals = dict.fromkeys(actions, 0.0)
    for _ in range(rollouts):
        base = state.copy()
        rng.shuffle(base.stock)
        seed = rng.getrandbits(32)
        for action in actions:
            sample = base.copy()
            sample.apply(action)
            playout(sample, random.Random(seed))
            totals[action] += sample.outcome.rewards[state.current]
    return {a: t / rollouts for a, t in totals.items()}


def kind_of(observation: dict, values: dict[int, float]) -> str:
    phase = view(observation).phase
    if phase is Phase.OFFER:
        return "offer"
    if phase is Phase.DRAW:
        return "draw"
    return "discard_or_knock" if any(a >= KNOCK_BASE for a in values) else "discard"


def regrets(task: tuple[str, dict, bool, list]) -> list[tuple[int, float]]:
    """(position index, regret) of one setting over a slice of positions."""
    _, options, oracle, items = task
    out = []
    for index, (_, observation, state), values in items:
        bot = (OracleSearch if oracle else SearchBot)(seed=100_003 + index, **options)
        if oracle:
            bot.true_state = state
        action = bot.act(observation)
        if action not in values:  # a setting with wider candidates: score it on demand
            values = dict(values)
            values.update(true_values(((index, observation, state), 200)))
        out.append((index, max(values.values()) - values[action]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("settings", nargs="+", help="SearchBot settings, each 'key=value,key=value' or 'base:' for the defaults")
    parser.add_argument("--deals", type=count_value(1), default=150)
    parser.add_argument("--first-deal", type=count_value(0), default=5000)
    parser.add_argument("--truth-rollouts", type=count_value(1), default=600)
    parser.add_argument("--workers", type=count_value(1), default=1)
    parser.add_argument("--cache", type=output_path, default=None,
                        help="PREFIX.pkl keeps the positions and true values (of these --deals, --first-deal, "
                             "--truth-rollouts and --record-options; a cache of others is refused)")
    parser.add_argument("--record-options", default="", help="settings of the bot whose games give the positions")
    parser.add_argument("--oracle", action="store_true", help="add a setting told the opponent's hand (diagnostic)")
    parser.add_argument("--out", type=output_path, default=None, help="write PREFIX.json with the report")
    args = parser.parse_args(argv)
    recorder = parse_bot_spec("search:" + args.record_options)[1]
    SearchBot(**recorder)  # (the recording bot's settings too, before any position is recorded)
    settings = []
    for text in args.settings:
        options = {} if text.strip() in ("base:", "base", "") else parse_bot_spec("search:" + text)[1]
        SearchBot(**options)  # bad options fail here, before any worker starts
        settings.append((text, options, False))
    if args.oracle:
        settings.append(("oracle", {}, True))

    start = time.perf_counter()
    pool = Pool(args.workers) if args.workers > 1 else None
    mapper = pool.map if pool else map
    cache = f"{args.cache}.pkl" if args.cache else None
    made_with = {"deals": args.deals, "first_deal": args.first_deal, "truth_rollouts": args.truth_rollouts,
                 "record_options": recorder}
    if cache and os.path.exists(cache):
        with open(cache, "rb") as handle:
            stored = pickle.load(handle)
        if not (isinstance(stored, dict) and stored.get("made_with") == made_with):
            raise ValueError(f"--cache {cache} holds positions of other settings than {made_with}; give another "
                             "--cache, or remove it to record them again")
        positions, values = stored["positions"], stored["values"]
    else:
        deals = [(d, recorder) for d in range(args.first_deal, args.first_deal + args.deals)]
        positions = [p for found in mapper(record_deal, deals) for p in found]
        values = list(mapper(true_values, [(p, args.truth_rollouts) for p in positions]))
        if cache:
            with open(cache, "wb") as handle:
                pickle.dump({"made_with": made_with, "positions": positions, "values": values}, handle)
    items = [(i, p, q) for i, (p, q) in enumerate(zip(positions, values))]
    kinds = np.array([kind_of(p[1], q) for p, q in zip(positions, values)])
    report: dict = {"positions": len(items), "settings": {}}
    first = None
    for name, options, oracle in settings:
        slices = [(name, options, oracle, items[k :: 16]) for k in range(16)]
        found = dict(r for part in mapper(regrets, slices) for r in part)
        regret = np.array([found[i] for i in range(len(items))])
        row = {"mean_regret": float(regret.mean())}
        row.update({k: float(regret[kinds == k].mean()) for k in sorted(set(kinds))})
        if first is None:
            first = regret
        else:
            diff = regret - first
            row["paired_difference"] = float(diff.mean())
            row["standard_error"] = float(diff.std(ddof=1) / np.sqrt(len(diff)))
        report["settings"][name] = row
        print(name, json.dumps({k: round(x, 3) for k, x in row.items()}), flush=True)
    if pool:
        pool.close()
    report["wall_seconds"] = time.perf_counter() - start
    if args.out:
        with open(f"{args.out}.json", "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except ValueError as error:  # a bad search setting or cache: one line, as argparse's errors
        print(f"search_regret.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
