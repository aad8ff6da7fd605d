"""The parts of a training run around the learning (``training.train`` uses them): evaluation in a
second process, the run directory's files, the log (TensorBoard, ``progress.csv``, ``best.pt``),
stopping on SIGINT/SIGTERM, and where a run starts (fresh, ``--init-from``, ``--resume`` from
``last.pt``), the bookkeeping after each update (``RunBook``: the log, ``last.pt``, the candidates
to evaluate) and how it ends (the plot and ``summary.json``)."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from okgin_env.rules.config import RulesConfig
from okgin_env.signals import signals_ignored

from .diagnostics import BEHAVIOUR
from .manifest import check_same_settings
from .model import PolicyValueNet
from .plot import plot_progress
from .policy import CheckpointError, load_checkpoint, metadata_value, save_checkpoint, write_checkpoint
from .workers import exit_with_parent


# ----------------------------------------------------------------------------- evaluation (second process)


def evaluate_checkpoint(path: str, matches: int, seed: int, config: RulesConfig, max_rounds: int | None = None) -> dict[str, float]:
    """Win rate of the greedy policy in ``path`` over mirrored full matches (each deal sequence
    played from both seats, by ``okgin_env.evaluate``) against simple, and against random (a
    tenth as many, at least 10); a match undecided after ``max_rounds`` rounds is a draw, left
    out of the win rate. The same seed every time, so candidates meet the same deals."""
    from okgin_env.evaluate import evaluate

    from .policy import load_policy

    torch.set_num_threads(1)
    policy = load_policy(path, rules=config)
    results = {}
    for opponent, count in (("simple", matches), ("random", max(10, matches // 10))):
        pair = evaluate({"policy": policy, opponent: opponent}, matches=count, rules=config, seed=seed,
                        workers=1, progress=False, max_rounds=max_rounds).pairs[0]
        results[f"win_rate_vs_{opponent}"] = pair.win_rate_a
        results[f"win_rate_vs_{opponent}_ci_low"] = pair.ci_low
        results[f"win_rate_vs_{opponent}_ci_high"] = pair.ci_high
        results[f"points_per_round_vs_{opponent}"] = pair.points_per_round_a
        results[f"matches_vs_{opponent}"] = pair.games
        results[f"draws_vs_{opponent}"] = pair.draws
    return results


def _serve(connection: Connection, parent: int) -> None:
    """The evaluation process: evaluate each job it receives and send back ``(True, result)`` or
    ``(False, exception)``, until the trainer closes the connection or is gone. It ignores
    SIGINT and SIGTERM (from the spawn on): the trainer decides when it stops, and kills it."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)
    exit_with_parent(parent)
    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[bool, Any] = (True, evaluate_checkpoint(*job))
        except Exception as error:  # raised again in the trainer, as the pool it replaces did
            reply = (False, error)
        connection.send(reply)


def _stop_process(process: BaseProcess, connection: Connection) -> None:
    """Kill the evaluation process and reap it, waiting a few seconds at most: it ignores SIGTERM
    and holds nothing worth saving, and a process that dies holding no lock cannot block its parent."""
    connection.close()
    if process.is_alive():
        process.kill()
    process.join(timeout=5)


