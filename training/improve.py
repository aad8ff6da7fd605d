"""Improve a trained policy by rollouts: ``python -m training.improve --init-from CHECKPOINT``.

Read top to bottom: settings, labelling (worker processes), fitting, evaluation.

Method (why): PPO's advantages for one decision carry the noise of the whole rest of the round
(which cards come off the stock, what the opponent holds), and on this game that noise swamps the
small differences between good actions. Here every legal action of a decision is scored on the
same future instead:

1. **Labelling** (``training.labelling``). The policy (greedy) plays full matches against
   ``simple``. At each of its decisions with a choice, every legal action is tried on a copy of
   the *true* round state (the real stock order and opponent hands: training-time information the
   policy never sees), and the round is played out with the policy for its seat and ``simple``
   for the others, with the same tie-break seed for every action (common random numbers).
   ``Q(action)`` = the learner's round points. Actions are thus compared on the identical deal,
   so the differences are free of deal luck; what remains is the hidden information, which
   averages out below. ``--rollout-player SPEC`` lets a bot play the learner's seat in the
   rollouts instead of the policy: the labels then value each action followed by that bot's
   play, so the step improves on the bot (the penalty recipe's first step, with ``lookahead``).
2. **Fitting**, from the starting weights. The hidden cards were drawn from their true
   distribution given the observation (real play), so what can be learned from the labels is
   ``E[Q | observation]``: the best action *given what the policy can see*. ``--objective
   regress`` (the classic recipe) regresses the centred scores onto the centred labels /
   ``q_scale``; ``--objective policy`` (the penalty recipe) maximises the expected label under the
   policy's softmax for all actions at once (an all-actions policy gradient: small, conservative
   steps). Either way, playing the best score is one step of policy iteration on the starting
   policy. On held-out decisions the fit reports its gain in points: the label of the fitted
   policy's choice minus that of the starting policy's, on the same deal and continuation.
   ``--extra-labels`` adds the labels of earlier steps to the fit (the classic recipe's).
3. **Evaluation.** The starting and the fitted policy play the same mirrored full matches against
   ``simple`` through the evaluation library; both results go to ``summary.json``.

**Distilling a teacher** (``--teacher SPEC``: expert iteration's first half, Anthony et al.,
2017). The labels are then a teacher's moves instead of rollouts: a player spec, for example the
search bot, which plays better than the trained policies but takes 50-250 ms a decision where a
network takes a millisecond. The policy plays the same matches; at each of its decisions with a
choice the teacher is shown the same observation and says what it would play
(``training.labelling.label_with_teacher``). The states come from the student's own play (as in
DAgger), so the teacher corrects the mistakes the student actually makes, and it sees only the
observation, like the student. ``q`` is a one-hot row on the teacher's action, and the fit is a
cross-entropy towards it (the ``imitate`` objective); on held-out decisions it reports how often
the policy agrees with the teacher (``validation_best_action_agreement``). The teacher must be
reproducible for its seed (a ``rollouts`` budget, not a ``time_limit``) so that ``--resume`` can
trust the chunks it finds, and the held-out bots are refused. ``--objective``,
``--rollout-player`` and ``--extra-labels`` are for rollout labels and stay at their defaults.

Labelling runs in worker processes (``--workers``) or on a Ray cluster (the environment
variable ``OKGIN_RAY_ADDRESS``, see ``training.workers``), one job per ``FitSettings.chunk``
decisions, each written to ``labels_NNNN.npz`` as it finishes; ``--resume`` keeps the chunks an interrupted run of the same
settings wrote. The fit's constants are ``FitSettings`` (set from Python). Variants that were
measured and not shipped (truncated rollouts, labelling the top actions only, self-play and
bot label opponents, match-odds targets, own-penalty labels) are in docs/research/.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from okgin_env.policy_loaders import policy_file_path
from okgin_env.rules.config import make_config

from .cli import MAX_SEED, Command, check_settings, make_run_dir, seed_everything, setting
from .features import MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES, NUM_OUTLOOK_FEATURES
from .labelling import check_rollout_player, label_decisions, label_with_teacher
from .manifest import check_manifest, write_manifest
from .policy import build_model, load_checkpoint, metadata_value, save_checkpoint
from .workers import ray_address_setting, require_ray, run_jobs

PROG = "python -m training.improve"
LABELLED_ARRAYS = ("obs", "ctx", "feat", "ids", "legal", "q")  # training.labelling.LABEL_KEYS
OBJECTIVES = ("regress", "policy")


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class FitSettings:
    """The labelling jobs' size and the fit's constants (the shipped steps' values; from Python)."""

    chunk: int = setting(2_000, "decisions per labelling job (each has its own seed and file)", low=1)
    q_scale: float = setting(2.0, "round points per unit of action score (or of advantage)", above=0)
    epochs: int = setting(4, "passes over the labelled decisions", low=0)
    learning_rate: float = setting(1e-4, "Adam learning rate", above=0)
    minibatch_size: int = setting(512, "decisions per gradient step", low=1)
    validation_fraction: float = setting(0.05, "decisions held out to report the fit", above=0, high=0.5)


@dataclass(frozen=True)
class ImproveConfig:
    """One improvement step: the command line's flags, and ``fit`` from Python."""

    init_from: str = setting("checkpoints/okgin_classic_ppo.pt", "the policy to improve")
    seed: int = setting(1, "seed for python, numpy, torch and the deals", low=0, high=MAX_SEED)
    decisions: int = setting(200_000, "labelled decisions to collect (all workers; one is held out to report the "
                             "fit, so at least two)", low=2)
    objective: str = setting("regress", "regress: regress the scores onto the labels (classic); policy: raise the "
                             "probability of actions above the policy's own mean label (penalty)", choices=OBJECTIVES)
    rollout_player: str = setting("policy", "who plays the learner's seat in the labelling rollouts: policy, the "
                                  "policy being improved, or a bot spec (simple, lookahead; not a held-out bot, "
                                  "no time_limit): each label then values the action followed by that bot's play")
    extra_labels: str = setting("", "comma-separated run folders whose labels are added to the fit (after this run's)")
    teacher: str = setting("", "distil a teacher instead of rollouts: label each decision with this player's move "
                           "and fit towards it; a player spec (search, search:rollouts=160, a policy file), "
                           "reproducible (no time_limit), not a held-out bot; empty: rollout labels")
    eval_matches: int = setting(1000, "matches against simple for each of start and fitted (0: none)", low=0)
    workers: int = setting(2, "labelling and evaluation processes", low=1, high=256, runtime=True)
    ray_address: str = ray_address_setting()
    fit: FitSettings = setting(FitSettings(), "the labelling jobs' size and the fit's constants (from Python)")


# ----------------------------------------------------------------------------- labelling (worker processes)


def chunk_path(run_dir: Path, k: int) -> Path:
    return run_dir / f"labels_{k:04d}.npz"


def chunk_sizes(decisions: int, chunk: int) -> list[int]:
    """Decisions per labelling job: ``chunk`` each, the last one the rest."""
    return [min(chunk, decisions - begin) for begin in range(0, decisions, chunk)]


def label_chunks(run_dir: Path, manifest: dict, init_from: str, label, job_for, *, resume: bool, workers: int,
                 ray_address: str, progress: bool, desc: str,
                 shapes: dict[str, tuple[tuple[int, ...], str]] | None = None) -> tuple[list[Path], float]:
    """Run the labelling jobs of ``manifest["sizes"]`` and save each as ``labels_NNNN.npz``.

    ``label(job)`` runs in the workers (``training.workers.run_jobs``); ``job_for(checkpoint, k,
    size)`` makes job ``k``'s arguments, ``checkpoint`` being the start's path (local processes)
    or its bytes (on Ray a node's disk is not this one: ``training.labelling.checkpoint_file``).
    With ``resume``, the chunks an earlier run of the same ``manifest`` finished are kept
    (``finished_chunks``); any other chunk in ``run_dir`` is removed. Each file is written aside
    and renamed, so it is complete or absent and a later ``--resume`` can trust any it finds.
    Returns every chunk's path, in job order, and the seconds spent labelling.
    """
    sizes = manifest["sizes"]
    done = finished_chunks(run_dir, manifest, sizes, shapes) if resume else {}
    for old in run_dir.glob("labels_*.npz"):
        if old not in done.values():
            if old.is_dir() and not old.is_symlink():
                raise ValueError(f"{old} is a folder where a label chunk belongs; remove it and run again")
            old.unlink()
    (run_dir / "labels.json").write_text(json.dumps(manifest))
    checkpoint = Path(init_from).read_bytes() if ray_address else str(Path(init_from).resolve())
    todo = [k for k in range(len(sizes)) if k not in done]
    if done:
        print(f"resuming: {len(done)} of {len(sizes)} label chunks were written before; labelling the other {len(todo)}")
    began = time.time()
    jobs = [job_for(checkpoint, k, sizes[k]) for k in todo]
    # The jobs return their labels (on a cluster a worker's disk is not this one); saved here, in job order.
    for k, labels in zip(todo, run_jobs(label, jobs, workers=workers, ray_address=ray_address or None,
                                        progress=progress, desc=desc)):
        partial = run_dir / f"partial_{k:04d}.npz"
        np.savez_compressed(partial, **labels)
        partial.replace(chunk_path(run_dir, k))
    seconds = time.time() - began
    print(f"labelled {sum(sizes[k] for k in todo)} decisions in {seconds:.0f} s")
    return [chunk_path(run_dir, k) for k in range(len(sizes))], seconds


def checkpoint_identity(path: str | Path) -> str:
    """What a run's label manifest records of its starting checkpoint: a hash of the file's bytes,
    so that the same checkpoint resumes from another path (a copy, a clone, another machine)."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _same_manifest(old: dict, new: dict) -> bool:
    if old == new:
        return True
    # Manifests written before checkpoint hashes recorded the checkpoint's path: the same bytes count.
    start = old.get("init_from", "")
    if not isinstance(start, str) or start.startswith("sha256:") or not Path(start).is_file():
        return False
    return {**old, "init_from": checkpoint_identity(start)} == new


def finished_chunks(run_dir: Path, manifest: dict, sizes: list[int],
                    shapes: dict[str, tuple[tuple[int, ...], str]] | None = None) -> dict[int, Path]:
    """The label chunks an earlier run with the same ``manifest`` finished: ``{job index: path}``.

    Chunks of another run (other start, rules, seed or sizes) are not kept: their labels would not
    be the ones this run asks for (a line says how many are dropped)."""
    manifest_path = run_dir / "labels.json"
    if not manifest_path.exists():
        return {}
    try:
        old = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        old = None
    if not isinstance(old, dict):
        print(f"--resume: {manifest_path} cannot be read; labelling afresh")
        return {}
    if not _same_manifest(old, manifest):
        found = len(list(run_dir.glob("labels_*.npz")))
        if found:
            changed = sorted(key for key in {*old, *manifest} if old.get(key) != manifest.get(key))
            print(f"--resume: the {found} label chunks in {run_dir} were made with another {', '.join(changed)}; "
                  "labelling afresh")
        return {}
    done = {}
    for k, size in enumerate(sizes):
        path = chunk_path(run_dir, k)
        if path.exists():
            try:
                whole = load_labels([path], shapes)["q"].shape[0] == size
            except ValueError:  # a damaged chunk (load_labels names it) is labelled again
                whole = False
            if whole:
                done[k] = path
    return done


# ----------------------------------------------------------------------------- fitting


def centred(values: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``values`` minus their mean over the legal entries of each row (illegal entries -> 0)."""
    values = values.masked_fill(~legal, 0.0)
    mean = values.sum(-1, keepdim=True) / legal.sum(-1, keepdim=True)
    return (values - mean).masked_fill(~legal, 0.0)


def fit_loss(model, batch: dict[str, torch.Tensor], q_scale: float, objective: str = "regress") -> torch.Tensor:
    """The fit's loss on ``batch``: ``regress`` (scores onto labels), ``policy`` (expected label
    under the softmax) or ``imitate`` (a teacher's one-hot labels, ``--teacher``)."""
    logits, _ = model(batch["obs"], batch["ctx"], batch["feat"], batch["ids"], batch["legal"])
    legal = batch["legal"]
    if objective == "imitate":
        return torch.nn.functional.cross_entropy(logits, batch["q"].masked_fill(~legal, float("-inf")).argmax(-1))
    if objective == "policy":
        # Expected label under the policy, for every action at once (no sampling noise), relative
        # to the labels' mean so that the loss is comparable across decisions.
        probabilities = torch.softmax(logits, dim=-1)
        return -(probabilities * centred(batch["q"] / q_scale, legal)).sum(-1).mean()
    scores = centred(logits.masked_fill(~legal, 0.0), legal)
    targets = centred(batch["q"] / q_scale, legal)
    return ((scores - targets) ** 2).sum() / legal.sum()


def _choices(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(B, 1)``: each decision's highest-scored legal action."""
    with torch.no_grad():
        logits, _ = model(batch["obs"], batch["ctx"], batch["feat"], batch["ids"], batch["legal"])
    return logits.masked_fill(~batch["legal"], float("-inf")).argmax(-1, keepdim=True)


def chosen_points(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The label (round points) of the action each decision's highest score picks."""
    return batch["q"].gather(-1, _choices(model, batch)).squeeze(-1)


def agreement(model, batch: dict[str, torch.Tensor]) -> float:
    """Fraction of decisions whose highest score has the highest label."""
    best_q = batch["q"].masked_fill(~batch["legal"], -1e9).max(-1, keepdim=True).values
    return float((batch["q"].gather(-1, _choices(model, batch)) >= best_q).float().mean())


def label_shapes(meta: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each labelled array's shape after its decision axis and its dtype kind (numpy's: ``f``
    float, ``i`` integer, ``b`` bool), for the network a checkpoint's ``meta`` describes."""
    features = NUM_ACTION_FEATURES + (NUM_OUTLOOK_FEATURES if metadata_value(meta, "outlook_features") else 0)
    return {"obs": ((meta["observation_size"],), "f"), "ctx": ((NUM_CONTEXT_FEATURES,), "f"),
            "feat": ((MAX_LEGAL_ACTIONS, features), "f"), "ids": ((MAX_LEGAL_ACTIONS,), "i"),
            "legal": ((MAX_LEGAL_ACTIONS,), "b"), "q": ((MAX_LEGAL_ACTIONS,), "f")}


def read_label_chunk(path: Path, shapes: dict[str, tuple[tuple[int, ...], str]] | None = None,
                     advice: str = "remove it (or the run folder) and label again") -> dict[str, np.ndarray]:
    """One label chunk's arrays, checked as ``load_labels`` says."""
    try:
        with np.load(path) as chunk:
            part = {key: chunk[key] for key in LABELLED_ARRAYS}
        rows = {value.shape[0] if value.ndim else None for value in part.values()}
        if len(rows) != 1 or None in rows or part["q"].ndim != 2:
            raise ValueError("its arrays do not have one row per decision")
        for key, (tail, kind) in (shapes or {}).items():
            if part[key].shape[1:] != tail or part[key].dtype.kind != kind:
                raise ValueError(f"its {key} holds {part[key].shape[1:]} of {part[key].dtype} a decision; "
                                 f"this network's labels hold {tail} of kind {kind!r}")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"label chunk {path} cannot be read ({type(error).__name__}: {error}); {advice}") from None
    return part


def load_labels(chunks: list[Path], shapes: dict[str, tuple[tuple[int, ...], str]] | None = None,
                advice: str = "remove it (or the run folder) and label again") -> dict[str, torch.Tensor]:
    """The label chunks' arrays, concatenated in order; a ``ValueError`` naming a damaged chunk
    (``advice``: what its message tells the user to do). ``shapes`` (``label_shapes``): each array
    must also have that shape after its decision axis and that dtype kind."""
    parts = [read_label_chunk(path, shapes, advice) for path in chunks]
    return {key: torch.from_numpy(np.concatenate([part[key] for part in parts])) for key in LABELLED_ARRAYS}


def extra_label_chunks(folder: str, rules: str, shapes: dict[str, tuple[tuple[int, ...], str]]) -> list[Path]:
    """The label chunks of another run's ``folder`` (``--extra-labels``), each read and checked:
    labels of ``rules`` for this network's inputs; a ``ValueError`` naming the folder otherwise."""
    found = sorted(Path(folder).glob("labels_*.npz"))
    if not found:
        raise FileNotFoundError(f"--extra-labels {folder}: no labels_*.npz there")
    try:
        recorded = json.loads((Path(folder) / "labels.json").read_text()).get("rules")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded != rules:
        made = f"labels of rules={recorded!r}" if isinstance(recorded, str) else "no readable labels.json naming its rules"
        raise ValueError(f"--extra-labels {folder}: it holds {made}; this run fits rules={rules!r}")
    for chunk in found:  # one at a time: the fit reads them all later
        read_label_chunk(chunk, shapes, advice=f"--extra-labels {folder} cannot be fitted here")
    return found


# ----------------------------------------------------------------------------- the stage


def run(config: ImproveConfig, run_dir: str | Path, *, resume: bool = False, progress_bar: bool = True) -> dict[str, Any]:
    """Label, fit and evaluate one improvement step in ``run_dir``; the summary (also ``summary.json``)."""
    check_settings(config)
    config = dataclasses.replace(config, init_from=policy_file_path(config.init_from))  # pretrained:NAME's file
    fit = config.fit
    if config.ray_address:
        require_ray(config.ray_address)  # before anything is written
    if config.teacher and (config.objective, config.rollout_player, config.extra_labels) != ("regress", "policy", ""):
        raise ValueError("--teacher labels each decision with the teacher's move and fits towards it; --objective, "
                         "--rollout-player and --extra-labels are for rollout labels: leave them at their defaults")
    start = load_checkpoint(config.init_from)
    meta = start["metadata"]
    rules = meta["rules"]
    table = make_config(rules, num_players=meta["num_players"])
    if config.teacher:
        from .league import check_training_player

        check_training_player(config.teacher, "--teacher", table)
    check_rollout_player(config.rollout_player, table)
    shapes = label_shapes(meta)
    extra_chunks = [chunk for extra in filter(None, config.extra_labels.split(","))
                    for chunk in extra_label_chunks(extra, rules, shapes)]  # (all read before any labelling)
    # The start is named by its bytes' hash, so that the same checkpoint resumes from another path.
    recorded = dataclasses.replace(config, init_from=checkpoint_identity(config.init_from))
    if resume:
        try:
            check_manifest(run_dir, recorded)  # (its chunks would be labelled afresh otherwise)
        except ValueError as error:
            if "init_from:" not in str(error):
                raise
            raise ValueError(f"{error} (a start is recorded by its file's hash: --init-from {config.init_from} is "
                             f"{recorded.init_from[:19]}...)") from None
    run_dir = make_run_dir(run_dir)
    write_manifest(run_dir, recorded)

    # Seeding: one block for every source of randomness.
    seed_everything(config.seed, torch_threads=1)

    # ---- labelling
    sizes = chunk_sizes(config.decisions, fit.chunk)
    # What the chunks are labels of: a resumed run keeps them only if it would label the same.
    manifest = {"init_from": checkpoint_identity(config.init_from), "rules": rules, "seed": config.seed, "sizes": sizes}
    job_options: tuple = ()
    if config.rollout_player != "policy":
        manifest["rollout_player"] = config.rollout_player
        job_options = ({"rollout": config.rollout_player},)
    if config.teacher:
        manifest["teacher"] = config.teacher
    label, kind = (label_with_teacher, "teacher labels") if config.teacher else (label_decisions, "labelling")
    teacher = (config.teacher,) if config.teacher else ()  # (then job_options is empty: rollouts are the policy's)
    chunks, labelling_seconds = label_chunks(
        run_dir, manifest, config.init_from, label,
        lambda checkpoint, k, size: (checkpoint, rules, *teacher, config.seed * 100_000 + k, size, *job_options),
        resume=resume, workers=config.workers, ray_address=config.ray_address, progress=progress_bar,
        desc=f"{kind} ({fit.chunk} decisions a job)", shapes=shapes)
    objective = "imitate" if config.teacher else config.objective
    teacher_summary = {"teacher": config.teacher, "labelling_seconds": round(labelling_seconds, 1)} if config.teacher else {}
    return fit_and_evaluate(config.init_from, start, [*chunks, *extra_chunks], run_dir, objective=objective,
                            seed=config.seed, fit=fit, eval_matches=config.eval_matches, workers=config.workers,
                            progress_bar=progress_bar,
                            record={"improve_args": dataclasses.asdict(config), "fit_objective": objective},
                            summary_extra=teacher_summary)


def fit_and_evaluate(init_from: str, start: dict[str, Any], chunks: list[Path], run_dir: Path, *, objective: str,
                     seed: int, fit: FitSettings, eval_matches: int, workers: int, progress_bar: bool,
                     record: dict[str, Any], summary_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fit the labels of ``chunks`` from ``start`` (the checked payload of ``init_from``), write
    ``run_dir/fitted.pt`` (its metadata extended by ``record``), evaluate the start and the fitted
    policy against ``simple`` and write ``summary.json`` (with ``summary_extra`` added); the summary."""
    meta, rules = start["metadata"], start["metadata"]["rules"]
    data = load_labels(chunks, label_shapes(meta))
    size = data["q"].shape[0]
    order, held = torch.randperm(size), max(1, int(size * fit.validation_fraction))
    validation = {k: v[order[:held]] for k, v in data.items()}
    train_idx = order[held:]

    # ---- fitting, from the starting weights
    model = build_model(meta)
    model.load_state_dict(start["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=fit.learning_rate, eps=1e-5)
    with torch.no_grad():
        before = (fit_loss(model, validation, fit.q_scale, objective).item(), agreement(model, validation))
    # On held-out decisions, points of the fitted policy's choice minus the starting policy's, on the
    # same deal and continuation: an estimate of the one-step gain that needs no matches.
    start_points = chosen_points(model, validation)
    history = []
    for epoch in range(fit.epochs):
        shuffled = train_idx[torch.randperm(train_idx.shape[0])]
        losses = []
        for begin in tqdm(range(0, shuffled.shape[0], fit.minibatch_size), disable=not progress_bar,
                          desc=f"fitting epoch {epoch + 1}/{fit.epochs}", leave=False):
            batch = {k: v[shuffled[begin: begin + fit.minibatch_size]] for k, v in data.items()}
            loss = fit_loss(model, batch, fit.q_scale, objective)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            losses.append(loss.item())
        with torch.no_grad():
            gain = chosen_points(model, validation) - start_points
            history.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)),
                            "validation_loss": fit_loss(model, validation, fit.q_scale, objective).item(),
                            "validation_best_action_agreement": agreement(model, validation),
                            "validation_gain_points": float(gain.mean()),
                            "validation_gain_se": float(gain.std(correction=0) / gain.shape[0] ** 0.5)})
        print(describe_epoch(history[-1], fit.epochs), flush=True)
    fitted = run_dir / "fitted.pt"
    fitted_meta = {"rules": rules, "num_players": meta["num_players"], "improved_from": str(init_from),
                   **record, "labelled_decisions": int(size), "evaluation": {},
                   # plays as the start did (the labels are its network's own play: training.labelling)
                   **({"suit_symmetric": True} if metadata_value(meta, "suit_symmetric") else {})}
    save_checkpoint(fitted, model, fitted_meta)

    # ---- evaluation: start and fitted on the same mirrored matches
    summary = {"labelled_decisions": int(size), "validation_decisions": int(held),
               "validation_before": {"loss": before[0], "best_action_agreement": before[1]}, "fit": history}
    if eval_matches > 0:
        from okgin_env.evaluate import evaluate

        for name, path in (("start", init_from), ("fitted", str(fitted))):
            pair = evaluate({name: path, "simple": "simple"}, matches=eval_matches, seed=seed + 7,
                            rules=rules, num_players=meta["num_players"], workers=workers,
                            progress=progress_bar).pairs[0]
            summary[f"vs_simple_{name}"] = {"matches": pair.games, "wins": pair.wins_a, "win_rate": pair.win_rate_a,
                                            "ci95": [pair.ci_low, pair.ci_high],
                                            "points_per_round": pair.points_per_round_a}
            print(f"{name} vs simple: {describe_result(summary[f'vs_simple_{name}'])}", flush=True)
        # The fitted checkpoint carries its own evaluation (the starting policy's is stale).
        save_checkpoint(fitted, model, {**fitted_meta, "evaluation": summary["vs_simple_fitted"]})
    summary.update(summary_extra or {})
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def describe_epoch(row: dict[str, float], epochs: int) -> str:
    """One readable line for an epoch of the fit."""
    return (f"fit epoch {row['epoch']}/{epochs}: loss {row['train_loss']:.4f} (held out {row['validation_loss']:.4f}), "
            f"best action {100 * row['validation_best_action_agreement']:.1f}% of held-out decisions, "
            f"gain {row['validation_gain_points']:+.3f} ± {row['validation_gain_se']:.3f} points per decision")


def describe_result(result: dict[str, Any]) -> str:
    """One readable line for an evaluation against ``simple``."""
    low, high = result["ci95"]
    return (f"{100 * result['win_rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] of {result['matches']} matches, "
            f"{result['points_per_round']:+.2f} points per round")


# ----------------------------------------------------------------------------- command line


COMMAND = Command(PROG, __doc__, ImproveConfig, run, run_dir="runs/improve")
parse_args, main, cli = COMMAND.parse_args, COMMAND.main, COMMAND.cli


if __name__ == "__main__":
    sys.exit(cli())
