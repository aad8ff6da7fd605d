"""Shared pieces of the speed benchmarks: arguments, timing, repeats, the table, the pyspiel check.

Every benchmark measures each system for ``--seconds`` of wall time, ``--repeats`` times,
interleaving the systems within each repeat (so a noisy moment hurts all of them alike), and
reports the median decisions per second and the ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: A measurement: run for about ``seconds`` and return the number of decisions made.
Loop = Callable[[float], int]

CHECK_EVERY = 64  # decisions between clock reads inside a loop

#: The checkout's root (this file's folder's parent).
REPO_ROOT = Path(__file__).resolve().parent.parent


def add_repo_root() -> None:
    """Put the checkout's root first on ``sys.path``, so a benchmark run as ``python benchmarks/x.py``
    imports the checkout's ``training`` (not installed as a package) and ``okgin_env``."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))


def seconds_value(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (NaN and inf would never end a loop)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give seconds above 0") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds above 0")
    return value


def count_value(least: int) -> Callable[[str], int]:
    """An argparse type: an int of at least ``least``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an int; give one of at least {least}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value}: give an int of at least {least}")
        return value

    parse.__name__ = f"int >= {least}"  # (argparse names the type in its message)
    return parse


def output_path(text: str) -> str:
    """An argparse type for a file (or a file prefix) the benchmark writes when it ends: refused at
    once, not after the run, where its folder cannot be made or written or the path is a folder."""
    folder = os.path.dirname(text) or "."
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: its folder cannot be made ({error.strerror or error})") from None
    if not os.access(folder, os.W_OK) or os.path.isdir(text) or not os.path.basename(text):
        raise argparse.ArgumentTypeError(f"{text!r}: give a file in a folder that can be written")
    return text


def parse_args(description: str, default_seconds: float = 3.0, default_repeats: int = 5) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=seconds_value, default=default_seconds,
                        help="wall time per measurement (default %(default)s)")
    parser.add_argument("--repeats", type=count_value(1), default=default_repeats,
                        help="measurements per system; the median is reported (default %(default)s)")
    parser.add_argument("--seed", type=count_value(0), default=0,
                        help="seed of the random actions and chance samples (default %(default)s)")
    return parser.parse_args()


def require_pyspiel():
    """Import pyspiel, or exit with a message saying how to get it."""
    try:
        import pyspiel
    except ImportError:
        sys.exit(
            "This benchmark compares against OpenSpiel, which is not installed.\n"
            "Install it with:  pip install 'okgin[bench]'   (or: pip install open_spiel)"
        )
    return pyspiel


@dataclass
class Result:
    name: str
    rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def measure(systems: dict[str, Callable[[], Loop]], seconds: float, repeats: int) -> dict[str, Result]:
    """``systems`` maps a name to a factory of a fresh loop (setup is not timed)."""
    results = {name: Result(name) for name in systems}
    for repeat in range(repeats):
        for name, factory in systems.items():
            loop = factory()
            loop(min(0.2, seconds / 10))  # warm-up: imports, caches, first deals
            start = time.perf_counter()
            decisions = loop(seconds)
            elapsed = time.perf_counter() - start
            results[name].rates.append(decisions / elapsed)
        print(f"  repeat {repeat + 1}/{repeats}: " + ", ".join(f"{n} {r.rates[-1]:,.0f}/s" for n, r in results.items()), file=sys.stderr)
    return results


def print_table(title: str, results: dict[str, Result], ratios: list[tuple[str, str, float]], seconds: float) -> bool:
    """The table of decisions/s, then each ``(ours, theirs, target)`` ratio. Returns whether all targets were met."""
    print(f"\n{title}")
    print(f"python {platform.python_version()} on {platform.machine()}, {seconds:g} s per measurement, median of {len(next(iter(results.values())).rates)}")
    width = max(len(name) for name in results)
    print(f"| {'system'.ljust(width)} | decisions/s (median) | min | max |")
    print(f"|{'-' * (width + 2)}|---:|---:|---:|")
    for name, result in results.items():
        print(f"| {name.ljust(width)} | {result.median:,.0f} | {min(result.rates):,.0f} | {max(result.rates):,.0f} |")
    print()
    all_met = True
    for ours, theirs, target in ratios:
        ratio = results[ours].median / results[theirs].median
        per_repeat = [a / b for a, b in zip(results[ours].rates, results[theirs].rates)]
        met = ratio >= target
        all_met &= met
        print(
            f"ratio {ours} / {theirs}: {ratio:.2f}x (per repeat {min(per_repeat):.2f}-{max(per_repeat):.2f}x; "
            f"target >= {target:g}x: {'met' if met else 'NOT met'})"
        )
    return all_met
