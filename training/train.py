"""Train a masked-action policy for Oklahoma Gin with PPO against the ``simple`` bot.

Read top to bottom: settings; the rollout buffers; the rollout (one ``collect_rollout`` over the
tables protocol that both engines implement: ``training.host_tables.HostTables`` on the host,
``training.tensor_rollout.TensorTables`` on a torch device); advantages; the update; ``run``, which
seeds everything and runs the loop. The run's files, its evaluation process and its signals are
``training.run``'s (outputs and stopping: docs/training.md); self-play snapshots are
``training.league``'s. Run ``python -m training.train --help``.

**Method** (why): a behaviour-cloning warm start copies a teacher (``--bc-teacher``, by default
``simple``) in a few updates, so PPO starts from a policy that finishes rounds instead of from
random play that almost never does (random rounds are 96-99% draws). PPO then improves on it
against the opponent pool (by default ``simple`` alone); a round pays the learner its zero-sum
points / 25 and is one GAE episode (gamma 1), inside full matches so the score inputs are
realistic. The learner steps every table with batched inference in the main process while a
second process evaluates (mirrored matches through ``okgin_env.evaluate``).

**Settings.** ``TrainConfig`` holds the flags; its ``hyper``, a ``Hyperparameters``, PPO's
constants, set from Python: ``run(TrainConfig(hyper=Hyperparameters(ppo_epochs=2)), "runs/x")``.
Experiments measured and not shipped are in docs/research/.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from okgin_env.observation import layout_for
from okgin_env.rules.config import MAX_PLAYERS, PRESETS, RulesConfig, make_config

from .cli import MAX_SEED, Command, check_settings, make_run_dir, seed_everything, setting
from .diagnostics import behaviour, explained_variance
from .features import MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES
from .host_tables import HostTables, Teacher
from .league import SELF, SnapshotPool, check_training_player, parse_pool, split_tables
from .manifest import write_manifest
from .model import NETWORKS, PolicyValueNet
from .policy import MAX_HIDDEN, build_model, load_checkpoint
from .run import Evaluator, RunBook, RunFiles, RunLog, StopSignals, check_width, starting_point
from .tensor_rollout import TensorTables, check_tensor_settings, resolve_device

LearnerTables = HostTables | TensorTables  # the tables protocol of collect_rollout (training.host_tables)

PROG = "python -m training.train"


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Hyperparameters:
    """PPO's constants (set from Python, not flags): those of the measured learning curve
    (``training.curve``). The shipped policies' recipes keep the constants they were trained
    with, ``RECIPE_HYPERPARAMETERS``."""

    rollout_length: int = setting(64, "learner decisions per table per update", low=1)
    bc_epochs: int = setting(8, "passes over each rollout while imitating", low=1)
    bc_learning_rate: float = setting(1e-3, "Adam learning rate while imitating", above=0)
    learning_rate: float = setting(3e-4, "Adam learning rate of PPO", above=0)
    final_learning_rate_fraction: float = setting(1.0, "PPO's learning rate falls linearly, as the run spends its "
                                                  "budget (decisions or minutes), to this fraction of learning_rate "
                                                  "(1: constant; CleanRL's anneal: 0)", low=0.0, high=1.0)
    ppo_epochs: int = setting(4, "passes over each rollout", low=1)
    minibatch_size: int = setting(2048, "transitions per gradient step", low=1)
    clip_coef: float = setting(0.2, "PPO ratio clip", above=0)
    entropy_coef: float = setting(0.003, "entropy bonus weight", low=0.0)
    value_coef: float = setting(0.5, "value loss weight", low=0.0)
    gae_lambda: float = setting(0.95, "GAE lambda (gamma is 1 within a round)", low=0.0, high=1.0)
    reward_scale: float = setting(25.0, "round points are divided by this", above=0)
    hidden: int = setting(192, "hidden width of the network", low=1, high=MAX_HIDDEN)
    eval_max_rounds: int = setting(50, "an evaluation match undecided after this many rounds is a draw "
                                       "(a policy that never knocks would play forever against random)", low=1)
    torch_threads: int = setting(1, "torch CPU threads in the learner (the evaluation has the other core)", low=1)


# The constants that trained the shipped policies (training.pipeline's recipes, okgin-exploit's
# measurement): smaller PPO steps (an approx-KL of about 0.001 an update).
RECIPE_HYPERPARAMETERS = Hyperparameters(learning_rate=1e-4, minibatch_size=1024)


@dataclass(frozen=True)
class TrainConfig:
    """What a PPO run trains: the command line's flags, and ``hyper`` from Python."""

    seed: int = setting(1, "seed for python, numpy, torch and the deals", low=0, high=MAX_SEED)
    rules: str = setting("classic", "rules preset the policy is trained for", choices=PRESETS)
    num_players: int = setting(0, "seats at the table (classic: 2; penalty: 2, 3 or 4); 0: the preset's own count",
                               low=0, high=MAX_PLAYERS)
    total_decisions: int = setting(3_000_000, "learner decisions to train for", low=1, budget=True)
    minutes: float = setting(0.0, "also stop after this many minutes of training, over every resume (0: no time "
                             "limit)", low=0.0, budget=True)
    num_tables: int = setting(128, "games stepped together (batched inference)", low=1)
    bc_updates: int = setting(15, "first updates imitate --bc-teacher (warm start)", low=0)
    bc_teacher: str = setting("simple", "the player imitated in the first --bc-updates, a player spec (simple, "
                              "lookahead, lookahead:hold_for_gin=0.06, a policy file); not a held-out bot, "
                              "and reproducible (no time_limit)")
    network: str = setting("suits", "the policy network (training.model): suits (suit-equivariant: each suit's cards "
                           "through one shared encoder; the measured learning curve's) or mlp (every shipped "
                           "policy's, the recipes')", choices=tuple(NETWORKS), absent="mlp")
    outlook_features: bool = setting(False, "the network also reads, per action, the chance to knock and to go gin "
                                     "after the next stock draw and the mean deadwood it leaves "
                                     "(okgin_env.features.outlook_features; the penalty recipe's)")
    init_from: str = setting("", "start the policy from this checkpoint's weights (skips imitation)")
    opponent_pool: str = setting("simple", "the other seats' players, SPEC@WEIGHT entries separated by spaces "
                                 "splitting the tables by weight: player specs (simple, search:rollouts=8, a "
                                 "policy file) and self (past snapshots of the learner), e.g. 'simple@3 self@1'")
    device: str = setting("", "run the stage on the tensor engine (okgin_env.tensor) on this torch device: the games, "
                          "the network's inputs, simple and the network on one device; auto: CUDA when available, "
                          "else the CPU; empty: the numpy engine on the host, as the shipped recipes",
                          choices=("", "auto", "cpu", "cuda"))
    episode: str = setting("match", "what one training game is: match (rounds to the preset's target score, so the score "
                           "inputs are realistic; the shipped recipes') or round (one hand, dealt afresh: OpenSpiel's "
                           "and RLCard's episode, for a hand player)", choices=("match", "round"))
    round_reward: str = setting("points", "what a round pays the learner: points (its zero-sum round points / "
                                "Hyperparameters.reward_scale, the shipped recipes') or win (+1 a round won, -1 lost, "
                                "0 drawn: single hands won, whatever their points)", choices=("points", "win"))
    eval_every: int = setting(10, "updates between evaluations (the first comes right after imitation)", low=1)
    eval_matches: int = setting(400, "matches per evaluation against simple (a tenth, at least 10, against random)",
                                low=1)
    hyper: Hyperparameters = setting(Hyperparameters(), "PPO's constants (from Python)")


