"""Batched engine speed: ``okgin_env.BatchEnv`` (``okgin_env.batch``) against OpenSpiel ``gin_rummy`` (oklahoma=True)
with an observation tensor and a legal-actions mask per decision, in one process, one run.

What each loop does per decision (uniformly random legal actions, resets included):

- okgin batch (classic, 2 players, ``episode="match"``, defaults otherwise, ``copy=True``): one
  ``BatchEnv.step(actions)`` per batch of N games returns the acting seat, the (N, obs_size)
  float32 observations and (N, 107) int8 masks of every game (auto-resetting finished rounds
  and matches); the next actions are drawn from those masks with one numpy call
  (``random_legal_actions``). A step counts N decisions.
- OpenSpiel: ``state.observation_tensor()`` and ``state.legal_actions_mask()`` for the player to
  act, then a random legal action; chance nodes (deal, stock draws) sampled with a seeded RNG and
  not counted; a new game at the end. Two rows, as in ``bench_env.py``: the tensor and mask as
  pyspiel's Python lists (ids from ``state.legal_actions()``), and converted to numpy arrays. The
  target is measured against the cheaper first one.

Each measurement records wall time and this process's CPU time (``time.process_time``); the
systems are interleaved within each repeat and the medians are reported. "Per core" is the CPU
time rate: on a shared machine it does not count the time the process waited for a core, which
the wall rate does (the two ratios agree on an idle machine). Both are printed.

Also reported: how the cost grows with the batch size (64 ... 8192), and the memory per game,
measured with ``tracemalloc`` (every Python object and numpy buffer allocated from building a
``BatchEnv`` through ``--memory-steps`` steps, divided by the number of games).

Target (project issue): okgin batch at N = 1024 >= 5x OpenSpiel with observation + mask, per core.

    python benchmarks/bench_vector.py --seconds 2 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CHECK_EVERY, count_value, require_pyspiel, seconds_value  # noqa: E402

from okgin_env.batch import BatchEnv  # noqa: E402
from okgin_env.bots.random_bot import random_legal_actions  # noqa: E402

TARGET = 5.0
TARGET_BATCH = 1024


def batch_loop(seed: int, num_games: int, rules: str = "classic", num_players: int = 2):
    env = BatchEnv(num_games, rules=rules, num_players=num_players)
    first = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    holder = {"masks": first.action_masks}

    def run(seconds: float) -> int:
        masks = holder["masks"]
        steps = 0
        step = env.step
        end = time.perf_counter() + seconds
        while True:
            result = step(random_legal_actions(masks, rng))
            _ = result.observations  # produced for every game, as a learner consumes them
            masks = result.action_masks
            steps += 1
            if time.perf_counter() >= end:
                holder["masks"] = masks
                return steps * num_games

    return run


def openspiel_loop(pyspiel, seed: int, as_numpy: bool):
    game = pyspiel.load_game("gin_rummy", {"oklahoma": True})
    rng = random.Random(seed)
    holder = {"state": game.new_initial_state()}
    float32, int8, asarray, flatnonzero = np.float32, np.int8, np.asarray, np.flatnonzero

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
                    observation = state.observation_tensor()
                    mask = state.legal_actions_mask()
                    if as_numpy:
                        observation = asarray(observation, dtype=float32)
                        legal = flatnonzero(asarray(mask, dtype=int8))
                    else:
                        legal = state.legal_actions()
                    state.apply_action(int(legal[rng.randrange(len(legal))]))
                    made += 1
            decisions += made
            if time.perf_counter() >= end:
                holder["state"] = state
                return decisions

    return run


def measure(systems: dict, seconds: float, repeats: int) -> dict[str, dict[str, list[float]]]:
    """Interleaved measurements: ``{name: {"wall": [rates], "cpu": [rates]}}`` (decisions per second)."""
    results = {name: {"wall": [], "cpu": []} for name in systems}
    for repeat in range(repeats):
        for name, factory in systems.items():
            loop = factory()
            loop(min(0.2, seconds / 10))  # warm-up
            wall, cpu = time.perf_counter(), time.process_time()
            decisions = loop(seconds)
            results[name]["wall"].append(decisions / (time.perf_counter() - wall))
            results[name]["cpu"].append(decisions / (time.process_time() - cpu))
        line = ", ".join(f"{n} {r['cpu'][-1]:,.0f}/s" for n, r in results.items())
        print(f"  repeat {repeat + 1}/{repeats} (cpu rates): {line}", file=sys.stderr)
    return results


def memory_per_game(num_games: int, steps: int, seed: int, rules: str = "classic", num_players: int = 2) -> tuple[float, float]:
    """Bytes per game traced by tracemalloc: (total, of which the batch's numpy arrays)."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    env = BatchEnv(num_games, rules=rules, num_players=num_players)
    result = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        result = env.step(random_legal_actions(result.action_masks, rng))
    total = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    arrays = sum(a.nbytes for a in (env._obs, env._masks, env._seats, env._scores))
    arrays += sum(a.nbytes for a in result[:5])  # the step's returned copies
    del env, result
    return total / num_games, arrays / num_games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=seconds_value, default=2.0, help="wall time per measurement (default %(default)s)")
    parser.add_argument("--repeats", type=count_value(1), default=3,
                        help="measurements per system; the median is reported (default %(default)s)")
    parser.add_argument("--seed", type=count_value(0), default=0)
    parser.add_argument("--batch-sizes", default="64,256,1024,4096,8192", help="comma-separated (default %(default)s)")
    parser.add_argument("--memory-games", type=count_value(1), default=512,
                        help="games in the memory measurement (default %(default)s)")
    parser.add_argument("--memory-steps", type=count_value(0), default=150,
                        help="steps before measuring memory (default %(default)s)")
    args = parser.parse_args()
    try:
        sizes = [count_value(1)(x.strip()) for x in args.batch_sizes.split(",") if x.strip()]
    except argparse.ArgumentTypeError as error:
        parser.error(f"--batch-sizes: {error}")
    if not sizes:
        parser.error("--batch-sizes: give one or more batch sizes, comma-separated")
    pyspiel = require_pyspiel()

    theirs = "OpenSpiel + obs tensor + mask (lists)"
    theirs_numpy = "OpenSpiel + obs tensor + mask (numpy)"
    systems = {
        theirs: lambda: openspiel_loop(pyspiel, args.seed, as_numpy=False),
        theirs_numpy: lambda: openspiel_loop(pyspiel, args.seed, as_numpy=True),
    }
    label = "okgin BatchEnv classic 2p, N={}".format
    for size in sizes:
        systems[label(size)] = lambda size=size: batch_loop(args.seed, size)
    reference = TARGET_BATCH if TARGET_BATCH in sizes else sizes[len(sizes) // 2]
    systems[f"okgin BatchEnv penalty 4p, N={reference}"] = lambda: batch_loop(args.seed, reference, "penalty", 4)
    results = measure(systems, args.seconds, args.repeats)
    med = {system: {kind: statistics.median(rates) for kind, rates in r.items()} for system, r in results.items()}
    print("\nBatched engine: observation + action mask for every game at every decision, random legal actions,")
    print("resets included; decisions per second, one process, one thread")
    print(f"python {platform.python_version()} on {platform.machine()}, {args.seconds:g} s per measurement, "
          f"median of {args.repeats}")
    width = max(len(name) for name in systems)
    print(f"| {'system'.ljust(width)} | per CPU second (median) | per wall second (median) |")
    print(f"|{'-' * (width + 2)}|---:|---:|")
    for system in systems:
        print(f"| {system.ljust(width)} | {med[system]['cpu']:,.0f} | {med[system]['wall']:,.0f} |")
    print()
    met = True
    for other in (theirs, theirs_numpy):
        ours = label(reference)
        ratio = {kind: med[ours][kind] / med[other][kind] for kind in ("cpu", "wall")}
        spread = [a / b for a, b in zip(results[ours]["cpu"], results[other]["cpu"])]
        ok = ratio["cpu"] >= TARGET
        met &= ok
        print(f"ratio {ours} / {other}: {ratio['cpu']:.2f}x per core (per repeat {min(spread):.2f}-{max(spread):.2f}x), "
              f"{ratio['wall']:.2f}x wall; target >= {TARGET:g}x per core: {'met' if ok else 'NOT met'}")
    print("(penalty 4p row: OpenSpiel has no such game: for reference only)")

    print("\nCost against batch size (classic 2p, medians of the runs above, per core)")
    print("| N | decisions/s | µs per decision | ms per step | x OpenSpiel (lists) | x OpenSpiel (numpy) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        rate = med[label(size)]["cpu"]
        print(f"| {size} | {rate:,.0f} | {1e6 / rate:.2f} | {1e3 * size / rate:.1f} | "
              f"{rate / med[theirs]['cpu']:.2f}x | {rate / med[theirs_numpy]['cpu']:.2f}x |")

    print(f"\nMemory per game (tracemalloc: everything allocated from building a BatchEnv of "
          f"{args.memory_games} games through {args.memory_steps} random steps, / games)")
    print("| game | bytes per game | of which batch arrays |")
    print("|---|---:|---:|")
    for rules, players in (("classic", 2), ("penalty", 4)):
        total, arrays = memory_per_game(args.memory_games, args.memory_steps, args.seed, rules, players)
        print(f"| {rules} {players}p | {total:,.0f} | {arrays:,.0f} |")
    print(f"\npython {platform.python_version()}, numpy {np.__version__}, pure Python + numpy (no JIT)")
    if not met:
        print("target not met on this run (the machine is noisy: rerun before concluding)")


if __name__ == "__main__":
    main()
