"""Head-to-head and round-robin evaluation of bots and checkpoints, with confidence intervals.

Library::

    from okgin_env.evaluate import evaluate
    results = evaluate({"search": "search", "simple": "simple"}, matches=200, workers=2)
    print(results.table())
    results.write("out/search_vs_simple")  # .json and .csv

CLI (also the ``okgin-eval`` command)::

    python -m okgin_env.eval_cli search simple --matches 200 --workers 2 --out out/search_vs_simple
    python -m okgin_env.eval_cli random simple search --matches 100          # round robin
    python -m okgin_env.eval_cli pretrained:classic simple --episode round

**Policies.** A policy is given by a player spec (``okgin_env.players``): a bot name with
optional settings (``"search:rollouts=64,max_discards=3"``; ``seed`` and the rules are set by
the evaluation), a policy file such as ``checkpoints/okgin_classic.pt``, a callable
``factory(seed) -> policy``, or a policy object. Every bot and file spec is built once in the
calling process before any game, so a bad setting fails at once.
Specs are sent to worker processes, so with ``workers > 1`` a callable must be a top-level
(picklable) function.

**Fairness.** Every deal is played once with each policy in each seat ("mirrored deals"): the
same environment seed (so the same first dealer and the same shuffles, as
``env.reset(seed=...)`` deals them) is played with the seats swapped. With three or four players
(``rules="penalty"``) policy A plays against copies of policy B and the deal is played with A in
every seat. Bots get their own seeds, derived from ``seed``, the deal and the seat, so a run is
reproducible for a seed whatever the number of workers. A seed is a non-negative int
(``okgin_env.rules.config.check_seed``, the envs' rule); distinct seeds play distinct deals
(a seed below 2**32 derives exactly as it always has).

**Results** per pair (A, B): games, A's wins, B's wins and draws (a match always has a winner
unless ``max_rounds`` truncates it; a round may be a draw: draws are counted apart and left out
of the win rate), A's win rate among decided games with its 95% Wilson score interval, A's mean
round reward (``reward="points"``, zero-sum: B's is its negative with two players), how each
side won its rounds (gin, knock, undercut, as shares of all rounds) and the draw share, and per
side the mean decisions per game and milliseconds per decision (``okgin_env.eval_results``).
With three or four players A's win rate is its **win share**: the fraction of decided matches A
wins against the N-1 copies of B, to be read against ``parity`` = 1/N (the table shows it); with
``rules="penalty"`` the table adds the mean penalty points charged per round to A and to each
seat of the field (``penalty_per_round_a`` / ``penalty_per_round_field``; lower is better).

**Stopping.** Ctrl-C (and, under the CLI, SIGTERM) stops the run: worker processes are ended
(they ignore Ctrl-C themselves), and ``evaluate`` raises ``EvaluationInterrupted`` (a
``KeyboardInterrupt``) whose ``results`` count the games that finished. The CLI prints that
table, says it was interrupted and exits with 130 (SIGINT) or 143 (SIGTERM).

**Workers.** ``workers`` processes play the games (1: this process); at most ``MAX_WORKERS``,
and no more than there are games: a larger count is capped, and the results' settings say so
(``workers`` used, ``workers_requested`` asked).

**Records.** ``record=PATH`` (``okgin-eval --record PATH``) writes every game (a mirrored deal
is two) as one line of ``okgin_env.records``, in the order of the tasks, once the games are
played (also when stopped), replacing the file at once. If it cannot be written (a full disk),
the results are not lost: ``evaluate`` raises ``RecordsNotWritten`` (an ``OSError``) holding
them (``results``) and the records (``game_records``), or, when stopped, says so in the
settings of ``EvaluationInterrupted.results`` (``record_error``).

Games run on the rules engine directly (``okgin_env.match_loop.play_match``: exactly what
``raw_env`` gives each agent) rather than through the PettingZoo wrappers, which would cost more
than the bots themselves.
"""

from __future__ import annotations