def check_config(config: TrainConfig) -> RulesConfig:
    """The table's rules; a ``ValueError`` naming the first setting that cannot work (before anything is written)."""
    try:
        rules = make_config(config.rules, num_players=config.num_players or None)
    except ValueError as error:
        raise ValueError(f"--num-players {config.num_players}: {error}") from None
    check_training_player(config.bc_teacher, "--bc-teacher", rules)
    parse_pool(config.opponent_pool, rules)
    if config.device:
        check_tensor_settings(config)
    if config.init_from:  # the file, its seats, width and network: refused before the run folder is made
        check_width(config, load_checkpoint(config.init_from, num_players=rules.num_players), "--init-from")
    return rules


# ----------------------------------------------------------------------------- rollout buffers


@dataclass
class Rollout:
    """One update's learner decisions, as preallocated ``(T steps, N tables, ...)`` tensors
    (filled in place by every rollout)."""

    observations: torch.Tensor
    contexts: torch.Tensor
    action_features: torch.Tensor
    action_ids: torch.Tensor
    legal: torch.Tensor
    actions: torch.Tensor  # index into the decision's legal actions
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor  # round points / reward_scale, at the step that ended the round
    round_ends: torch.Tensor  # 1.0 where a round (one GAE episode) ended during the step
    round_points: float = 0.0  # the learner's raw points over the rounds that ended
    rounds: int = 0

    @classmethod
    def allocate(cls, steps: int, tables: int, observation_size: int,
                 num_action_features: int = NUM_ACTION_FEATURES, device: str | torch.device = "cpu") -> "Rollout":
        shape = (steps, tables)
        on = {"device": device}
        return cls(
            observations=torch.zeros(*shape, observation_size, **on),
            contexts=torch.zeros(*shape, NUM_CONTEXT_FEATURES, **on),
            action_features=torch.zeros(*shape, MAX_LEGAL_ACTIONS, num_action_features, **on),
            action_ids=torch.zeros(*shape, MAX_LEGAL_ACTIONS, dtype=torch.long, **on),
            legal=torch.zeros(*shape, MAX_LEGAL_ACTIONS, dtype=torch.bool, **on),
            actions=torch.zeros(shape, dtype=torch.long, **on),
            log_probs=torch.zeros(shape, **on),
            values=torch.zeros(shape, **on),
            rewards=torch.zeros(shape, **on),
            round_ends=torch.zeros(shape, **on),
        )

    def flat(self, name: str) -> torch.Tensor:
        """Buffer ``name`` with steps and tables merged into one batch dimension."""
        tensor = getattr(self, name)
        return tensor.reshape(-1, *tensor.shape[2:])


