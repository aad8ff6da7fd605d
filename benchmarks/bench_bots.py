"""Strength of the bots: a round robin among random, simple and search, with 95% intervals.

    python benchmarks/bench_bots.py                               # defaults below
    python benchmarks/bench_bots.py --matches simple-random=1000 --matches search-simple=200 --workers 2
    python benchmarks/bench_bots.py --pairs search-simple --matches search-simple=40 --search rollouts=80
    python benchmarks/bench_bots.py --timing-only --search time_limit=0.1   # how well a budget is kept

Every pair plays full matches (``--episode match``) on mirrored deals through
``okgin_env.evaluate``; the table gives A's win rate with its Wilson 95% interval, points per
round, how rounds were won, and milliseconds per decision (search's is its thinking time per
decision, trivial one-legal-action decisions included; ``search ms/decision (searched)`` in the
summary counts only the decisions it searched).

Targets (the issue's): simple beats random in >= 99% of matches (>= 1,000 matches); search beats
simple in >= 65% of matches (>= 200 matches) with <= 200 ms per decision on one core. A match of
random against simple is short (random almost never knocks, simple wins most rounds); search
costs about 0.14 s per decision on an otherwise idle core (several times that on a loaded
machine; ``time_limit`` caps it), so 200 search matches against simple take about an hour of one
core (28 minutes with ``--workers 2``).

The timing (``--timing-decisions``, ``--timing-only``) plays search against simple on fresh deals
and reports the mean, median, p95 and maximum milliseconds per decision; with a ``time_limit`` in
``--search`` also how many decisions ran over it and by how much at most.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from okgin_env.bots import SearchBot
from okgin_env.evaluate import EvalResults, evaluate
from okgin_env.players import check_player, parse_bot_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import count_value, output_path  # noqa: E402

DEFAULT_MATCHES = {"simple-random": 1000, "search-simple": 200, "search-random": 200}


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[int(q * (len(sorted_values) - 1))] if sorted_values else 0.0


def measure_search_time(search_spec: str, decisions: int = 200, seed: int = 0) -> dict[str, float]:
    """Per-decision time of search against simple on fresh deals, split into all and searched
    decisions (those with more than one candidate action); with ``time_limit`` also how often and
    by how much a decision ran over it."""
    import random as _random

    import okgin_env
    from okgin_env.bots import SimpleBot, view

    _, kwargs = parse_bot_spec(search_spec)
    bot = SearchBot(seed=seed, **kwargs)
    other = SimpleBot(seed=seed + 1)
    env = okgin_env.raw_env(episode="round")
    rng = _random.Random(seed)
    times, searched = [], []
    while len(times) < decisions:
        env.reset(seed=rng.randrange(1 << 30))
        while not any(env.terminations.values()) and len(times) < decisions:
            agent = env.agent_selection
            observation = env.observe(agent)
            if agent == "player_0":
                v = view(observation)
                will_search = len(v.legal) > 1 and len(bot.candidates(v)) > 1
                start = time.perf_counter()
                action = bot.act(observation)
                elapsed = time.perf_counter() - start
                times.append(elapsed)
                if will_search:
                    searched.append(elapsed)
            else:
                action = other.act(observation)
            env.step(action)
    times.sort()
    searched.sort()
    report = {
        "decisions": len(times),
        "mean_ms": 1000 * sum(times) / len(times),
        "median_ms": 1000 * _percentile(times, 0.5),
        "searched_decisions": len(searched),
        "searched_mean_ms": 1000 * sum(searched) / max(1, len(searched)),
        "searched_median_ms": 1000 * _percentile(searched, 0.5),
        "searched_p95_ms": 1000 * _percentile(searched, 0.95),
        "max_ms": 1000 * times[-1],
    }
    limit = bot.settings.time_limit
    if limit is not None:
        report["time_limit_ms"] = 1000 * limit
        report["over_limit"] = sum(t > limit for t in times)
        report["max_overrun_ms"] = max(0.0, 1000 * (times[-1] - limit))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--matches",
        action="append",
        default=[],
        metavar="A-B=N",
        help=f"matches for a pair (default {DEFAULT_MATCHES}); a plain number sets every pair",
    )
    parser.add_argument("--pairs", default=",".join(DEFAULT_MATCHES), help="comma-separated A-B pairs to play")
    parser.add_argument("--search", default="", help="search options, e.g. rollouts=160,consistency_tries=1")
    parser.add_argument("--episode", choices=("match", "round"), default="match")
    parser.add_argument("--seed", type=count_value(0), default=0)
    parser.add_argument("--workers", type=count_value(1), default=1)
    parser.add_argument("--timing-decisions", type=count_value(0), default=200,
                        help="decisions for the search timing (0: skip)")
    parser.add_argument("--timing-only", action="store_true", help="only the search timing, no matches")
    parser.add_argument("--out", type=output_path, default=None, help="write PREFIX.json (all tables and timings)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    # Every pair, count and setting is checked before the first timing or match.
    search_spec = "search" + (f":{args.search}" if args.search else "")
    specs = {"random": "random", "simple": "simple", "search": search_spec}
    try:
        check_player(search_spec)
    except ValueError as error:
        parser.error(f"--search {args.search!r}: {error}")
    pairs = [] if args.timing_only else [p.strip() for p in args.pairs.split(",") if p.strip()]
    for pair in pairs:
        a, _, b = pair.partition("-")
        if a not in specs or b not in specs:
            parser.error(f"unknown pair {pair!r}; names: {', '.join(specs)}")
    matches = dict(DEFAULT_MATCHES)
    for item in args.matches:
        pair, equals, count = item.rpartition("=") if "=" in item else ("", "", item)
        try:
            number = count_value(1)(count.strip())
        except argparse.ArgumentTypeError as error:
            parser.error(f"--matches {item!r}: {error}")
        if not equals:
            matches = {known: number for known in {*matches, *pairs}}
        elif pair.strip() not in pairs:
            parser.error(f"--matches {item!r}: {pair.strip()!r} is not one of the pairs played ({', '.join(pairs) or 'none'})")
        else:
            matches[pair.strip()] = number

    report: dict = {"search": search_spec, "pairs": {}}
    if args.timing_decisions:
        timing = measure_search_time(search_spec, args.timing_decisions, args.seed)
        report["search_timing"] = timing
        print(
            f"search ({search_spec}), one core: {timing['mean_ms']:.1f} ms per decision over {timing['decisions']} "
            f"decisions; {timing['searched_mean_ms']:.1f} ms mean / {timing['searched_median_ms']:.1f} ms median / "
            f"{timing['searched_p95_ms']:.1f} ms p95 over the {timing['searched_decisions']} searched ones; "
            f"max {timing['max_ms']:.1f} ms"
            + (f"; over the limit: {timing['over_limit']}, by at most {timing['max_overrun_ms']:.1f} ms" if "over_limit" in timing else ""),
            flush=True,
        )
    tables = []
    for pair in pairs:
        a, _, b = pair.partition("-")
        count = matches.get(pair, 100)
        results = evaluate(
            {a: specs[a], b: specs[b]},
            matches=count,
            episode=args.episode,
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
        )
        tables.extend(results.pairs)
        print(results.table(), flush=True)
        games = {"match": "matches", "round": "rounds"}[args.episode]
        print(f"({results.settings['games_per_pair']} {games}, {results.settings['seconds']:.0f} s)\n", flush=True)
        report["pairs"][pair] = results.to_dict()
    if len(tables) > 1:
        print("All pairs:")
        print(EvalResults(pairs=tables, settings={"episode": args.episode}).table())
    if args.out:
        folder = os.path.dirname(args.out)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(f"{args.out}.json", "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
        print(f"wrote {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