class Evaluator:
    """Evaluates one candidate checkpoint at a time in a second process (``evaluate_checkpoint``).

    One process and a pipe, no shared locks: whatever happens to the process (SIGTERM to the
    process group, the OOM killer, ``kill -9``), ``collect`` and ``close`` return. An evaluation
    whose process died is dropped with a warning, and the next ``submit`` starts a new process."""

    def __init__(self, matches: int, seed: int, config: RulesConfig, max_rounds: int):
        self.job = (matches, seed, config, max_rounds)
        self.process: BaseProcess | None = None
        self.connection: Connection | None = None
        self.pending: tuple[Path, int] | None = None  # (candidate, decisions at save)
        self._start()

    def _start(self) -> None:
        context = mp.get_context("spawn")
        self.connection, child_end = context.Pipe()
        self.process = context.Process(target=_serve, args=(child_end, os.getpid()), name="okgin-evaluation",
                                       daemon=True)
        with signals_ignored(signal.SIGINT, signal.SIGTERM):  # inherited: ignored before _serve runs too
            self.process.start()
        child_end.close()  # the process's death then reads as the end of the pipe here
        # Before multiprocessing's exit handler, which would SIGTERM and then join it forever.
        self._finalizer = Finalize(self, _stop_process, args=(self.process, self.connection), exitpriority=10)

    @property
    def busy(self) -> bool:
        return self.pending is not None

    def submit(self, candidate: Path, decisions: int) -> None:
        for attempt in range(2):
            if self.process is None or not self.process.is_alive():
                self.close()
                self._start()
            try:
                self.connection.send((str(candidate), *self.job))
                break
            except OSError:  # it died just now: once more with a new process
                if attempt:
                    raise
        self.pending = (candidate, decisions)

    def collect(self, wait: bool = False, give_up=lambda: False) -> tuple[dict[str, float], Path, int] | None:
        """The finished evaluation ``(result, candidate, decisions)``, if any; ``wait``: until it
        finishes or ``give_up()`` turns true. None too when the process died during it."""
        if self.pending is None:
            return None
        candidate, decisions = self.pending
        while not self.connection.poll(0.2 if wait else 0):
            if not self.process.is_alive():
                break
            if not wait or give_up():
                return None
        try:
            ok, value = self.connection.recv()
        except (EOFError, OSError):
            tqdm.write(f"the evaluation process ended (exit code {self.process.exitcode}) while it evaluated "
                       f"{candidate.name}; that evaluation is dropped, the next one starts a new process",
                       file=sys.stderr)
            self.pending = None
            candidate.unlink(missing_ok=True)
            self.close()
            return None
        self.pending = None
        if not ok:
            raise value
        return value, candidate, decisions

    def close(self) -> None:
        """Stop the process (a pending job is dropped) and reap it; never blocks more than a few seconds."""
        self.pending = None
        if self.process is not None:
            self._finalizer()  # _stop_process, once
            self.process = None


# ----------------------------------------------------------------------------- the run's files, its log, stopping


@dataclass
class Progress:
    """Where a run stands (saved in ``last.pt`` for ``--resume``)."""

    update: int = 0
    decisions: int = 0
    best_win_rate: float = -1.0  # vs simple; -1 before the first evaluation
    elapsed: float = 0.0  # training wall time, seconds, over all sessions