# ----------------------------------------------------------------------------- rollout


def collect_rollout(model: PolicyValueNet, tables: LearnerTables, rollout: Rollout, reward_scale: float,
                    imitate: bool = False) -> None:
    """Every table's learner decides T times: sampled from the policy, or (``imitate``) the
    teacher's choice; ``rollout.X[t, g]`` is table g's t-th decision and what followed it until its
    next one. ``tables`` is the host's (``HostTables``: every learner is to act after each step) or
    the device's (``TensorTables``: each step plays every game once, the learners' decisions in one
    forward pass over the games where they are to act). A table that has made its T decisions waits
    at its learner's next turn, where the bootstrap value is read and the next rollout starts.
    """
    steps, n = rollout.actions.shape
    made = torch.zeros(n, dtype=torch.int64, device=tables.device)  # decisions recorded per table
    everyone = torch.arange(n, device=tables.device)
    earned = torch.zeros(steps, n, dtype=torch.float64, device=tables.device)  # raw points, exact
    rollout.round_ends.zero_()
    while True:
        learner_turn = tables.learner_to_act()
        waiting = learner_turn & (made >= steps)
        if bool(waiting.all()):
            break
        deciding = (learner_turn & ~waiting).nonzero().squeeze(1)
        actions = tables.opponent_actions()
        if deciding.numel():
            inputs = tables.inputs(deciding)
            with torch.no_grad():
                logits, value = model(*inputs)
                distribution = torch.distributions.Categorical(logits=logits, validate_args=False)
                if imitate:
                    teacher = tables.teacher_actions(deciding)
                    match = (inputs[3] == teacher[:, None]) & inputs[4]
                    if not bool(match.any(1).all()):
                        raise ValueError(f"the imitation teacher chose an illegal action in table "
                                         f"{int(deciding[~match.any(1)][0])}")
                    chosen = match.long().argmax(1)
                else:
                    chosen = distribution.sample()
                log_prob = distribution.log_prob(chosen)
            actions[deciding] = inputs[3].gather(1, chosen[:, None]).squeeze(1)
            slot = made[deciding]
            for buffer, values in zip((rollout.observations, rollout.contexts, rollout.action_features,
                                       rollout.action_ids, rollout.legal, rollout.actions, rollout.log_probs,
                                       rollout.values), (*inputs, chosen, log_prob, value)):
                buffer[slot, deciding] = values
            made[deciding] += 1
        rewards, round_over = tables.step(actions, ~waiting)
        # What the step paid the learner and whether a round ended belong to its last decision.
        last = (made - 1).clamp(min=0)
        earned[last, everyone] += rewards
        rollout.round_ends[last, everyone] = torch.maximum(rollout.round_ends[last, everyone], round_over.float())
    ended = rollout.round_ends > 0
    rollout.round_points, rollout.rounds = float(earned[ended].sum()), int(ended.sum())
    rollout.rewards.copy_(earned / reward_scale)


def bootstrap_value(model: PolicyValueNet, tables: LearnerTables) -> torch.Tensor:
    """The value of each table's next decision (where the rollout stopped)."""
    with torch.no_grad():
        return model(*tables.inputs())[1]


# ----------------------------------------------------------------------------- advantages