import itertools
import math
import os
import pickle
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from .echo import shown
from .episode import DEFAULT_MAX_ROUNDS, EPISODES
from .eval_results import KINDS, Z95, EvalResults, PairResult, wilson_interval
from .match_loop import PolicyError, check_max_rounds, play_match
from .players import check_player, make_player, player_label
from .policy_loaders import (
    PolicyLoadError,
    install_loaders,
    register_policy_loader,
    registered_loaders,
)
from .records import check_record_path, game_record, write_records
from .rules.config import RulesConfig, check_seed, is_int, make_config
from .signals import signals_ignored

__all__ = [
    "EPISODES",
    "KINDS",
    "Z95",
    "EvalResults",
    "EvaluationInterrupted",
    "MAX_WORKERS",
    "PairResult",
    "PolicyLoadError",
    "RecordsNotWritten",
    "Task",
    "evaluate",
    "make_tasks",
    "play_game",
    "register_policy_loader",
    "wilson_interval",
]

#: The most worker processes an evaluation starts (each is a Python process with its own bots).
MAX_WORKERS = 1024
#: Ends the derivation words of a seed of 2**32 or more, so that they match no narrow seed's.
_WIDE_SEED_TAG = 2

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
    max_rounds: int | None = DEFAULT_MAX_ROUNDS
    record: bool = False  # also return the game record (okgin_env.records) as "game_record"


def play_game(task: Task) -> dict[str, Any]:
    """Play one match (or round) and summarise it from policy A's point of view."""
    config = task.config
    n = config.num_players
    policies = [make_player(spec, seed=seed, rules=config) for spec, seed in zip(task.specs, task.bot_seeds)]
    rng, _ = seeding.np_random(task.env_seed)  # the same generator env.reset(seed=...) makes
    rounds: list[Any] = []
    on_round = (lambda match, _outcome: rounds.append(match.round)) if task.record else None
    try:
        game = play_match(config, policies, rng, episode=task.episode, max_rounds=task.max_rounds, on_round=on_round)
    except PolicyError as error:  # named by its spec: in a mirrored pair, either player may sit in either seat
        raise PolicyError(error.seat, f"{shown(player_label(task.specs[error.seat]))}: {error}") from None
    a = task.a_seat
    won = {f"{kind}_{side}": 0 for kind in KINDS for side in "ab"}
    a_points = 0.0
    draws = 0
    b_seats = [s for s in range(n) if s != a]
    # Penalty points charged (the penalty preset's scores; 0 in classic), A's and the field's (all of B's seats).
    penalty = {"a_penalty": 0, "b_penalty": 0}
    for outcome in game.outcomes:
        a_points += outcome.rewards[a]
        if config.penalty_scoring:
            penalty["a_penalty"] += outcome.points[a]
            penalty["b_penalty"] += sum(outcome.points[s] for s in b_seats)
        if outcome.winner is None:
            draws += 1
        elif outcome.kind in KINDS:
            won[f"{outcome.kind}_{'a' if outcome.winner == a else 'b'}"] += 1
    result = "draw" if game.winner is None else ("a" if game.winner == a else "b")
    return {
        "pair": task.pair,
        "deal": task.deal,
        "rotation": task.rotation,
        "a_seat": a,
        "num_players": n,
        "penalty_scoring": config.penalty_scoring,
        "result": result,
        "rounds": game.rounds,
        "a_points": a_points,
        **penalty,
        "round_draws": draws,
        **won,
        "decisions_a": game.decisions[a],
        "decisions_b": sum(game.decisions[s] for s in b_seats),
        "seconds_a": game.seconds[a],
        "seconds_b": sum(game.seconds[s] for s in b_seats),
        "scores": game.scores,
        **({"game_record": _game_record(task, game, rounds).to_dict()} if task.record else {}),
    }


def _game_record(task: Task, game: Any, rounds: list[Any]) -> Any:
    return game_record(
        task.config, [player_label(spec) for spec in task.specs], rounds, game.scores, episode=task.episode,
        max_rounds=task.max_rounds, winner=game.winner, truncated=game.truncated, seed=task.env_seed,
        bot_seeds=task.bot_seeds, seconds=[round(s, 4) for s in game.seconds], decisions=game.decisions,
        evaluation={"pair": task.pair, "deal": task.deal, "rotation": task.rotation, "a_seat": task.a_seat},
    )  # fmt: skip


# ----------------------------------------------------------------------------- the driver


