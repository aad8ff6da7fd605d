"""Benchmark: okgin's exact meld solver against OpenSpiel's ``GinRummyUtils.min_deadwood``.

Both solvers are timed on the same hands, in one run:

* random 10-card and 11-card hands (uniform from the deck);
* "meld-dense" 10- and 11-card hands (few suits, narrow rank windows, built-up sets and runs),
  where many melds overlap and a solver has the most choices to try.

For 10 cards both answer the least deadwood. For 11 cards (a hand just after drawing) okgin answers
the least deadwood after the best single discard (``best_discard_deadwood_of_mask``); OpenSpiel's
``min_deadwood`` keeps one best grouping of the 11 cards and drops its highest loose card, which is
not always the least: the table counts how often it differs from the exact value.

Timings are microseconds per call, the median over ``--repeats`` passes over all the hands
(the four measurements of a case are interleaved pass by pass; by default the clock is this
process's CPU time, steadier than wall time on a shared machine: ``--clock wall`` for wall time).
okgin's core functions take a 52-bit mask; the "to_mask" column is the cost of turning a list of
card ids into that mask, and "ours list" is the id-list API (``to_mask`` + the mask function), the
fair comparison with OpenSpiel, which takes a list of ints and converts it in its bindings.

Card ids: okgin uses ``suit * 13 + rank`` (suits S H D C); OpenSpiel uses the same layout with
suits s c d h. Only the order of suits differs, which changes no deadwood, so the same ids are
passed to both.

Usage::

    python benchmarks/bench_solver.py [--hands 3000] [--repeats 5] [--seed 0] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from okgin_env.rules.cards import to_mask
from okgin_env.rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask

from common import count_value


def load_openspiel_utils():
    """``GinRummyUtils(num_ranks=13, num_suits=4, hand_size=10)``, or None if open_spiel is missing."""
    try:
        import pyspiel  # noqa: PLC0415
    except ImportError:
        return None
    gin = getattr(pyspiel, "gin_rummy", None)
    if gin is None or not hasattr(gin, "GinRummyUtils"):
        return None
    return gin.GinRummyUtils(13, 4, 10)  # positional: num_ranks, num_suits, hand_size


# ----------------------------------------------------------------------------- hands


def random_hand(rng: random.Random, size: int) -> list[int]:
    return rng.sample(range(52), size)


def dense_hand(rng: random.Random, size: int) -> list[int]:
    """A hand crowded with overlapping sets and runs (one of three recipes, chosen at random)."""
    kind = rng.randrange(3)
    if kind == 0:  # two or three suits, a window of ranks just wide enough
        suits = rng.sample(range(4), rng.choice((2, 2, 3)))
        width = min(13, -(-size // len(suits)) + rng.randrange(0, 3))
        low = rng.randrange(0, 14 - width)
        return rng.sample([s * 13 + r for s in suits for r in range(low, low + width)], size)
    if kind == 1:  # all four suits, a window of 3-4 ranks: sets everywhere, short runs
        width = -(-size // 4) + rng.randrange(0, 2)
        low = rng.randrange(0, 14 - width)
        return rng.sample([s * 13 + r for s in range(4) for r in range(low, low + width)], size)
    cards: set[int] = set()  # sets and runs, possibly sharing cards, plus a little noise
    while len(cards) < size:
        pick = rng.randrange(4)
        if pick == 0:
            rank = rng.randrange(13)
            cards.update(s * 13 + rank for s in rng.sample(range(4), rng.choice((3, 4))))
        elif pick in (1, 2):
            suit, length = rng.randrange(4), rng.choice((3, 3, 4, 5))
            low = rng.randrange(0, 14 - length)
            cards.update(suit * 13 + r for r in range(low, low + length))
        else:
            cards.add(rng.randrange(52))
    return rng.sample(sorted(cards), size)


# ----------------------------------------------------------------------------- timing


def per_call_us(jobs: dict[str, tuple[Callable, Sequence]], repeats: int, clock: Callable[[], float]) -> dict[str, float]:
    """For each job ``name: (function, inputs)``: median over ``repeats`` passes of the time per call (µs).

    The jobs are interleaved (one pass of each, then again), so a burst of load on the machine
    hits all of them alike instead of one column.
    """
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    for _ in range(repeats):
        for name, (function, inputs) in jobs.items():
            start = clock()
            for item in inputs:
                function(item)
            samples[name].append((clock() - start) / len(inputs) * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=3000, help="hands per case (default 3000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes per measurement; the median is kept")
    parser.add_argument("--seed", type=count_value(0), default=0, help="seed of the hand generator")
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: this process's CPU time (steadier on a shared machine, default); wall: perf_counter",
    )
    args = parser.parse_args(argv)
    if args.hands < 1 or args.repeats < 1:
        parser.error("--hands and --repeats must be at least 1")

    utils = load_openspiel_utils()
    if utils is None:
        print(
            "open_spiel is not installed (or has no gin_rummy module): nothing to compare against.\n"
            "Install it with `pip install open_spiel` (or `pip install -e '.[bench]'`) and run again.",
            file=sys.stderr,
        )
        return 0

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rng = random.Random(args.seed)
    cases = [
        ("random 10", random_hand, 10),
        ("random 11", random_hand, 11),
        ("dense 10", dense_hand, 10),
        ("dense 11", dense_hand, 11),
    ]
    print(
        f"{args.hands} hands per case, median of {args.repeats} passes, seed {args.seed}, "
        f"{args.clock} clock; times in microseconds per call\n"
    )
    header = (
        f"{'case':<10} {'ours mask':>10} {'to_mask':>8} {'ours list':>10} {'OpenSpiel':>10} "
        f"{'mask/OS':>8} {'list/OS':>8} {'OS != exact':>12}"
    )
    print(header)
    print("-" * len(header))
    for name, make, size in cases:
        hands = [make(rng, size) for _ in range(args.hands)]
        masks = [to_mask(hand) for hand in hands]
        ours = deadwood_of_mask if size == 10 else best_discard_deadwood_of_mask

        # correctness first: how often does OpenSpiel's answer differ from the exact value?
        differ = sum(ours(mask) != utils.min_deadwood(hand) for hand, mask in zip(hands, masks))

        times = per_call_us(
            {
                "mask": (ours, masks),
                "convert": (to_mask, hands),
                "list": (lambda hand, ours=ours: ours(to_mask(hand)), hands),
                "theirs": (utils.min_deadwood, hands),
            },
            args.repeats,
            clock,
        )
        t_mask, t_convert, t_list, t_theirs = times["mask"], times["convert"], times["list"], times["theirs"]
        print(
            f"{name:<10} {t_mask:>10.2f} {t_convert:>8.2f} {t_list:>10.2f} {t_theirs:>10.2f} "
            f"{t_mask / t_theirs:>8.3f} {t_list / t_theirs:>8.3f} "
            f"{differ:>5} ({100 * differ / len(hands):4.1f}%)"
        )
    print(
        "\nours mask: deadwood_of_mask (10 cards) / best_discard_deadwood_of_mask (11 cards) on a mask;"
        "\nto_mask: list of ids -> mask; ours list: both together (what the id-list API costs);"
        "\nOpenSpiel: GinRummyUtils(13, 4, 10).min_deadwood(list of ids), including its list conversion;"
        "\nmask/OS, list/OS: time ratios ours / OpenSpiel (below 1: ours is faster);"
        "\nOS != exact: hands where OpenSpiel's min_deadwood differs from the exact least deadwood"
        "\n(11 cards: after the best discard)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