def compute_advantages(rollout: Rollout, next_value: torch.Tensor, gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)``: GAE inside each round with gamma = 1, bootstrapped from the
    next decision's value where a round runs past the end of the rollout."""
    steps = rollout.rewards.shape[0]
    advantages = torch.zeros_like(rollout.rewards)
    running = torch.zeros(rollout.rewards.shape[1], device=rollout.rewards.device)
    for t in reversed(range(steps)):
        not_done = 1.0 - rollout.round_ends[t]
        following = next_value if t == steps - 1 else rollout.values[t + 1]
        delta = rollout.rewards[t] + following * not_done - rollout.values[t]
        running = delta + gae_lambda * not_done * running
        advantages[t] = running
    return advantages, advantages + rollout.values


# ----------------------------------------------------------------------------- update

INPUTS = ("observations", "contexts", "action_features", "action_ids", "legal")  # the policy's, in order


def ppo_learning_rate(hyper: Hyperparameters, budget_used: float) -> float:
    """The learning rate of a PPO update made when ``budget_used`` (0 to 1) of the run is spent."""
    return hyper.learning_rate * (1.0 - (1.0 - hyper.final_learning_rate_fraction) * budget_used)


def update_networks(model: PolicyValueNet, optimizer: torch.optim.Optimizer, rollout: Rollout,
                    advantages: torch.Tensor, returns: torch.Tensor, phase: str,
                    hyper: Hyperparameters, learning_rate: float | None = None) -> dict[str, float]:
    """Minibatch passes over one rollout; the means of the losses and diagnostics.

    ``phase`` ``"bc"``: cross-entropy towards the teacher's actions; ``"ppo"``: the clipped PPO
    objective with a value loss and an entropy bonus, at ``learning_rate`` (default: ``hyper``'s).
    """
    imitate = phase == "bc"
    inputs = [rollout.flat(name) for name in INPUTS]
    chosen, old_log_probs = rollout.flat("actions"), rollout.flat("log_probs")
    flat_advantages, flat_returns = advantages.reshape(-1), returns.reshape(-1)
    size = flat_advantages.shape[0]
    for group in optimizer.param_groups:
        group["lr"] = (hyper.bc_learning_rate if imitate else
                       hyper.learning_rate if learning_rate is None else learning_rate)
    stats: dict[str, list[float]] = {k: [] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")}
    for _ in range(hyper.bc_epochs if imitate else hyper.ppo_epochs):
        order = torch.randperm(size)
        for begin in range(0, size, hyper.minibatch_size):
            idx = order[begin: begin + hyper.minibatch_size].to(flat_advantages.device)  # (drawn on the CPU: same order on any device)
            # index_select: the same rows as x[idx], about 3.5x faster on a CPU for these buffers.
            logits, value = model(*(x.index_select(0, idx) for x in inputs))
            distribution = torch.distributions.Categorical(logits=logits)
            log_prob = distribution.log_prob(chosen.index_select(0, idx))
            entropy = distribution.entropy().mean()
            value_loss = 0.5 * (value - flat_returns.index_select(0, idx)).pow(2).mean()
            log_ratio = log_prob - old_log_probs.index_select(0, idx)
            ratio = log_ratio.exp()
            with torch.no_grad():  # diagnostics, as CleanRL: a KL estimate and the share of clipped ratios
                stats["approx_kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clipfrac"].append(float(((ratio - 1).abs() > hyper.clip_coef).float().mean()))
            if imitate:
                objective = -log_prob.mean()
                loss = objective + hyper.value_coef * value_loss
            else:
                adv = flat_advantages.index_select(0, idx)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                objective = torch.max(-adv * ratio, -adv * ratio.clamp(1 - hyper.clip_coef, 1 + hyper.clip_coef)).mean()
                loss = objective + hyper.value_coef * value_loss - hyper.entropy_coef * entropy
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            for key, value_ in (("policy_loss", objective.item()), ("value_loss", value_loss.item()),
                                ("entropy", entropy.item())):
                stats[key].append(value_)
    result = {key: float(np.mean(values)) for key, values in stats.items()}
    result["explained_variance"] = explained_variance(rollout.flat("values"), flat_returns)
    return result


# ----------------------------------------------------------------------------- run


def run(config: TrainConfig, run_dir: str | Path, *, resume: bool = False, progress_bar: bool = True,
        command: str | None = PROG) -> dict[str, Any]:
    """Train (see the module docstring) in ``run_dir``; the summary (also written to ``summary.json``).

    ``resume`` continues the run in ``run_dir`` (refused if its settings differ); ``command`` is
    the command line that started it, printed to say how to resume a stopped run (None: the caller says it).
    """
    check_settings(config)
    rules = check_config(config)
    hyper = config.hyper
    files = RunFiles(run_dir)
    make_run_dir(files.root)

    # Seeding: one block for every source of randomness.
    seed_everything(config.seed, hyper.torch_threads)
    table_rng = np.random.default_rng(config.seed)

    observation_size = layout_for(rules.num_players).size
    model = build_model({"observation_size": observation_size, "hidden": hyper.hidden, "network": config.network,
                         "outlook_features": config.outlook_features})
    # The tensor engine's device holds the network (and so the optimizer's state, also on a resume).
    device = resolve_device(config.device) if config.device else torch.device("cpu")
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=hyper.learning_rate, eps=1e-5)
    teacher = Teacher(config.bc_teacher, config.num_tables, config.seed, rules)
    metadata = {"rules": config.rules, "num_players": rules.num_players, "args": dataclasses.asdict(config)}
    progress, resumed = starting_point(config, files, model, optimizer, rules, resume)
    # Written once the resume is known to fit: a refused one leaves the run's config.json as it was.
    write_manifest(files.root, config)
    print(files.describe(), flush=True)
    if resumed:
        table_rng = np.random.default_rng([config.seed, progress.update])
    imitation_updates = 0 if config.init_from else config.bc_updates  # trained weights need no imitation

    # The learner plays one seat (alternating each match) of every table; the table's opponent from
    # the pool plays the others (self-play tables play simple until the first snapshot).
    table_opponents = split_tables(parse_pool(config.opponent_pool, rules), config.num_tables)
    snapshots = SnapshotPool([i for i, name in enumerate(table_opponents) if name == SELF], config.seed)
    if config.device:  # the tensor engine: tables, inputs, simple and the network on one device
        tables: LearnerTables = TensorTables(config.num_tables, device=device, learner_seat="alternate",
                                             rules=config.rules, episode=config.episode, reward="points")
    else:
        tables = HostTables(config.num_tables, ["simple" if name == SELF else name for name in table_opponents],
                            rules, config.episode, teacher, outlook=config.outlook_features)
    tables.reset(seed=int(table_rng.integers(2**31)))
    rollout = Rollout.allocate(hyper.rollout_length, config.num_tables, observation_size, model.num_action_features,
                               device=device)
    log = RunLog(files, fresh=not resumed)
    evaluator = Evaluator(config.eval_matches, config.seed, rules, hyper.eval_max_rounds)
    engine = (f"the tensor engine (okgin_env.tensor) on {device}" if config.device
              else "the numpy engine (okgin_env.vector) on the host")
    book = RunBook(files, config, metadata, progress, resumed, log, evaluator, imitation_updates, progress_bar,
                   engine=engine, rollout_length=hyper.rollout_length)

    with StopSignals() as stop:
        try:
            while book.training(progress, stop):
                phase = "bc" if progress.update < imitation_updates else "ppo"
                collect_rollout(model, tables, rollout, hyper.reward_scale, imitate=phase == "bc")
                next_value = bootstrap_value(model, tables)
                if config.round_reward == "win":  # a round pays the sign of its points: single hands won
                    rollout.rewards.sign_()
                advantages, returns = compute_advantages(rollout, next_value, hyper.gae_lambda)
                learning_rate = ppo_learning_rate(hyper, book.budget_used(progress))
                stats = {**update_networks(model, optimizer, rollout, advantages, returns, phase, hyper, learning_rate),
                         **behaviour(rollout)}
                progress.update += 1
                progress.decisions += book.decisions_per_update
                if phase == "ppo":
                    snapshots.after_update(model, rules.num_players, tables, progress.update)
                book.after_update(model, optimizer, progress, phase, stats, rollout.round_points / max(1, rollout.rounds))
            book.last_evaluation(model, progress, stop)
        except KeyboardInterrupt:  # a second signal: stop at once (last.pt holds the update before)
            pass
        finally:
            stop.ignore_further()  # the cleanup and the summary run to their end
            book.close(tables)
        return book.summary(progress, stop.signal_name, command)


# ----------------------------------------------------------------------------- command line


COMMAND = Command(PROG, __doc__, TrainConfig, run, run_dir="runs/ppo", says_how_to_resume=True)
parse_args, main, cli = COMMAND.parse_args, COMMAND.main, COMMAND.cli


if __name__ == "__main__":
    sys.exit(cli())