class EvaluationInterrupted(KeyboardInterrupt):
    """``evaluate`` was stopped by a signal; ``results`` count the games that had finished."""

    def __init__(self, signal_name: str, results: EvalResults):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.results = results


class RecordsNotWritten(OSError):
    """``evaluate`` played its games but could not write the game records (``record=``): the
    message names the file and the reason; ``results`` and ``game_records`` hold what was played."""

    def __init__(self, message: str, results: EvalResults, game_records: list[dict[str, Any]]):
        super().__init__(message)
        self.results = results
        self.game_records = game_records


def _derive(seed: int, *keys: int) -> int:
    """A 31-bit seed derived from a run's seed and small non-negative keys (stable across runs and
    platforms). A seed below 2**32 derives from ``[seed, *keys]`` as it always has; a wider one
    from its 32-bit words, the keys, its word count and a tag, so that no two seeds alias."""
    if seed < 2**32:
        words = [int(seed), *map(int, keys)]
    else:
        wide = [seed >> shift & 0xFFFFFFFF for shift in range(0, seed.bit_length(), 32)]
        words = [*wide, *map(int, keys), len(wide), _WIDE_SEED_TAG]
    return int(np.random.SeedSequence(words).generate_state(1)[0] >> 1)


def _check_run_seed(seed: Any) -> int:
    """``seed`` as an int, by the envs' rule (``check_seed``), None excepted: a run is reproducible for its seed."""
    if seed is None:
        raise ValueError("seed=None is not allowed: an evaluation is reproducible for its seed; expected a non-negative int")
    return check_seed(seed)


def _named(policies: Mapping[str, Any] | Sequence[Any]) -> list[tuple[str, Any]]:
    if isinstance(policies, str):  # (iterated, "simple random" would be players 's', 'i', ...)
        raise ValueError(f"policies must be a list or a dict of players, got the text {shown(policies)}; "
                         "e.g. ['simple', 'random']")
    if isinstance(policies, Mapping):
        items = [(str(name), spec) for name, spec in policies.items()]
    else:
        items, seen = [], {}
        for spec in policies:
            label = player_label(spec)
            seen[label] = seen.get(label, 0) + 1
            items.append((label if seen[label] == 1 else f"{label}#{seen[label]}", spec))
    if len(items) < 2:
        raise ValueError("evaluate needs at least two policies")
    return items


def make_tasks(
    named: list[tuple[str, Any]],
    matches: int,
    config: RulesConfig,
    episode: str,
    seed: int,
    max_rounds: int | None = DEFAULT_MAX_ROUNDS,
) -> list[Task]:
    """Every game of the evaluation: per pair, ``deals`` deals, each with A in every seat."""
    seed = _check_run_seed(seed)
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
                tasks.append(Task(pair, deal, rotation, a_seat, specs, config, episode, env_seed, bot_seeds, max_rounds))
    return tasks


