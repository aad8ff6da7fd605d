"""Distil a teacher bot into a trained policy: ``python -m training.distil --init-from CHECKPOINT``.

Read top to bottom: settings, labelling (worker processes), then fitting and evaluation, which
are ``training.improve.fit_and_evaluate``'s (the ``imitate`` objective on the labels written here).

Method (why): the search bot (``okgin_env.bots.search``) plays better than the policies trained
so far at every table, but takes 50-250 ms a decision; a network that plays its moves would take
a millisecond. This is the first half of expert iteration (Anthony et al., 2017):

1. **Labelling.** The policy (greedy) plays full matches against ``simple``, its seat rotating
   from match to match, as in ``training.improve``. At each of its decisions with a choice the
   *teacher* (``--teacher``, a player spec, by default the search bot) is shown the same observation
   and says what it would play. The states come from the student's own play (as in DAgger), so
   the teacher corrects the mistakes the student actually makes; the teacher sees only the
   observation, like the student. Each decision is stored with the network's inputs and, in
   ``q``, a one-hot row marking the teacher's action among the legal ones (the label format of
   ``training.improve``, so its fitting, resuming and Ray path serve both).
2. **Fitting** from the starting weights: cross-entropy towards the teacher's action. On
   held-out decisions (a random share) it reports
   how often the policy agrees with the teacher (``validation_best_action_agreement``, and its
   change from the start as ``validation_gain_points``).
3. **Evaluation**: the starting and the fitted policy on the same mirrored matches against
   ``simple`` (``training.improve``'s ``summary.json``).

The teacher must be reproducible for its seed (a ``rollouts`` budget, not a ``time_limit``), so
that the same arguments give the same labels and ``--resume`` can trust the chunks it finds.
The held-out bots (``okgin_env.bots.HELD_OUT_BOTS``) are refused: no training stage plays them.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from okgin_env.bots import SimpleBot
from okgin_env.players import make_player

from .cli import Command, check_settings, make_run_dir, seed_everything, setting
from .features import MAX_LEGAL_ACTIONS
from .improve import FitSettings, checkpoint_identity, chunk_sizes, fit_and_evaluate, label_chunks
from .league import check_training_player
from .labelling import checkpoint_file, labelling_config, play_learner_matches, record_inputs
from .policy import load_checkpoint, load_policy
from .manifest import check_manifest, write_manifest
from .workers import ray_address_setting, require_ray

PROG = "python -m training.distil"


@dataclass(frozen=True)
class DistilConfig:
    """What a distillation run learns: the command line's flags, and ``fit`` from Python."""

    init_from: str = setting("checkpoints/okgin_classic.pt", "the policy to train (the student)")
    teacher: str = setting("search", "the player whose moves are learned, a player spec (search, search:rollouts=160, "
                           "a policy file); reproducible (no time_limit), not a held-out bot")
    seed: int = setting(1, "seed for the deals, the bots and the fit", low=0)
    decisions: int = setting(40_000, "decisions labelled by the teacher (all workers)", low=1)
    eval_matches: int = setting(1000, "matches against simple for each of start and fitted (0: none)", low=0)
    workers: int = setting(2, "labelling and evaluation processes", low=1, high=256, runtime=True)
    ray_address: str = ray_address_setting()
    fit: FitSettings = setting(FitSettings(chunk=500), "the labelling jobs' size and the fit's constants (from Python)")


# ----------------------------------------------------------------------------- labelling (worker processes)


def label_with_teacher(job: tuple[str, str, str, int, int]) -> dict[str, np.ndarray]:
    """One worker: the student plays matches against ``simple``; the teacher labels ``count`` decisions.

    ``job`` = (checkpoint, rules, teacher spec, seed, count). The teacher and ``simple`` are
    seeded from ``seed``, and match ``k`` is dealt from ``[seed, k]``: the same job gives the same
    arrays. ``q`` is 1 for the teacher's action (in the row order of ``encode_decision``), else 0.
    """
    checkpoint, rules, teacher_spec, seed, count = job
    torch.set_num_threads(1)
    path = checkpoint_file(checkpoint)
    config = labelling_config(path, rules)
    student = load_policy(path, rules=config)
    teacher = make_player(teacher_spec, seed=seed, rules=config)
    opponent = SimpleBot(seed=random.Random(seed).getrandbits(32))
    records: dict[str, list] = {k: [] for k in ("obs", "ctx", "feat", "ids", "legal", "q")}

    def label(match, learner: int, observation: dict[str, np.ndarray], encoded: tuple) -> None:
        actions = encoded[-1]
        choice = int(teacher.act(observation))
        if choice not in actions:
            raise RuntimeError(f"teacher {teacher_spec!r} played {choice}, not a legal action {actions}")
        q = np.zeros(MAX_LEGAL_ACTIONS, dtype=np.float32)
        q[actions.index(choice)] = 1.0
        record_inputs(records, observation, encoded)
        records["q"].append(q)

    play_learner_matches(config, student, opponent, seed, count, label)
    return {k: np.stack(v) for k, v in records.items()}


# ----------------------------------------------------------------------------- main


def run(config: DistilConfig, run_dir: str | Path, *, resume: bool = False, progress_bar: bool = True) -> dict:
    """Label ``config.decisions`` decisions with the teacher's choices, fit the student to them and
    evaluate both; the summary (also ``summary.json``)."""
    check_settings(config)
    if config.ray_address:
        require_ray(config.ray_address)  # before anything is written
    run_dir = Path(run_dir)
    start = load_checkpoint(config.init_from)  # validated before anything is built from it
    rules = start["metadata"]["rules"]
    check_training_player(config.teacher, "--teacher", labelling_config(config.init_from, rules))  # fails now
    recorded = dataclasses.replace(config, init_from=checkpoint_identity(config.init_from))  # (as improve does)
    if resume:
        check_manifest(run_dir, recorded)
    make_run_dir(run_dir)
    write_manifest(run_dir, recorded)
    seed_everything(config.seed, torch_threads=1)

    manifest = {"init_from": checkpoint_identity(config.init_from), "rules": rules, "teacher": config.teacher,
                "seed": config.seed, "sizes": chunk_sizes(config.decisions, config.fit.chunk)}
    chunks, labelling_seconds = label_chunks(
        run_dir, manifest, config.init_from, label_with_teacher,
        lambda checkpoint, k, size: (checkpoint, rules, config.teacher, config.seed * 100_000 + k, size),
        resume=resume, workers=config.workers, ray_address=config.ray_address, progress=progress_bar,
        desc=f"teacher labels ({config.fit.chunk} decisions a job)")
    summary = fit_and_evaluate(config.init_from, start, chunks, run_dir, objective="imitate", seed=config.seed,
                               fit=config.fit, eval_matches=config.eval_matches, workers=config.workers,
                               progress_bar=progress_bar, record={"distil_args": dataclasses.asdict(config)})
    summary["teacher"] = config.teacher
    summary["labelling_seconds"] = round(labelling_seconds, 1)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


COMMAND = Command(PROG, __doc__, DistilConfig, run, run_dir="runs/distil")
parse_args, main, cli = COMMAND.parse_args, COMMAND.main, COMMAND.cli


if __name__ == "__main__":
    sys.exit(cli())