class RunFiles:
    """The paths of one run directory."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.last, self.best = self.root / "last.pt", self.root / "best.pt"
        self.csv, self.tensorboard = self.root / "progress.csv", self.root / "tensorboard"
        self.plot, self.summary = self.root / "learning_curve.png", self.root / "summary.json"

    def candidate(self, update: int) -> Path:
        return self.root / f"candidate_{update}.pt"

    def remove_candidates(self) -> None:
        for path in self.root.glob("candidate_*.pt"):
            path.unlink(missing_ok=True)

    def describe(self) -> str:
        return "\n".join([
            f"run directory: {self.root}",
            f"  checkpoints: {self.last} (every update; --resume continues from it), {self.best} (best evaluation)",
            f"  progress:    {self.csv} (one row per update)",
            f"  TensorBoard: tensorboard --logdir {self.tensorboard}",
            f"  plot:        {self.plot} (at the end; python -m training.plot {self.root} at any time)",
            f"  summary:     {self.summary} (at the end)",
        ])


def format_evaluation(result: dict[str, float]) -> str:
    draws = result["draws_vs_simple"] + result["draws_vs_random"]
    return (f"win rate vs simple {result['win_rate_vs_simple']:.3f} "
            f"[{result['win_rate_vs_simple_ci_low']:.3f}, {result['win_rate_vs_simple_ci_high']:.3f}] "
            f"({result['matches_vs_simple']} matches), vs random {result['win_rate_vs_random']:.3f}"
            + (f"; {draws} matches undecided after --eval-max-rounds" if draws else ""))


class RunLog:
    """TensorBoard, ``progress.csv`` and the evaluations (which keep ``best.pt``) of one run."""

    CSV_FIELDS = ["update", "decisions", "elapsed_s", "phase", "policy_loss", "value_loss", "entropy",
                  "approx_kl", "clipfrac", "explained_variance", "learning_rate", "train_points_per_round",
                  "win_rate_vs_simple", "win_rate_vs_random", "points_per_round_vs_simple",
                  *BEHAVIOUR]

    def __init__(self, files: RunFiles, fresh: bool):
        self.files = files
        self.last_evaluation: dict[str, float] = {}
        if fresh or not files.csv.exists():
            with open(files.csv, "w", newline="") as handle:
                csv.DictWriter(handle, self.CSV_FIELDS).writeheader()
            self.fields = self.CSV_FIELDS
        else:  # a resumed run appends under the header it began with
            with open(files.csv, newline="") as handle:
                self.fields = next(csv.reader(handle), None) or self.CSV_FIELDS
        self.writer = SummaryWriter(str(files.tensorboard))

    def update(self, progress: Progress, phase: str, stats: dict[str, float], train_points: float,
               learning_rate: float) -> dict[str, Any]:
        """Log one update to TensorBoard; its CSV row (written by ``write``)."""
        step = progress.decisions
        for key, value in stats.items():
            self.writer.add_scalar(f"{'behaviour' if key in BEHAVIOUR else 'losses'}/{key}", value, step)
        self.writer.add_scalar("charts/train_points_per_round_vs_simple", train_points, step)
        self.writer.add_scalar("charts/decisions_per_second", step / max(progress.elapsed, 1e-9), step)
        self.writer.add_scalar("charts/learning_rate", learning_rate, step)
        return {"update": progress.update, "decisions": step, "elapsed_s": round(progress.elapsed, 1), "phase": phase,
                **stats, "learning_rate": learning_rate, "train_points_per_round": train_points}

    def evaluation(self, finished: tuple[dict[str, float], Path, int] | None, progress: Progress,
                   row: dict[str, Any] | None = None) -> None:
        """Log a finished evaluation into ``row`` (the update's CSV row), or without one (after the
        last update) into a row of its own, phase ``evaluation``; its candidate becomes ``best.pt``
        if it is the best so far."""
        if finished is None:
            return
        result, candidate, evaluated_at = finished
        self.last_evaluation = result
        for key, value in result.items():
            self.writer.add_scalar(f"charts/{key}", value, evaluated_at)
        if row is not None:
            row.update(result)
        else:
            self.write({"update": progress.update, "decisions": progress.decisions,
                        "elapsed_s": round(progress.elapsed, 1), "phase": "evaluation", **result})
        tqdm.write(f"evaluation at {evaluated_at} decisions: {format_evaluation(result)}")
        rate = result["win_rate_vs_simple"]
        # The first evaluation is kept even if no match was decided (a win rate of nan), so that
        # every evaluated run has a best.pt; any later evaluation with a win rate replaces it.
        if rate > progress.best_win_rate or not self.files.best.exists():
            if not math.isnan(rate):
                progress.best_win_rate = rate
            payload = load_checkpoint(candidate)
            write_checkpoint(self.files.best, {**payload, "metadata": {**payload["metadata"], "evaluation": result}})
        candidate.unlink(missing_ok=True)

    def write(self, row: dict[str, Any]) -> None:
        with open(self.files.csv, "a", newline="") as handle:
            csv.DictWriter(handle, self.fields, extrasaction="ignore").writerow(row)

    def close(self) -> None:
        self.writer.close()


class StopSignals:
    """SIGINT/SIGTERM while training: the first asks the loop to stop after the current update,
    a second raises ``KeyboardInterrupt`` at once; later ones are ignored (cleanup runs)."""

    def __init__(self):
        self.signal_name: str | None = None
        self.interrupted = False
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, number: int, _frame) -> None:
        if self.interrupted:
            return
        if self.signal_name is None:
            self.signal_name = signal.Signals(number).name
            tqdm.write(f"{self.signal_name}: stopping once the current update is saved (send it again to stop at once)",
                       file=sys.stderr)
            return
        self.interrupted = True
        raise KeyboardInterrupt

    def ignore_further(self) -> None:
        self.interrupted = True

    def __exit__(self, *_exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


# ----------------------------------------------------------------------------- resume, checkpoints, the summary


def starting_point(config: Any, files: RunFiles, model: PolicyValueNet, optimizer: torch.optim.Optimizer,
                   rules: RulesConfig, resume: bool) -> tuple[Progress, bool]:
    """Fresh, from trained weights (``--init-from``) or where the run stopped (``--resume``):
    ``(progress, resumed)``; says which."""
    if resume and files.last.exists():
        progress = resume_state(files.last, model, optimizer, config, rules)
        evaluated = (f"best win rate vs simple {progress.best_win_rate:.3f}" if progress.best_win_rate >= 0
                     else "no evaluation yet")
        print(f"resumed from {files.last}: update {progress.update}, {progress.decisions} decisions, {evaluated}")
        return progress, True
    if resume:
        print(f"--resume: there is no {files.last} yet; starting a new run")
    elif files.last.exists():
        print(f"{files.last} exists but --resume was not given: starting over (its progress.csv is replaced)")
    if config.init_from:
        # Weights carry across presets with the same seats and observation (classic into standard):
        # the rules a network was trained for are a starting point here, not a contract.
        # (its seats, width and network were checked with the settings: training.train.check_config)
        payload = load_checkpoint(config.init_from, num_players=rules.num_players)
        model.load_state_dict(payload["model"])
        trained_for = payload["metadata"]["rules"]
        note = "" if trained_for == rules.rules else f" (trained for {trained_for}; fine-tuned for {rules.rules})"
        print(f"policy initialised from {config.init_from}{note}")
    return Progress(), False


def check_width(config: Any, payload: dict[str, Any], flag: str) -> None:
    hidden = payload["metadata"]["hidden"]
    if hidden != config.hyper.hidden:
        raise ValueError(f"{flag}: the checkpoint has hidden={hidden}; this run's network has "
                         f"Hyperparameters.hidden={config.hyper.hidden}")
    network = metadata_value(payload["metadata"], "network")
    if network != config.network:
        raise ValueError(f"{flag}: the checkpoint's network is {network!r}; this run's is {config.network!r}: "
                         f"pass --network {network}")
    outlook = metadata_value(payload["metadata"], "outlook_features")
    if outlook != config.outlook_features:
        raise ValueError(f"{flag}: the checkpoint's network {'reads' if outlook else 'does not read'} the outlook "
                         f"features; {'pass' if outlook else 'leave out'} --outlook-features")


def resume_state(path: Path, model: PolicyValueNet, optimizer: torch.optim.Optimizer, config: Any,
                 rules: RulesConfig) -> Progress:
    """``--resume``: the network, the optimizer and the progress from the run's ``last.pt``."""
    payload = load_checkpoint(path, rules=rules)
    # The settings last.pt was trained with are the truth (config.json may be a later start's that failed).
    recorded = payload["metadata"].get("args")
    if not isinstance(recorded, dict):
        raise CheckpointError(f"checkpoint {path} does not record the settings it was trained with")
    check_same_settings(recorded, config, f"the run of {path}")  # (the network's width and inputs included)
    saved = payload["metadata"].get("progress")
    if "optimizer" not in payload or not isinstance(saved, dict) or set(saved) != set(dataclasses.asdict(Progress())):
        raise CheckpointError(f"checkpoint {path} is not the last.pt of a training run (no optimizer state or progress)")
    progress = checked_progress(path, saved)
    model.load_state_dict(payload["model"])  # checked by load_checkpoint
    try:
        optimizer.load_state_dict(payload["optimizer"])
        for parameter in model.parameters():  # every moment tensor dense, finite and of its weight's shape
            for name, value in optimizer.state.get(parameter, {}).items():
                if not isinstance(value, torch.Tensor) or value.layout != torch.strided or value.is_meta:
                    raise ValueError(f"its {name} is not a dense tensor")
                if name != "step" and (value.shape != parameter.shape or not bool(torch.isfinite(value).all())):
                    raise ValueError(f"its {name} has shape {tuple(value.shape)} for a weight of shape "
                                     f"{tuple(parameter.shape)}, or holds NaN or infinite values")
    except (KeyError, RuntimeError, TypeError, ValueError, IndexError) as error:
        raise CheckpointError(f"checkpoint {path}: its optimizer state does not fit this run "
                              f"({str(error).strip().splitlines()[0][:200]})") from None
    return progress


