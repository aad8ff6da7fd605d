"""Head-to-head and round-robin evaluation of bots and checkpoints, with confidence intervals.

Library::

    from okgin_env.evaluate import evaluate
    results = evaluate({"search": "search", "simple": "simple"}, matches=200, workers=2)
    print(results.table())
    results.write("out/search_vs_simple")  # .json and .csv

CLI (also the ``okgin-eval`` command)::

    python -m okgin_env.evaluate search simple --matches 200 --workers 2 --out out/search_vs_simple
    python -m okgin_env.evaluate random simple search --matches 100          # round robin
    python -m okgin_env.evaluate checkpoints/okgin_classic.pt simple --episode round

**Policies.** A policy is given by a *spec*: a bot name (``"random"``, ``"simple"``,
``"search"``), optionally with constructor arguments (``"search:rollouts=64,max_discards=3"``);
a checkpoint path ending in ``.pt`` (loaded with ``training.policy.load_policy``, imported only
then); a callable ``factory(seed) -> policy``; or an object with ``act(observation) -> int``.
Specs are sent to worker processes, so with ``workers > 1`` a callable must be a top-level
(picklable) function.

**Fairness.** Every deal is played once with each policy in each seat ("mirrored deals"): the
same environment seed (so the same first dealer and the same shuffles, as
``env.reset(seed=...)`` deals them) is played with the seats swapped. With three or four players
(``rules="penalty"``) policy A plays against copies of policy B and the deal is played with A in
every seat. Bots get their own seeds, derived from ``seed``, the deal and the seat, so a run is
reproducible for a seed whatever the number of workers.

**Results** per pair (A, B): games, A's wins, B's wins and draws (a match always has a winner; a
round may be a draw: draws are counted apart and left out of the win rate), A's win rate among
decided games with its 95% Wilson score interval, A's mean round reward (``reward="points"``,
zero-sum: B's is its negative with two players), how each side won its rounds (gin, knock,
undercut, as shares of all rounds) and the draw share, and per side the mean decisions per game
and milliseconds per decision.

Games run on the rules engine directly (``MatchState`` and ``observation.encode``, exactly what
``raw_env`` gives each agent) rather than through the PettingZoo wrappers, which would cost more
than the bots themselves.
"""

from __future__ import annotations

import argparse
import ast
import csv
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from .observation import encode
from .rules.config import RulesConfig, make_config
from .rules.match import MatchState

EPISODES = ("match", "round")
Z95 = 1.959963984540054  # two-sided 95% normal quantile
KINDS = ("gin", "knock", "undercut")


# ----------------------------------------------------------------------------- statistics


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); ``(0, 1)`` for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in 0..{trials}, got {successes}")
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