def evaluate(
    policies: Mapping[str, Any] | Sequence[Any],
    matches: int = 100,
    episode: str = "match",
    rules: str | RulesConfig = "classic",
    num_players: int | None = None,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
    max_rounds: int | None = DEFAULT_MAX_ROUNDS,
    record: str | os.PathLike | None = None,
    **rule_options: Any,
) -> EvalResults:
    """Play every pair of ``policies`` (a head-to-head for two, a round robin for more).

    ``matches`` games per pair (rounded up to a whole number of mirrored deals); ``episode``
    ``"match"`` or ``"round"``; ``rules`` (a preset name or a ``RulesConfig``)/``num_players``
    (None: the preset's or the config's own)/``rule_options`` as for ``okgin_env.env``;
    ``seed`` a non-negative int; ``workers`` processes (1: in this process; at most
    ``MAX_WORKERS``, and capped at the number of games); ``progress`` shows a tqdm bar;
    ``max_rounds`` ends a match after that many rounds as a draw (None: unbounded); ``record``: a
    file to write every game's record to (JSON Lines, ``okgin_env.records``), also when stopped
    (``RecordsNotWritten``, with the results, if it cannot be written).
    """
    if episode not in EPISODES:
        raise ValueError(f"episode={episode!r}; allowed: {', '.join(EPISODES)}")
    if not is_int(matches) or matches < 1:
        raise ValueError(f"matches must be a positive int, got {matches!r}")
    if not is_int(workers) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be an int in 1..{MAX_WORKERS} (processes), got {workers!r}")
    seed = _check_run_seed(seed)
    max_rounds = check_max_rounds(max_rounds)
    # num_players=None keeps the preset's or the given RulesConfig's own count; a number overrides it.
    config = make_config(rules, num_players=num_players, **rule_options)
    named = _named(policies)
    for _, spec in named:
        check_player(spec, config)
    tasks = make_tasks(named, matches, config, episode, seed, max_rounds)
    if record is not None:
        check_record_path(record)  # before any game
    for task in tasks:
        task.record = record is not None
    used_workers = min(workers, len(tasks))  # a process per game at most
    started = time.perf_counter()
    records: list[dict[str, Any]] = []
    interrupted = None
    try:
        _run(tasks, used_workers, progress, records)
    except KeyboardInterrupt as stop:
        interrupted = getattr(stop, "signal_name", "SIGINT")
    records.sort(key=lambda rec: (rec["pair"], rec["deal"], rec["rotation"]))
    game_records = [rec.pop("game_record") for rec in records if "game_record" in rec]
    pairs = []
    for index, ((name_a, _), (name_b, _)) in enumerate(itertools.combinations(named, 2)):
        pairs.append(PairResult.from_records(name_a, name_b, [r for r in records if r["pair"] == index]))
    settings = {
        "policies": {name: player_label(spec) for name, spec in named},
        "matches": matches,
        "games_per_pair": len(tasks) // max(1, len(pairs)),
        "episode": episode,
        "rules": config.to_dict(),
        "seed": seed,
        "workers": used_workers,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if used_workers < workers:
        settings["workers_requested"] = workers
    if max_rounds is not None:
        settings["max_rounds"] = max_rounds
    if interrupted is not None:
        settings.update(interrupted=interrupted, games_finished=len(records), games_planned=len(tasks))
    if record is not None:
        settings["record"] = os.fspath(record)
        try:
            write_records(record, game_records)
        except OSError as error:  # the games are played: keep the results, say what was not written
            settings["record_error"] = error.strerror or str(error)
    results = EvalResults(pairs=pairs, settings=settings, records=records)
    if interrupted is not None:
        raise EvaluationInterrupted(interrupted, results) from None
    if "record_error" in settings:
        raise RecordsNotWritten(settings["record_error"], results, game_records)
    return results


def _run(tasks: list[Task], workers: int, progress: bool, records: list[dict[str, Any]]) -> None:
    """Play ``tasks``, appending each game's record to ``records`` as it finishes."""
    bar = _progress_bar(len(tasks), progress)
    try:
        if workers == 1:
            for task in tasks:
                records.append(play_game(task))
                bar.update(1)
            return
        import multiprocessing

        for spec in {id(spec): spec for task in tasks for spec in task.specs}.values():
            if not _picklable(spec):  # (found here, not as a pickling traceback from the pool)
                raise ValueError(f"policy {shown(player_label(spec))}: with workers > 1 each policy is sent to worker "
                                 "processes, and this one cannot be (a lambda, a local function or an object that does "
                                 "not pickle); give a top-level function or class, a player spec, or workers=1")
        context = multiprocessing.get_context("spawn")
        chunk = max(1, min(16, len(tasks) // (workers * 8)))
        loaders = {suffix: loader for suffix, loader in registered_loaders().items() if _picklable(loader)}
        # Workers start with Ctrl-C ignored (an ignored signal stays ignored across exec), so a
        # Ctrl-C in the terminal reaches only this process, which then ends them.
        with signals_ignored(signal.SIGINT):
            pool = context.Pool(workers, initializer=_init_worker, initargs=(loaders,))
        try:
            for record in pool.imap_unordered(play_game, tasks, chunksize=chunk):
                records.append(record)
                bar.update(1)
            pool.close()
        except BaseException:
            with signals_ignored(signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not break the clean-up
                pool.terminate()
                pool.join()
            raise
        pool.join()
    finally:
        bar.close()


def _init_worker(loaders: dict[str, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the workers
    install_loaders(loaders)


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - any failure means it cannot go to a worker
        return False
    return True


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