def checked_progress(path: Path, saved: dict[str, Any]) -> Progress:
    """The ``Progress`` a ``last.pt`` records, each field of its type and range; a
    ``CheckpointError`` naming the field otherwise."""
    rules = {"update": (int, 0, 10**12), "decisions": (int, 0, 10**15), "best_win_rate": (float, -1.0, 1.0),
             "elapsed": (float, 0.0, 10.0**9)}
    values = {}
    for name, (kind, low, high) in rules.items():
        value = saved.get(name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number or (kind is int and value != int(value)) or not low <= value <= high:
            raise CheckpointError(f"checkpoint {path}: progress {name} is {value!r}; expected "
                                  f"{'an integer' if kind is int else 'a number'} in {low}..{high}")
        values[name] = kind(value)
    return Progress(**values)


class RunBook:
    """What ``training.train.run`` keeps beside the algorithm: after each update the log row, the
    evaluation the second process finished, ``last.pt`` and, when due, the next candidate to
    evaluate; at the end the last evaluation, the cleanup and the summary.

    ``config`` is the stage's settings (``total_decisions``, ``minutes``, ``eval_every``);
    ``metadata`` goes into every checkpoint; ``imitation_updates``: the updates before PPO. It
    prints what trains (``engine``) and the size of an update (``config.num_tables`` x ``rollout_length``)."""

    def __init__(self, files: RunFiles, config: Any, metadata: dict[str, Any], progress: Progress, resumed: bool,
                 log: RunLog, evaluator: Evaluator, imitation_updates: int, progress_bar: bool, *, engine: str,
                 rollout_length: int):
        self.files, self.config, self.metadata, self.log, self.evaluator = files, config, metadata, log, evaluator
        self.imitation_updates = imitation_updates
        self.decisions_per_update = update = rollout_length * config.num_tables
        # Training stops after whole updates: the budget is reached at the next multiple of an update.
        planned = max(progress.decisions, -(-config.total_decisions // update) * update)
        print(f"training on {engine}, torch {torch.get_num_threads()} thread(s); updates of {update:,} decisions "
              f"({config.num_tables} tables x {rollout_length})"
              + (f": --total-decisions {config.total_decisions:,} runs to {planned:,}, whole updates"
                 if planned != config.total_decisions and progress.decisions < config.total_decisions else ""), flush=True)
        self.start = time.time() - progress.elapsed
        self.bar = tqdm(total=planned, initial=progress.decisions, disable=not progress_bar, unit="dec")
        self.saved = dataclasses.replace(progress) if resumed else None  # what last.pt holds, once this run wrote it
        self.first_update = progress.update  # where this session started
        self.submitted_update: int | None = None  # the last update whose policy this session sent to evaluation

    def elapsed(self) -> float:
        """Training wall time in seconds, over every resume."""
        return time.time() - self.start

    def out_of_time(self, progress: Progress) -> bool:
        """``--minutes`` spent, by the elapsed time ``last.pt`` records (``progress.elapsed``): a run
        stopped by it stops again at once when resumed (read from the clock, the moments between
        saving and checking gave a resumed run one more update)."""
        return bool(self.config.minutes and progress.elapsed >= 60 * self.config.minutes)

    def budget_used(self, progress: Progress) -> float:
        """The share of the run's budget spent, 0 to 1: of ``total_decisions`` or of ``--minutes``,
        whichever is further along (over every resume)."""
        used = progress.decisions / self.config.total_decisions
        if self.config.minutes:
            used = max(used, self.elapsed() / (60 * self.config.minutes))
        return min(1.0, used)

    def training(self, progress: Progress, stop: StopSignals) -> bool:
        """Whether another update runs: budget, ``--minutes`` and signals allow it."""
        return progress.decisions < self.config.total_decisions and not stop.requested and not self.out_of_time(progress)

    def _checkpoint_metadata(self, progress: Progress) -> dict[str, Any]:
        return {**self.metadata, "progress": dataclasses.asdict(progress), "evaluation": self.log.last_evaluation}

    def after_update(self, model: PolicyValueNet, optimizer: torch.optim.Optimizer, progress: Progress, phase: str,
                     stats: dict[str, float], train_points: float) -> None:
        """Log the update, collect a finished evaluation, save ``last.pt`` and submit a candidate when due."""
        files, evaluator = self.files, self.evaluator
        progress.elapsed = self.elapsed()
        row = self.log.update(progress, phase, stats, train_points, optimizer.param_groups[0]["lr"])
        self.log.evaluation(evaluator.collect(), progress, row)
        meta = self._checkpoint_metadata(progress)
        save_checkpoint(files.last, model, meta, extra={"optimizer": optimizer.state_dict()})
        self.saved = dataclasses.replace(progress)
        last_update = progress.decisions >= self.config.total_decisions or self.out_of_time(progress)
        # A run that ends with no evaluation yet (one resumed after a stop) gets its final
        # policy evaluated, so that every finished run has a best.pt.
        if (self.evaluation_due(phase, progress) or (last_update and not files.best.exists())) and not evaluator.busy:
            save_checkpoint(files.candidate(progress.update), model, meta)
            evaluator.submit(files.candidate(progress.update), progress.decisions)
            self.submitted_update = progress.update
        self.log.write(row)
        self.bar.update(self.decisions_per_update)
        self.bar.set_postfix(phase=phase, pts=f"{train_points:+.2f}",
                             win_vs_simple=f"{self.log.last_evaluation.get('win_rate_vs_simple', float('nan')):.3f}")

    def evaluation_due(self, phase: str, progress: Progress) -> bool:
        """Whether the policy after this update is evaluated: right after imitation (so that a win
        rate shows in the first minutes), then every ``eval_every`` updates, and at the end of a
        run that is imitation alone (so that it has a best.pt too)."""
        if phase == "bc":
            return progress.decisions >= self.config.total_decisions
        since = progress.update - self.imitation_updates
        return since == 1 or progress.update % self.config.eval_every == 0

    def last_evaluation(self, model: PolicyValueNet, progress: Progress, stop: StopSignals) -> None:
        """After the last update: wait for the evaluation in progress, then evaluate the final policy
        unless it already was, unless a signal says stop. A run whose last update fell between two
        evaluations so reports (and may keep as ``best.pt``) the policy it ends with; a resume that
        trained nothing evaluates it only if the run has no ``best.pt`` yet."""
        self.bar.close()
        files, evaluator = self.files, self.evaluator
        give_up = lambda: stop.requested  # noqa: E731
        trained = progress.update > self.first_update
        if progress.update and progress.update != self.submitted_update and (trained or not files.best.exists()):
            self.log.evaluation(evaluator.collect(wait=True, give_up=give_up), progress)
            if not stop.requested:
                save_checkpoint(files.candidate(progress.update), model, self._checkpoint_metadata(progress))
                evaluator.submit(files.candidate(progress.update), progress.decisions)
        self.log.evaluation(evaluator.collect(wait=True, give_up=give_up), progress)

    def close(self, tables: Any) -> None:
        """The cleanup, whatever stopped the run: the bar, the second process, the candidates, the
        learner's ``tables``, the log."""
        self.bar.close()
        self.evaluator.close()
        self.files.remove_candidates()
        tables.close()
        self.log.close()

    def summary(self, progress: Progress, stopped: str | None, command: str | None) -> dict[str, Any]:
        """``last.pt`` learns a best win rate that an evaluation found after the last save (for
        ``--resume``); then ``finish``."""
        saved = self.saved
        if saved is not None and saved.best_win_rate != progress.best_win_rate:
            saved.best_win_rate = progress.best_win_rate
            payload = load_checkpoint(self.files.last)
            payload["metadata"].update(progress=dataclasses.asdict(saved), evaluation=self.log.last_evaluation)
            write_checkpoint(self.files.last, payload)
        return finish(self.files, saved or Progress(best_win_rate=progress.best_win_rate), self.log.last_evaluation,
                      stopped, command)


def finish(files: RunFiles, progress: Progress, last_evaluation: dict[str, float], stopped: str | None,
           command: str | None) -> dict[str, Any]:
    """Write the plot and ``summary.json``; print the summary (and, if stopped, how to resume).
    ``progress``: what ``last.pt`` holds."""
    if progress.best_win_rate >= 0:  # at least one evaluation to plot
        plot_progress(files.root)
    summary = {"decisions": progress.decisions, "updates": progress.update,
               "best_win_rate_vs_simple": progress.best_win_rate, "last_evaluation": last_evaluation,
               "elapsed_s": round(progress.elapsed, 1), "stopped_by": stopped,
               "files": {name: str(path) if path.exists() else None for name, path in
                         (("last", files.last), ("best", files.best), ("progress", files.csv),
                          ("tensorboard", files.tensorboard), ("plot", files.plot))}}
    files.summary.write_text(json.dumps(summary, indent=2))
    lines = [f"{'stopped' if stopped else 'finished'}: {progress.update} updates, {progress.decisions} decisions, "
             f"{progress.elapsed / 60:.1f} min of training"]
    if last_evaluation:
        lines.append(f"  last evaluation: {format_evaluation(last_evaluation)}")
        lines.append(f"  best win rate vs simple: {progress.best_win_rate:.3f} ({files.best})")
    else:
        lines.append("  no evaluation finished (the first comes after imitation, then every --eval-every "
                     "updates, or once at the end of a run that is imitation alone)")
    lines.append(f"  checkpoint: {files.last}; progress: {files.csv}; summary: {files.summary}")
    if files.plot.exists():
        lines.append(f"  plot: {files.plot}")
    print("\n".join(lines), flush=True)
    if stopped and progress.update and command:
        print(f"stopped by {stopped}; {files.last} holds update {progress.update}. Continue with:\n"
              f"  {command} --resume", file=sys.stderr, flush=True)
    elif stopped and not progress.update:
        print(f"stopped by {stopped} before the first update finished; nothing saved", file=sys.stderr, flush=True)
    return summary