# ----------------------------------------------------------------------------- policies


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"search:rollouts=64,max_discards=3"`` -> ``("search", {"rollouts": 64, "max_discards": 3})``."""
    name, _, args = spec.partition(":")
    kwargs: dict[str, Any] = {}
    if args.strip():
        for item in args.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"bad policy argument {item!r} in {spec!r}; expected key=value")
            try:
                kwargs[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                kwargs[key.strip()] = value.strip()
    return name.strip(), kwargs


def is_checkpoint(spec: Any) -> bool:
    return isinstance(spec, (str, os.PathLike)) and os.fspath(spec).endswith(".pt")


_CHECKPOINTS: dict[str, Any] = {}


def load_checkpoint(path: str) -> Any:
    """A trained policy from ``training.policy.load_policy(path)`` (imported lazily; cached per process)."""
    path = os.fspath(path)
    if path not in _CHECKPOINTS:
        if not os.path.exists(path):
            raise FileNotFoundError(f"checkpoint {path!r} does not exist")
        try:
            from training.policy import load_policy  # noqa: PLC0415 - torch only when a checkpoint is used
        except ImportError as error:
            raise ImportError(
                f"cannot load checkpoint {path!r}: training.policy.load_policy is not importable ({error}). "
                "Install the training extras (pip install -e '.[train]') and run from the repository root."
            ) from error
        _CHECKPOINTS[path] = load_policy(path)
    return _CHECKPOINTS[path]


def _is_policy_object(spec: Any) -> bool:
    """An instance with ``act`` (a class with ``act`` is a factory: it is called with the seed)."""
    return not isinstance(spec, type) and hasattr(spec, "act")


def make_policy(spec: Any, seed: int | None, config: RulesConfig) -> Any:
    """Build the policy a spec names (see the module docstring) for one game."""
    if _is_policy_object(spec):
        return spec
    if is_checkpoint(spec):
        return load_checkpoint(os.fspath(spec))
    if isinstance(spec, str):
        from .bots import make_bot

        name, kwargs = parse_spec(spec)
        kwargs.setdefault("rules", config)
        return make_bot(name, seed=seed, **kwargs)
    if callable(spec):
        return spec(seed)
    raise ValueError(
        f"cannot make a policy from {spec!r}: expected a bot name, a .pt checkpoint path, a factory or an object with act()"
    )


def check_spec(spec: Any) -> None:
    """Fail early (in the parent process) on a spec that cannot work."""
    if _is_policy_object(spec) or callable(spec):
        return
    if is_checkpoint(spec):
        if not os.path.exists(os.fspath(spec)):
            raise FileNotFoundError(f"checkpoint {os.fspath(spec)!r} does not exist")
        return
    if isinstance(spec, str):
        from .bots import BOT_NAMES

        name, _ = parse_spec(spec)
        if name not in BOT_NAMES:
            raise ValueError(f"unknown policy {spec!r}: expected one of {', '.join(BOT_NAMES)} or a path ending in .pt")
        return
    raise ValueError(f"cannot make a policy from {spec!r}")


def spec_label(spec: Any) -> str:
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__


# ----------------------------------------------------------------------------- one game


@dataclass
class Task:
    """One game: ``specs[seat]`` plays each seat; ``a_seat`` is where policy A sits."""

    pair: int
    deal: int
    rotation: int
    a_seat: int
    specs: list[Any]
    config: RulesConfig
    episode: str
    env_seed: int
    bot_seeds: list[int]


def play_game(task: Task) -> dict[str, Any]:
    """Play one match (or round) and summarise it from policy A's point of view."""
    config = task.config
    n = config.num_players
    policies = [make_policy(spec, seed, config) for spec, seed in zip(task.specs, task.bot_seeds)]
    rng, _ = seeding.np_random(task.env_seed)  # the same generator env.reset(seed=...) makes
    match = MatchState(config, rng)
    a = task.a_seat
    decisions = [0] * n
    seconds = [0.0] * n
    rounds = 0
    a_points = 0.0
    won = {f"{kind}_{side}": 0 for kind in KINDS for side in "ab"}
    draws = 0
    result = None
    target = config.target_score
    while result is None:
        state = match.round
        seat = state.current
        observation = {
            "observation": encode(state, match.scores, target, seat),
            "action_mask": state.legal_mask(),
        }
        start = time.perf_counter()
        action = policies[seat].act(observation)
        seconds[seat] += time.perf_counter() - start
        decisions[seat] += 1
        outcome = match.apply(int(action))
        if outcome is None:
            continue
        rounds += 1
        a_points += outcome.rewards[a]
        if outcome.winner is None:
            draws += 1
        elif outcome.kind in KINDS:
            won[f"{outcome.kind}_{'a' if outcome.winner == a else 'b'}"] += 1
        if task.episode == "round":
            result = "draw" if outcome.winner is None else ("a" if outcome.winner == a else "b")
        elif match.is_over:
            result = "a" if match.winner == a else "b"
        else:
            match.deal_next_round()
    b_seats = [s for s in range(n) if s != a]
    return {
        "pair": task.pair,
        "deal": task.deal,
        "rotation": task.rotation,
        "a_seat": a,
        "result": result,
        "rounds": rounds,
        "a_points": a_points,
        "round_draws": draws,
        **won,
        "decisions_a": decisions[a],
        "decisions_b": sum(decisions[s] for s in b_seats),
        "seconds_a": seconds[a],
        "seconds_b": sum(seconds[s] for s in b_seats),
        "scores": list(match.scores),
    }


# ----------------------------------------------------------------------------- results


@dataclass
class PairResult:
    """Policy A against policy B (see the module docstring for every field)."""

    a: str
    b: str
    games: int = 0
    wins_a: int = 0
    wins_b: int = 0
    draws: int = 0
    win_rate_a: float = float("nan")
    ci_low: float = 0.0
    ci_high: float = 1.0
    rounds: int = 0
    points_per_round_a: float = float("nan")
    rounds_per_game: float = float("nan")
    gin_rate_a: float = 0.0
    gin_rate_b: float = 0.0
    knock_rate_a: float = 0.0
    knock_rate_b: float = 0.0
    undercut_rate_a: float = 0.0
    undercut_rate_b: float = 0.0
    draw_rate: float = 0.0
    decisions_per_game_a: float = float("nan")
    decisions_per_game_b: float = float("nan")
    ms_per_decision_a: float = float("nan")
    ms_per_decision_b: float = float("nan")

    @classmethod
    def from_records(cls, a: str, b: str, records: list[dict[str, Any]]) -> "PairResult":
        r = cls(a=a, b=b)
        r.games = len(records)
        r.wins_a = sum(rec["result"] == "a" for rec in records)
        r.wins_b = sum(rec["result"] == "b" for rec in records)
        r.draws = r.games - r.wins_a - r.wins_b
        decided = r.wins_a + r.wins_b
        if decided:
            r.win_rate_a = r.wins_a / decided
        r.ci_low, r.ci_high = wilson_interval(r.wins_a, decided)
        r.rounds = sum(rec["rounds"] for rec in records)
        if r.rounds:
            r.points_per_round_a = sum(rec["a_points"] for rec in records) / r.rounds
            for kind in KINDS:
                for side in "ab":
                    setattr(r, f"{kind}_rate_{side}", sum(rec[f"{kind}_{side}"] for rec in records) / r.rounds)
            r.draw_rate = sum(rec["round_draws"] for rec in records) / r.rounds
        if r.games:
            r.rounds_per_game = r.rounds / r.games
            for side in "ab":
                count = sum(rec[f"decisions_{side}"] for rec in records)
                setattr(r, f"decisions_per_game_{side}", count / r.games)
                if count:
                    setattr(r, f"ms_per_decision_{side}", 1000 * sum(rec[f"seconds_{side}"] for rec in records) / count)
        return r


