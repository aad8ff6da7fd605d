"""Improve a trained policy by rollouts: ``python -m training.improve --init-from CHECKPOINT``.

Read top to bottom: arguments, labelling (worker processes), fitting, evaluation.

Method (why): PPO's advantages for one decision carry the noise of the whole rest of the round
(which cards come off the stock, what the opponent holds), and on this game that noise swamps the
small differences between good actions. Here every legal action of a decision is scored on the
same future instead:

1. **Labelling.** The policy (greedy) plays full matches against ``simple``. At each of its
   decisions with a choice, every legal action is tried on a copy of the *true* round state (the
   real stock order and opponent hand: training-time information the policy never sees), and the
   round is played out with the policy for its seat and ``simple`` for the other, with the same
   tie-break seed for every action (common random numbers). ``Q(action)`` = the learner's round
   points (``--label-reward own_penalty``, penalty tables: minus its own penalty points, leaving
   out the others' penalties). Actions are thus compared on the identical deal, so the differences are free of deal
   luck; what remains is the hidden information, which averages out below.
   (``--rollout-depth K`` stops each rollout at the learner's K-th choice and takes the value
   head's estimate there instead: faster, but measured worse, see docs/classic_policy.md.
   ``--label-top K`` labels only the K actions the policy scores highest, with the same labels.
   ``--rollout-player SPEC`` lets a bot play the learner's seat in the rollouts instead of the
   policy: the labels then value each action followed by that bot's play, so the step improves
   on the bot; with ``lookahead`` and ``--objective policy`` this is the penalty recipe's step.
   ``--label-opponent policy`` seats the policy itself, greedy, in the other seats of the labelling
   matches and of every rollout in place of ``simple``: self-play labels, each action valued
   against the policy's own replies; ``--label-opponent lookahead`` (any bot that may teach)
   seats that bot there instead, so that the labels value actions against another style.)
2. **Fitting**, from the starting weights. The hidden cards were drawn from their true
   distribution given the observation (real play), so what can be learned from the labels is
   ``E[Q | observation]``: the best action *given what the policy can see*, not the one that
   would be best with hindsight (taking the hindsight-best action as a target would be biased).
   ``--objective regress`` (the default) regresses the centred scores onto the centred labels
   / ``q_scale`` (greedy play then picks the highest estimated ``E[Q | observation]``);
   ``--objective policy`` maximises the expected label under the policy's softmax for all
   actions at once (an all-actions policy gradient: small, conservative steps from the starting
   policy). Either way, playing the best score is one step of policy iteration on the starting
   policy. (``--objective imitate`` is for a teacher's one-hot labels, ``training.distil``.)
   On held-out decisions the fit reports ``validation_gain_points``: the label of the fitted
   policy's choice minus that of the starting policy's, on the same deal and continuation (the
   performance-difference lemma makes the sum of these over a round the gain in points per round,
   to first order), with its standard error. ``--validation-split jobs`` holds out whole label
   chunks (other matches) rather than random decisions, whose neighbours in the same round, with
   the same hidden deal, may be among the fitted ones.
3. **Evaluation.** The starting and the fitted policy play the same mirrored full matches against
   ``simple`` through the evaluation library; both results go to ``summary.json``.

Labelling runs in worker processes (``--workers``) or on a Ray cluster (``--ray-address``, see
``training.workers``), one job per ``--chunk`` decisions, each written to
``labels_NNNN.npz`` as it finishes; ``--resume`` keeps the chunks an interrupted run of the same
arguments wrote. Within a job the rollouts run in lockstep with batched forward passes
(``training.labelling``, ``--labelling batched``, the default); ``--labelling single`` is the
one-rollout-at-a-time reference path. Both give the same labels.

Measured (see docs/classic_policy.md): the labels' noise left after centring is large (about 8
points per decision, for gains near 0.2), so a useful step needs a few hundred thousand labelled
decisions: the shipped policy's first two steps used 200,000 and 300,000 (about 20 min per 150,000 on
two cores), while fits on 72,000 and 150,000 made the policy worse.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from okgin_env.episode import seat_observation
from okgin_env.observation import encode
from okgin_env.rules.config import make_config

from .cli import parse_dataclass_args, seed_everything
from .features import MAX_LEGAL_ACTIONS
from .policy import build_model, decision_forward, encode_decision, load_checkpoint, load_policy, save_checkpoint, with_outlook_inputs, write_checkpoint
from .labelling import (
    LABEL_OPTIONS,
    LABEL_REWARDS,
    OUTCOME_KEYS,
    bot_action,
    check_label_opponent,
    check_rollout_player,
    checkpoint_file,
    finish_round,
    label_decisions_batched,
    label_opponent,
    label_value,
    labelled_columns,
    labelled_flags,
    labelling_config,
    learner_first,
    opponent_bot,
    outcome_arrays,
    play_learner_matches,
    record_inputs,
    rollout_bot,
    unpack_job,
    value_scale,
)
from .match_odds import FIT_TARGETS, MatchOdds
from .workers import require_ray, run_jobs


@dataclass
class Args:
    init_from: str = field(default="checkpoints/okgin_classic_ppo.pt", metadata={"help": "the policy to improve"})
    seed: int = field(default=1, metadata={"help": "seed for python, numpy, torch and the deals"})
    decisions: int = field(default=200_000, metadata={"help": "labelled decisions to collect (all workers)"})
    workers: int = field(default=2, metadata={"help": "labelling processes"})
    ray_address: str = field(default="", metadata={
        "help": "label on a Ray cluster at this address (HOST:PORT, auto, or local for a private instance "
                "with --workers CPUs; see training/workers.py) instead of local processes; same jobs, same labels"})
    chunk: int = field(default=2_000, metadata={"help": "decisions per labelling job (each has its own seed and file)"})
    objective: str = field(default="regress", metadata={
        "choices": ("regress", "policy", "imitate"),
        "help": "policy: raise the probability of actions above the policy's own mean label (all-actions "
                "policy gradient, small steps from the start); regress: regress scores onto the labels; "
                "imitate: cross-entropy towards each decision's highest label (a teacher's one-hot choice, "
                "training.distil)"})
    q_scale: float = field(default=2.0, metadata={
        "help": "round points (with --fit-target match: percentage points of match wins) per unit of action "
                "score (or of advantage)"})
    epochs: int = field(default=4, metadata={"help": "passes over the labelled decisions"})
    learning_rate: float = field(default=1e-4, metadata={"help": "Adam learning rate"})
    minibatch_size: int = field(default=512, metadata={"help": "decisions per gradient step"})
    validation_fraction: float = field(default=0.05, metadata={"help": "decisions held out to report the fit"})
    validation_split: str = field(default="decisions", metadata={
        "choices": ("decisions", "jobs"),
        "help": "decisions: hold out decisions at random (the shipped recipe's split); jobs: hold out whole "
                "label chunks (other matches), so that no held-out decision shares a deal with a fitted one"})
    eval_matches: int = field(default=1000, metadata={"help": "matches against simple for each of start and fitted"})
    run_dir: str = field(default="runs/improve", metadata={"help": "labels, checkpoints, summary"})
    reuse_labels: bool = field(default=False, metadata={"help": "fit on labels already in run_dir (skip labelling)"})
    resume: bool = field(default=False, metadata={
        "help": "keep the label chunks an interrupted run of the same arguments wrote and label only the rest"})
    labelling: str = field(default="batched", metadata={
        "choices": ("batched", "single"),
        "help": "batched: all rollouts of a job in lockstep with batched forward passes (training.labelling); "
                "single: one rollout at a time (the reference path); the same labels either way"})
    label_reward: str = field(default="points", metadata={
        "choices": LABEL_REWARDS,
        "help": "what a rollout's round is worth to the learner: points, the env's zero-sum round points; "
                "own_penalty (penalty preset only): minus its own penalty points, without the others' "
                "penalties, which add noise that depends little on the learner's action"})
    rollout_depth: int = field(default=0, metadata={
        "help": "0: play every rollout to the end of its round (the shipped recipe); K > 0: stop a rollout at "
                "the learner's K-th choice after the labelled one and label it with the value head's estimate "
                "there (fewer moves per label, less noise, the value head's bias; needs a PPO-trained --init-from "
                "and --label-reward points)"})
    label_top: int = field(default=0, metadata={
        "help": "0: label every legal action (the shipped recipe); K > 0: label only the K actions the policy "
                "scores highest (its greedy choice among them), so fewer rollouts per decision; the fit then "
                "compares those actions only"})
    rollout_player: str = field(default="policy", metadata={
        "help": "who plays the learner's seat in the labelling rollouts: policy, the policy being improved "
                "(the shipped recipe), or a bot spec (simple, lookahead, search:rollouts=16; not a held-out bot): "
                "each label then values the action followed by that bot's play, as the search bot's rollouts "
                "do with simple, and the rollouts run no network (simple: a label costs about half)"})
    add_outlook_features: bool = field(default=False, metadata={
        "help": "start from --init-from's policy in a network that also reads the next-draw outlook "
                "(new inputs with zero weights: the same play at first; written to run_dir/start_outlook.pt "
                "and labelled with), so that the fit can learn to use them"})
    fit_target: str = field(default="label", metadata={
        "choices": FIT_TARGETS,
        "help": "label: fit the labels as labelled (--label-reward); match: value each labelled action's round "
                "by the learner's chance to win the match after it, in percent (training.match_odds, fitted "
                "to the rounds the labelling matches played), so that a point counts more near the match's end"})
    label_opponent: str = field(default="simple", metadata={
        "help": "who plays the other seats in the labelling matches and rollouts: simple (the shipped recipes), "
                "policy, the policy being labelled (greedy self-play: actions valued against its own replies; "
                "needs --rollout-player policy), or a bot spec (lookahead, search:rollouts=16; not a held-out "
                "bot), one instance in every other seat"})
    extra_labels: str = field(default="", metadata={
        "help": "comma-separated run directories whose labels are added to the fit (after run_dir's own)"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})


#: Each labelling job option (``training.labelling.LABEL_OPTIONS``) and the argument that sets it
#: (also its name in ``labels.json``).
OPTION_ARGS = {"reward": "label_reward", "depth": "rollout_depth", "top": "label_top", "rollout": "rollout_player",
               "opponent": "label_opponent"}


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, argv, __doc__.splitlines()[0])


# ----------------------------------------------------------------------------- labelling (worker processes)


class _Player:
    """The policy being improved, acting on engine states through its observation."""

    def __init__(self, checkpoint: str, rules: str):
        self.config = labelling_config(checkpoint, rules)
        self.policy = load_policy(checkpoint, rules=self.config)

    def action(self, state, scores, seat: int) -> int:
        legal = state.legal_actions()
        if len(legal) == 1:
            return legal[0]
        return self.policy.act(seat_observation(state, scores, self.config.target_score, seat, to_act=True))

    def value(self, state, scores, seat: int) -> float:
        """The value head's output for ``seat``'s decision (in units of its PPO run's reward scale)."""
        observation = encode(state, scores, self.config.target_score, seat)
        encoded = encode_decision(observation, state.legal_mask(), self.config.num_players, self.policy.model.outlook)
        return decision_forward(self.policy.model, observation, encoded)[1]


def rollout_points(player: _Player, state, scores, learner: int, seed: int, reward: str = "points",
                   depth: int = 0, scale: float = 0.0, rollout_player: str = "policy",
                   opponent: str = "simple") -> tuple[float, list | None]:
    """Play ``state`` (a copy) to the end of the round: the policy for ``learner``, ``simple`` for
    the others with tie-breaks from ``seed`` (the policy, the ``opponent`` ``"policy"``; a bot
    ``opponent`` seeded with ``seed``, ``training.labelling.opponent_bot``); the
    learner's round points (``label_value``), and every seat's, the learner first (None where the
    rollout stopped early).
    ``depth > 0``: stop at the learner's ``depth``-th choice and return the value head's estimate
    there, times ``scale`` (``training.labelling.value_scale``). A ``rollout_player`` other than
    ``"policy"`` plays the learner's seat instead (``training.labelling.finish_round``)."""
    rng = random.Random(seed)
    other_bot = opponent_bot(opponent, seed, player.config)
    target = player.config.target_score
    if rollout_player != "policy":
        bot = rollout_bot(rollout_player, seed, player.config)
        finish_round(state, scores, learner, rng, bot, target, other_bot)
        return label_value(state.outcome, learner, reward), learner_first(state.outcome.points, learner)
    choices = 0
    while not state.is_over:
        if state.current == learner:
            if depth and len(state.legal_actions()) > 1:
                choices += 1
                if choices == depth:
                    return player.value(state, scores, learner) * scale, None
            state.apply_unchecked(player.action(state, scores, learner))
        elif opponent == "policy":
            state.apply_unchecked(player.action(state, scores, state.current))
        else:
            state.apply_unchecked(bot_action(other_bot, state, scores, state.current, target, rng))
    return label_value(state.outcome, learner, reward), learner_first(state.outcome.points, learner)


def label_decisions(job: tuple[str, str, int, int]) -> dict[str, np.ndarray]:
    """One worker: play matches and label ``count`` decisions; return their arrays (the driver saves them).

    The matches run in ``okgin_env.match_loop.play_match``: the policy (greedy) in one seat,
    alternating from match to match, ``simple`` (or the policy itself: ``job.opponent``) in the
    others; each of the policy's decisions with a choice is labelled before it acts (``Q`` of
    every legal action on the true state).
    One generator, seeded with ``seed``, gives the simple bot's tie-breaks and each label's
    continuation seed, in the order the decisions come: the same job gives the same labels.
    """
    job = unpack_job(job)
    torch.set_num_threads(1)
    checkpoint = checkpoint_file(job.checkpoint)
    scale = value_scale(checkpoint) if job.depth else 0.0
    player = _Player(checkpoint, job.rules)
    check_rollout_player(job.rollout, player.config)
    check_label_opponent(job.opponent, player.config)
    rng = random.Random(job.seed)
    opponent = label_opponent(job.opponent, player.policy, rng, player.config)  # simple shares rng (see the docstring)
    records: dict[str, list] = {k: [] for k in ("obs", "ctx", "feat", "ids", "legal", "q", "labelled")}
    scores_seen, round_points, rounds = [], [], []
    num_players = player.config.num_players

    def label(match, learner: int, observation: dict[str, np.ndarray], encoded: tuple) -> None:
        """Label the learner's decision before it acts: ``Q`` of every legal action (or of the
        policy's ``top`` choices), on the same future."""
        tie_seed = rng.getrandbits(32)
        q = np.zeros(MAX_LEGAL_ACTIONS, dtype=np.float32)
        points = np.full((MAX_LEGAL_ACTIONS, num_players), -1, dtype=np.int16)
        columns = labelled_columns(player.policy.model, observation["observation"], encoded, job.top)
        for i in columns:
            trial = match.round.clone()
            trial.apply_unchecked(encoded[-1][i])
            q[i], seat_points = rollout_points(player, trial, match.scores, learner, tie_seed, job.reward,
                                               job.depth, scale, job.rollout, job.opponent)
            if seat_points is not None:
                points[i] = seat_points
        record_inputs(records, observation, encoded)
        records["q"].append(q)
        records["labelled"].append(labelled_flags(columns))
        scores_seen.append(learner_first(match.scores, learner))
        round_points.append(points)

    play_learner_matches(player.config, player.policy, opponent, job.seed, job.count, label,
                         on_round=lambda seat, outcome: rounds.append(learner_first(outcome.points, seat)))
    if not job.top:
        del records["labelled"]  # every legal action is labelled
    return {**{k: np.stack(v) for k, v in records.items()},
            **outcome_arrays(scores_seen, np.stack(round_points), rounds, num_players)}


def chunk_path(run_dir: Path, k: int) -> Path:
    return run_dir / f"labels_{k:04d}.npz"


def chunk_sizes(decisions: int, chunk: int) -> list[int]:
    """Decisions per labelling job: ``chunk`` each, the last one the rest."""
    return [min(chunk, decisions - begin) for begin in range(0, decisions, chunk)]


def label_chunks(run_dir: Path, manifest: dict, init_from: str, label, job_for, *, resume: bool, workers: int,
                 ray_address: str, progress: bool, desc: str) -> tuple[list[Path], float]:
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
    done = finished_chunks(run_dir, manifest, sizes) if resume else {}
    for old in run_dir.glob("labels_*.npz"):
        if old not in done.values():
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
    if start.startswith("sha256:") or not Path(start).is_file():
        return False
    return {**old, "init_from": checkpoint_identity(start)} == new


def finished_chunks(run_dir: Path, manifest: dict, sizes: list[int]) -> dict[int, Path]:
    """The label chunks an earlier run with the same ``manifest`` finished: ``{job index: path}``.

    Chunks of another run (other start, rules, seed or sizes) are not kept: their labels would not
    be the ones this run asks for (a line says how many are dropped)."""
    manifest_path = run_dir / "labels.json"
    if not manifest_path.exists():
        return {}
    old = json.loads(manifest_path.read_text())
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
            with np.load(path) as chunk:
                if chunk["q"].shape[0] == size:
                    done[k] = path
    return done


# ----------------------------------------------------------------------------- fitting


def centred(values: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``values`` minus their mean over the legal entries of each row (illegal entries -> 0)."""
    values = values.masked_fill(~legal, 0.0)
    mean = values.sum(-1, keepdim=True) / legal.sum(-1, keepdim=True)
    return (values - mean).masked_fill(~legal, 0.0)


def held_out_chunks(own_chunks: int, fraction: float) -> int:
    """How many of a run's own label chunks ``--validation-split jobs`` holds out (at least one, and
    at least one left to fit); a ValueError if the run has too few."""
    held = max(1, round(own_chunks * fraction))
    if held >= own_chunks:
        raise ValueError(f"--validation-split jobs holds out whole label chunks and needs more than {held} of "
                         f"the run's own; it has {own_chunks} (give a smaller --chunk or more --decisions)")
    return held


def validation_order(lengths: list[int], own_chunks: int, fraction: float, split: str) -> tuple[torch.Tensor, int]:
    """``(order, held)``: a permutation of all decisions whose first ``held`` are the validation set.

    ``lengths`` are the decisions per chunk, the run's own ``own_chunks`` first, then those of
    ``--extra-labels``. ``"decisions"``: ``held`` random decisions (``fraction`` of all; the shipped
    recipe's split). ``"jobs"``: the last of the run's own chunks, whole. Decisions of one round
    share its hidden deal, so a random split leaves held-out decisions beside fitted ones of the
    same deal; whole chunks are other matches. (Extra runs may repeat this run's deals, so they
    are never held out.)
    """
    size = sum(lengths)
    if split == "decisions":
        return torch.randperm(size), max(1, int(size * fraction))
    held_chunks = held_out_chunks(own_chunks, fraction)
    begin = sum(lengths[:own_chunks - held_chunks])
    end = sum(lengths[:own_chunks])
    rest = torch.cat([torch.arange(0, begin), torch.arange(end, size)])
    return torch.cat([torch.arange(begin, end), rest[torch.randperm(rest.shape[0])]]), end - begin


def labelled(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The slots whose labels the fit compares: every legal action, or those a ``--label-top`` run labelled."""
    return batch["labelled"] if "labelled" in batch else batch["legal"]


def fit_loss(model, batch: dict[str, torch.Tensor], q_scale: float, objective: str = "regress") -> torch.Tensor:
    logits, _ = model(batch["obs"], batch["ctx"], batch["feat"], batch["ids"], batch["legal"])
    compared = labelled(batch)
    if objective == "imitate":
        # The labels are a teacher's choice, one-hot (training.distil): learn to play it.
        return torch.nn.functional.cross_entropy(logits, batch["q"].masked_fill(~compared, float("-inf")).argmax(-1))
    if objective == "policy":
        # Expected label under the policy, for every action at once (no sampling noise), relative
        # to the labels' mean so that the loss is comparable across decisions.
        probabilities = torch.softmax(logits, dim=-1)
        advantages = centred(batch["q"] / q_scale, compared)
        return -(probabilities * advantages).sum(-1).mean()
    scores = centred(logits.masked_fill(~compared, 0.0), compared)
    targets = centred(batch["q"] / q_scale, compared)
    return ((scores - targets) ** 2).sum() / compared.sum()


def match_labels(parts: list, chunks: list[Path], data: dict[str, torch.Tensor], config,
                 seed: int) -> tuple[torch.Tensor, dict]:
    """``--fit-target match``: every labelled action's label replaced by the learner's chance (in
    percent) to win the match after its rollout's round (``training.match_odds.MatchOdds``, fitted
    with ``seed`` to the rounds the chunks' matches played). Chunks written before the labelling
    recorded rounds, or whose rollouts stopped early (a rollout depth), are refused."""
    for part, path in zip(parts, chunks):
        missing = [key for key in OUTCOME_KEYS if key not in part.files]
        if missing:
            raise ValueError(f"--fit-target match needs the rounds' points, which {path} does not record "
                             f"({', '.join(missing)} missing: labelled before they were); label again")
    points = torch.from_numpy(np.concatenate([part["round_points"] for part in parts])).long()
    scores = torch.from_numpy(np.concatenate([part["scores"] for part in parts])).long()
    compared = labelled(data)
    if bool((points[compared] < 0).any()):
        raise ValueError("--fit-target match needs whole rounds: these labels stopped rollouts early (--rollout-depth)")
    rounds = np.concatenate([part["rounds"] for part in parts])
    odds = MatchOdds.fit(config, rounds, seed)
    after = (scores[:, None, :] + points)[compared]  # (the labelled slots only: a fraction of D x 24)
    chance = torch.from_numpy(100.0 * odds.win_chance(after.numpy())).float()
    q = torch.zeros(compared.shape)
    q[compared] = chance
    start = torch.from_numpy(100.0 * odds.win_chance(scores.numpy())).float()
    spread = chance - start[:, None].expand(compared.shape)[compared]
    return q, {"match_odds_rounds": int(len(rounds)), "match_odds_start_mean": float(start.mean()),
               "match_label_change_mean_abs": float(spread.abs().mean())}


def _choices(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(B, 1)``: each decision's highest-scored labelled action (every legal one is, unless ``--label-top``)."""
    with torch.no_grad():
        logits, _ = model(batch["obs"], batch["ctx"], batch["feat"], batch["ids"], batch["legal"])
    return logits.masked_fill(~labelled(batch), float("-inf")).argmax(-1, keepdim=True)


def chosen_points(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The label (round points) of the action each decision's highest score picks (among the
    labelled actions: with ``--label-top`` a choice outside them has no label to read)."""
    return batch["q"].gather(-1, _choices(model, batch)).squeeze(-1)


def agreement(model, batch: dict[str, torch.Tensor]) -> float:
    """Fraction of decisions whose highest score (among the labelled actions) has the highest label."""
    best_q = batch["q"].masked_fill(~labelled(batch), -1e9).max(-1, keepdim=True).values
    return float((batch["q"].gather(-1, _choices(model, batch)) >= best_q).float().mean())


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    for name in ("decisions", "workers", "chunk", "minibatch_size"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if not 0 < args.validation_fraction < 1 or args.q_scale <= 0 or args.epochs < 0:
        raise ValueError("need 0 < --validation-fraction < 1, --q-scale > 0 and --epochs >= 0; got "
                         f"{args.validation_fraction}, {args.q_scale} and {args.epochs}")
    if args.ray_address and not args.reuse_labels:
        require_ray(args.ray_address)  # before anything is written
    start = load_checkpoint(args.init_from)
    if args.label_reward == "own_penalty" and start["metadata"]["rules"] != "penalty":
        raise ValueError(f"--label-reward own_penalty needs a penalty checkpoint; {args.init_from} plays "
                         f"{start['metadata']['rules']!r}")
    if args.rollout_depth < 0:
        raise ValueError(f"--rollout-depth must be 0 (whole rounds) or positive, got {args.rollout_depth}")
    if args.label_top < 0 or args.label_top == 1:
        raise ValueError(f"--label-top must be 0 (every legal action) or at least 2 (one labelled action leaves "
                         f"nothing to compare), got {args.label_top}")
    # The labelling jobs' options that differ from the defaults (they join the manifest and the
    # jobs only then, so that the chunks of runs made before the options still resume).
    options = {key: getattr(args, name) for key, name in OPTION_ARGS.items()
               if getattr(args, name) != LABEL_OPTIONS[key]}
    if not args.reuse_labels:
        # (the table labelling_config would give, from the start already loaded)
        table = make_config(start["metadata"]["rules"], num_players=start["metadata"]["num_players"])
        check_rollout_player(args.rollout_player, table)
        check_label_opponent(args.label_opponent, table)
        # The options together, as a job checks them (a rollout depth with own_penalty or with a
        # bot in the learner's seat, the label opponent policy with a bot there, are refused).
        unpack_job(("", "", 0, 0, options))
        if args.rollout_depth:
            value_scale(args.init_from)  # refuses a file whose value head was not trained
    if args.add_outlook_features:
        start = with_outlook_inputs(start)  # refuses a network that already reads them
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)

    # Seeding: one block for every source of randomness.
    seed_everything(args.seed, torch_threads=1)

    if args.add_outlook_features:
        widened = run_dir / "start_outlook.pt"
        write_checkpoint(widened, {k: v for k, v in start.items() if k in ("format", "model", "metadata")})
        args = dataclasses.replace(args, init_from=str(widened))
    meta = start["metadata"]
    rules = meta["rules"]

    # ---- labelling
    chunks = sorted(run_dir.glob("labels_*.npz"))
    if not (args.reuse_labels and chunks):
        sizes = chunk_sizes(args.decisions, args.chunk)
        if args.validation_split == "jobs":
            held_out_chunks(len(sizes), args.validation_fraction)  # refused before any labelling
        # What the chunks are labels of: a resumed run keeps them only if it would label the same.
        manifest = {"init_from": checkpoint_identity(args.init_from), "rules": rules, "seed": args.seed, "sizes": sizes}
        manifest.update({OPTION_ARGS[key]: value for key, value in options.items()})
        job_options = (options,) if options else ()
        label = label_decisions_batched if args.labelling == "batched" else label_decisions
        chunks, _ = label_chunks(run_dir, manifest, args.init_from, label,
                                 lambda checkpoint, k, size: (checkpoint, rules, args.seed * 100_000 + k, size, *job_options),
                                 resume=args.resume, workers=args.workers, ray_address=args.ray_address,
                                 progress=args.progress, desc=f"labelling ({args.chunk} decisions a job)")
    own_chunks = len(chunks)
    for extra in filter(None, args.extra_labels.split(",")):
        found = sorted(Path(extra).glob("labels_*.npz"))
        if not found:
            raise FileNotFoundError(f"--extra-labels {extra}: no labels_*.npz there")
        chunks = [*chunks, *found]
    parts = [np.load(p) for p in chunks]
    keys = set().union(*(part.files for part in parts)) - set(OUTCOME_KEYS)  # the arrays by decision

    def chunk_array(part, key: str) -> np.ndarray:
        # Chunks of a --label-top run carry which slots they labelled; in any other chunk every legal one is.
        return part["legal"] if key == "labelled" and key not in part.files else part[key]

    data = {k: torch.from_numpy(np.concatenate([chunk_array(p, k) for p in parts])) for k in keys}
    size = data["q"].shape[0]
    odds_record = {}
    if args.fit_target == "match":
        config = make_config(rules, num_players=meta["num_players"])
        data["q"], odds_record = match_labels(parts, chunks, data, config, args.seed)
        print("match labels:", json.dumps(odds_record))
    order, held = validation_order([part["q"].shape[0] for part in parts], own_chunks, args.validation_fraction,
                                   args.validation_split)
    validation = {k: v[order[:held]] for k, v in data.items()}
    train_idx = order[held:]

    # ---- fitting, from the starting weights
    model = build_model(meta)
    model.load_state_dict(start["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    with torch.no_grad():
        before = (fit_loss(model, validation, args.q_scale, args.objective).item(), agreement(model, validation))
    # On held-out decisions, points of the fitted policy's choice minus the starting policy's, on the
    # same deal and continuation: an estimate of the one-step gain that needs no matches.
    start_points = chosen_points(model, validation)
    history = []
    for epoch in range(args.epochs):
        shuffled = train_idx[torch.randperm(train_idx.shape[0])]
        losses = []
        for begin in tqdm(range(0, shuffled.shape[0], args.minibatch_size), disable=not args.progress,
                          desc=f"fitting epoch {epoch + 1}/{args.epochs}", leave=False):
            batch = {k: v[shuffled[begin: begin + args.minibatch_size]] for k, v in data.items()}
            loss = fit_loss(model, batch, args.q_scale, args.objective)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            losses.append(loss.item())
        with torch.no_grad():
            gain = chosen_points(model, validation) - start_points
            history.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)),
                            "validation_loss": fit_loss(model, validation, args.q_scale, args.objective).item(),
                            "validation_best_action_agreement": agreement(model, validation),
                            "validation_gain_points": float(gain.mean()),
                            "validation_gain_se": float(gain.std(correction=0) / gain.shape[0] ** 0.5)})
        print(json.dumps(history[-1]))
    fitted = run_dir / "fitted.pt"
    fitted_meta = {"rules": rules, "num_players": meta["num_players"], "improved_from": str(args.init_from),
                   "improve_args": dataclasses.asdict(args), "labelled_decisions": int(size), "evaluation": {}}
    save_checkpoint(fitted, model, fitted_meta)

    # ---- evaluation: start and fitted on the same mirrored matches
    summary = {"labelled_decisions": int(size), "fit_target": args.fit_target, **odds_record,
               "validation_split": args.validation_split, "validation_decisions": int(held),
               "validation_before": {"loss": before[0], "best_action_agreement": before[1]}, "fit": history}
    if args.eval_matches > 0:
        from okgin_env.evaluate import evaluate

        for name, path in (("start", args.init_from), ("fitted", str(fitted))):
            pair = evaluate({name: path, "simple": "simple"}, matches=args.eval_matches, seed=args.seed + 7,
                            rules=rules, num_players=meta["num_players"], workers=args.workers,
                            progress=args.progress).pairs[0]
            summary[f"vs_simple_{name}"] = {"matches": pair.games, "wins": pair.wins_a, "win_rate": pair.win_rate_a,
                                            "ci95": [pair.ci_low, pair.ci_high],
                                            "points_per_round": pair.points_per_round_a}
            print(name, "vs simple:", json.dumps(summary[f"vs_simple_{name}"]))
        # The fitted checkpoint carries its own evaluation (the starting policy's is stale).
        save_checkpoint(fitted, model, {**fitted_meta, "evaluation": summary["vs_simple_fitted"]})
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def cli(argv: list[str] | None = None) -> int:
    """``python -m training.improve``: exit 2 with a message on bad arguments, checkpoints or a
    Ray address without Ray."""
    try:
        main(argv)
    except (ValueError, ImportError, FileNotFoundError) as error:  # CheckpointError is a ValueError
        print(f"python -m training.improve: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli())