@dataclass
class EvalResults:
    """All pairs of one evaluation, with the settings that produced them."""

    pairs: list[PairResult]
    settings: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def pair(self, a: str, b: str) -> PairResult:
        for result in self.pairs:
            if (result.a, result.b) == (a, b):
                return result
        raise KeyError(f"no pair {a!r} vs {b!r}; pairs: {[(p.a, p.b) for p in self.pairs]}")

    def table(self) -> str:
        """A fixed-width table, one line per pair."""
        episode = self.settings.get("episode", "match")
        head = [
            "A vs B",
            f"{episode}es" if episode == "match" else "rounds",
            "A-B-draw",
            "A win% [95% CI]",
            "pts/round A",
            "rounds/game",
            "gin% A/B",
            "knock% A/B",
            "undercut% A/B",
            "draw%",
            "decisions/game A/B",
            "ms/decision A/B",
        ]
        rows = []
        for p in self.pairs:
            rows.append(
                [
                    f"{p.a} vs {p.b}",
                    str(p.games),
                    f"{p.wins_a}-{p.wins_b}-{p.draws}",
                    f"{100 * p.win_rate_a:.1f} [{100 * p.ci_low:.1f}, {100 * p.ci_high:.1f}]",
                    f"{p.points_per_round_a:+.2f}",
                    f"{p.rounds_per_game:.2f}",
                    f"{100 * p.gin_rate_a:.1f}/{100 * p.gin_rate_b:.1f}",
                    f"{100 * p.knock_rate_a:.1f}/{100 * p.knock_rate_b:.1f}",
                    f"{100 * p.undercut_rate_a:.1f}/{100 * p.undercut_rate_b:.1f}",
                    f"{100 * p.draw_rate:.1f}",
                    f"{p.decisions_per_game_a:.1f}/{p.decisions_per_game_b:.1f}",
                    f"{p.ms_per_decision_a:.2f}/{p.ms_per_decision_b:.2f}",
                ]
            )
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [head, *rows]]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "pairs": [asdict(p) for p in self.pairs]}

    def write(self, prefix: str) -> list[str]:
        """Write ``prefix.json`` and ``prefix.csv``; returns the paths."""
        folder = os.path.dirname(prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        json_path, csv_path = f"{prefix}.json", f"{prefix}.csv"
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, indent=2, default=_json_default)
            handle.write("\n")
        names = list(asdict(self.pairs[0])) if self.pairs else [f.name for f in PairResult.__dataclass_fields__.values()]
        with open(csv_path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            for p in self.pairs:
                writer.writerow(asdict(p))
        return [json_path, csv_path]


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


# ----------------------------------------------------------------------------- the driver


def _derive(*keys: int) -> int:
    """A 31-bit seed derived from integer keys (stable across runs and platforms)."""
    return int(np.random.SeedSequence([int(k) & 0xFFFFFFFF for k in keys]).generate_state(1)[0] >> 1)


def _named(policies: Mapping[str, Any] | Sequence[Any]) -> list[tuple[str, Any]]:
    if isinstance(policies, Mapping):
        items = [(str(name), spec) for name, spec in policies.items()]
    else:
        items, seen = [], {}
        for spec in policies:
            label = spec_label(spec)
            seen[label] = seen.get(label, 0) + 1
            items.append((label if seen[label] == 1 else f"{label}#{seen[label]}", spec))
    if len(items) < 2:
        raise ValueError("evaluate needs at least two policies")
    return items


def make_tasks(
    named: list[tuple[str, Any]], matches: int, config: RulesConfig, episode: str, seed: int
) -> list[Task]:
    """Every game of the evaluation: per pair, ``deals`` deals, each with A in every seat."""
    n = config.num_players
    deals = max(1, math.ceil(matches / n))
    tasks = []
    for pair, ((_, spec_a), (_, spec_b)) in enumerate(itertools.combinations(named, 2)):
        for deal in range(deals):
            env_seed = _derive(seed, deal)
            for rotation in range(n):
                a_seat = rotation
                specs = [spec_a if s == a_seat else spec_b for s in range(n)]
                bot_seeds = [_derive(seed, deal, rotation, s, 1) for s in range(n)]
                tasks.append(Task(pair, deal, rotation, a_seat, specs, config, episode, env_seed, bot_seeds))
    return tasks


def evaluate(
    policies: Mapping[str, Any] | Sequence[Any],
    matches: int = 100,
    episode: str = "match",
    rules: str | RulesConfig = "classic",
    num_players: int = 2,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
    **rule_options: Any,
) -> EvalResults:
    """Play every pair of ``policies`` (a head-to-head for two, a round robin for more).

    ``matches`` games per pair (rounded up to a whole number of mirrored deals); ``episode``
    ``"match"`` or ``"round"``; ``rules``/``num_players``/``rule_options`` as for ``okgin_env.env``;
    ``workers`` processes (1: in this process); ``progress`` shows a tqdm bar.
    """
    if episode not in EPISODES:
        raise ValueError(f"episode={episode!r}; allowed: {', '.join(EPISODES)}")
    if not isinstance(matches, int) or matches < 1:
        raise ValueError(f"matches must be a positive int, got {matches!r}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if isinstance(rules, RulesConfig):
        config = make_config(rules, **rule_options) if rule_options else rules
    else:
        config = make_config(rules, num_players=num_players, **rule_options)
    named = _named(policies)
    for _, spec in named:
        check_spec(spec)
    tasks = make_tasks(named, matches, config, episode, seed)
    started = time.perf_counter()
    records = _run(tasks, workers, progress)
    records.sort(key=lambda rec: (rec["pair"], rec["deal"], rec["rotation"]))
    pairs = []
    for index, ((name_a, _), (name_b, _)) in enumerate(itertools.combinations(named, 2)):
        pairs.append(PairResult.from_records(name_a, name_b, [r for r in records if r["pair"] == index]))
    settings = {
        "policies": {name: spec_label(spec) for name, spec in named},
        "matches": matches,
        "games_per_pair": len(tasks) // max(1, len(pairs)),
        "episode": episode,
        "rules": config.to_dict(),
        "seed": seed,
        "workers": workers,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return EvalResults(pairs=pairs, settings=settings, records=records)


def _run(tasks: list[Task], workers: int, progress: bool) -> list[dict[str, Any]]:
    bar = _progress_bar(len(tasks), progress)
    records = []
    try:
        if workers == 1:
            for task in tasks:
                records.append(play_game(task))
                bar.update(1)
        else:
            import multiprocessing

            context = multiprocessing.get_context("spawn")
            chunk = max(1, min(16, len(tasks) // (workers * 8)))
            with context.Pool(workers) as pool:
                for record in pool.imap_unordered(play_game, tasks, chunksize=chunk):
                    records.append(record)
                    bar.update(1)
    finally:
        bar.close()
    return records


class _NoBar:
    def update(self, _n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="game", dynamic_ncols=True, file=sys.stderr)


# ----------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="okgin-eval",
        description="Evaluate Oklahoma Gin policies head to head (two) or round robin (more), "
        "with mirrored deals and 95% Wilson intervals.",
    )
    parser.add_argument(
        "policies",
        nargs="+",
        help="bot names (random, simple, search; arguments as search:rollouts=64) or checkpoint paths ending in .pt",
    )
    parser.add_argument("--matches", type=int, default=100, help="games per pair (rounded up to mirrored deals)")
    parser.add_argument("--episode", choices=EPISODES, default="match", help="a game is a full match or one round")
    parser.add_argument("--rules", choices=("classic", "penalty"), default="classic")
    parser.add_argument("--num-players", type=int, default=2, help="2 (classic), 2-4 (penalty)")
    parser.add_argument("--target-score", type=int, default=None, help="match target (default: the preset's 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1: inline)")
    parser.add_argument("--out", default=None, help="write PREFIX.json and PREFIX.csv")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if len(args.policies) < 2:
        build_parser().error("give at least two policies")
    options = {} if args.target_score is None else {"target_score": args.target_score}
    try:
        results = evaluate(
            args.policies,
            matches=args.matches,
            episode=args.episode,
            rules=args.rules,
            num_players=args.num_players,
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
            **options,
        )
    except (ValueError, ImportError, FileNotFoundError) as error:
        print(f"okgin-eval: error: {error}", file=sys.stderr)
        return 2
    print(results.table())
    print(f"({results.settings['games_per_pair']} games per pair, {results.settings['seconds']:.1f} s)")
    if args.out:
        for path in results.write(args.out):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
