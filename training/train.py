"""Train a masked-action policy for Oklahoma Gin with PPO against the ``simple`` bot.

Read top to bottom: arguments; the networks, the learner's tables and the rollout buffers; the
rollout; advantages; the update; ``main``, which seeds everything and runs the loop (the
evaluation process, the run's files and log and the signal handling are in ``training.run``).
Run ``python -m training.train --help``.

**Outputs**, all in ``--run-dir`` (default ``runs/ppo``; printed at the start):

- ``last.pt``: the policy, optimizer states and progress after every update; ``--resume``
  continues from it (same seed and options);
- ``best.pt``: the checkpoint with the best evaluation against ``simple`` (its result in its
  metadata), a policy for ``training.load_policy`` and ``okgin-eval``;
- ``progress.csv``: one row per update (phase, losses, diagnostics, the evaluation that finished
  during it), and a row of phase ``evaluation`` for one that finished after the last update;
- ``tensorboard/``: ``losses/`` (policy_loss, value_loss, entropy, approx_kl, clipfrac,
  explained_variance, critic_loss) and ``charts/`` (training points per round, decisions per
  second, learning rate, evaluation win rates); ``tensorboard --logdir RUN_DIR/tensorboard``;
- ``learning_curve.png``: the evaluations' win rates against wall time, written at the end
  (``python -m training.plot RUN_DIR`` redraws it at any time);
- ``summary.json``: what the run did (decisions, updates, best and last evaluation, how it ended).

**Stopping.** Ctrl-C (SIGINT) or SIGTERM finishes the current update, saves ``last.pt``,
stops the evaluation process, removes unevaluated ``candidate_*.pt`` files and writes the plot and
the summary; a second signal stops at once (``last.pt`` then holds the update before). Either
way the run continues with ``--resume``.

**Method** (why): a behaviour-cloning warm start copies a teacher bot (``--bc-teacher``, by
default ``simple``; the penalty tables' recipe uses ``lookahead``) in a few updates, so PPO
starts from a policy that already finishes rounds instead of from random play that almost never
does (random rounds are 96-99% draws). PPO then improves on it against ``simple`` itself, with
rewards = the learner's zero-sum round points / 25, one round = one GAE episode (gamma 1),
inside full matches (so the score inputs are realistic). Both cores: the learner steps all
tables and runs batched inference in the main process while evaluation (mirrored full matches
through ``okgin_env.evaluate``) runs in a second process.

At penalty tables ``--reward own_penalty`` trains on minus the learner's own penalty points per
round instead of the zero-sum reward (less noise; measured: no better play, see
docs/penalty_policies.md). ``--outlook-features`` gives the network three more inputs per action, what
the next stock draw promises (``okgin_env.features.outlook_features``).

Optionally (``--privileged-critic``) advantages come from a training-only
value network that also sees the opponent's hand and the next stock cards (``privileged_features``).
It predicts a round's points far better than the observation alone (squared error 0.09 against
0.15 for the policy's own value head, in (points/25)^2), and a baseline that depends on hidden
state but not on the action keeps the policy gradient unbiased. The policy sees the observation
alone. Measured so far: 1.5M decisions of fine-tuning the PPO policy with it moved no
400-match evaluation outside noise (48-57%), so it is off by default and the defaults stay the
recipe of the shipped PPO policy. ``--init-from`` fine-tunes a trained policy (no
imitation; the critic, if any, warms up first).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from okgin_env.observation import layout_for
from okgin_env.opponents import make_opponent
from okgin_env.players import make_player
from okgin_env.rules.config import PRESETS, RulesConfig, make_config
from okgin_env.vector import VectorGymEnv

from .cli import parse_dataclass_args, seed_everything
from .features import MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES, NUM_PRIVILEGED_FEATURES, privileged_features
from .league import SELF, PrioritizedSampler, SnapshotPool, check_training_player, parse_pool, split_tables, table_results
from .model import PolicyValueNet, PrivilegedCritic
from .plot import plot_progress
from .policy import MAX_HIDDEN, CheckpointError, build_model, encode_batch, load_checkpoint, save_checkpoint, write_checkpoint
from .run import Evaluator, Progress, RunFiles, RunLog, StopSignals, format_evaluation

PROG = "python -m training.train"
REWARDS = ("points", "own_penalty")


@dataclass
class Args:
    seed: int = field(default=1, metadata={"help": "seed for python, numpy, torch and the deals"})
    rules: str = field(default="classic", metadata={"help": "rules preset the policy is trained for", "choices": PRESETS})
    num_players: int = field(default=0, metadata={
        "help": "seats at the table (classic: 2; penalty: 2, 3 or 4); 0: the preset's own count"})
    total_decisions: int = field(default=3_000_000, metadata={"help": "learner decisions to train for"})
    num_tables: int = field(default=128, metadata={"help": "games stepped together (batched inference)"})
    rollout_length: int = field(default=64, metadata={"help": "learner decisions per table per update"})
    bc_updates: int = field(default=15, metadata={"help": "first updates imitate --bc-teacher (warm start)"})
    bc_teacher: str = field(default="simple", metadata={
        "help": "the player imitated in the first --bc-updates, a player spec (simple, lookahead, "
                "lookahead:hold_for_gin=0.06, a policy file); not a held-out bot, and reproducible (no time_limit)"})
    bc_epochs: int = field(default=8, metadata={"help": "passes over each rollout while imitating"})
    bc_learning_rate: float = field(default=1e-3, metadata={"help": "Adam learning rate while imitating"})
    learning_rate: float = field(default=1e-4, metadata={"help": "Adam learning rate"})
    ppo_epochs: int = field(default=4, metadata={"help": "passes over each rollout"})
    minibatch_size: int = field(default=1024, metadata={"help": "transitions per gradient step"})
    clip_coef: float = field(default=0.2, metadata={"help": "PPO ratio clip"})
    entropy_coef: float = field(default=0.003, metadata={"help": "entropy bonus weight"})
    value_coef: float = field(default=0.5, metadata={"help": "value loss weight"})
    gae_lambda: float = field(default=0.95, metadata={"help": "GAE lambda (gamma is 1 within a round)"})
    reward_scale: float = field(default=25.0, metadata={"help": "round points are divided by this"})
    reward: str = field(default="points", metadata={
        "choices": REWARDS,
        "help": "points: the env's zero-sum round points (penalty: the mean of the others' penalties minus "
                "one's own); own_penalty (penalty preset only): minus the learner's own penalty points, "
                "without the others' penalties, which mostly depend on hands it cannot see or change"})
    hidden: int = field(default=192, metadata={"help": "hidden width of the network"})
    outlook_features: bool = field(default=False, metadata={
        "help": "the network also reads, per action, the chance to knock and to go gin after the next "
                "stock draw and the mean deadwood it leaves (okgin_env.features.outlook_features)"})
    init_from: str = field(default="", metadata={"help": "start the policy from this checkpoint's weights (skips imitation)"})
    privileged_critic: bool = field(default=False, metadata={
        "help": "advantages from a training-only critic that also sees hidden cards (the policy never does)"})
    critic_hidden: int = field(default=256, metadata={"help": "hidden width of the privileged critic"})
    critic_learning_rate: float = field(default=3e-4, metadata={"help": "Adam learning rate of the privileged critic"})
    critic_warmup_updates: int = field(default=5, metadata={
        "help": "updates that train only the privileged critic before the policy moves (after imitation or --init-from)"})
    opponent_pool: str = field(default="simple", metadata={
        "help": "the other seats' players, SPEC@WEIGHT entries separated by spaces splitting the tables by "
                "weight: player specs (simple, search:rollouts=8, a policy file) and self (past snapshots of "
                "the learner), e.g. 'simple@3 self@1'; see training.league"})
    pool_sampling: str = field(default="fixed", metadata={
        "choices": ("fixed", "prioritized"),
        "help": "fixed: the pool's weights split the tables; prioritized: every --reweight-every updates the "
                "tables are re-split towards the opponents the learner beats least (training.league)"})
    reweight_every: int = field(default=10, metadata={"help": "updates between re-splits with --pool-sampling prioritized"})
    snapshot_every: int = field(default=10, metadata={"help": "updates between self-play snapshots (after imitation)"})
    snapshot_capacity: int = field(default=8, metadata={"help": "past snapshots kept for self-play"})
    snapshot_players: int = field(default=4, metadata={"help": "snapshots in play at once (each on a share of the self-play tables)"})
    eval_every: int = field(default=10, metadata={"help": "updates between evaluations"})
    eval_matches: int = field(default=400, metadata={"help": "matches per evaluation against simple (a tenth, at least 10, against random)"})
    eval_max_rounds: int = field(default=50, metadata={
        "help": "an evaluation match still undecided after this many rounds counts as a draw (a policy that "
                "never knocks would play forever against random)"})
    run_dir: str = field(default="runs/ppo", metadata={"help": "checkpoints, CSV, TensorBoard logs, plot"})
    resume: bool = field(default=False, metadata={"help": "continue from run_dir/last.pt"})
    torch_threads: int = field(default=1, metadata={"help": "torch CPU threads in the learner"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, argv, __doc__.splitlines()[0])


def check_args(args: Args) -> None:
    """A ``ValueError`` naming the first argument out of its range (before anything is written)."""
    at_least = {"total_decisions": 1, "num_tables": 1, "rollout_length": 1, "bc_updates": 0, "bc_epochs": 1,
                "ppo_epochs": 1, "minibatch_size": 1, "critic_hidden": 1, "critic_warmup_updates": 0,
                "eval_every": 1, "eval_matches": 1, "eval_max_rounds": 1, "torch_threads": 1,
                "snapshot_every": 1, "snapshot_capacity": 1, "snapshot_players": 1, "reweight_every": 1}
    for name, low in at_least.items():
        if getattr(args, name) < low:
            raise ValueError(f"--{name.replace('_', '-')} must be at least {low}, got {getattr(args, name)}")
    if not 1 <= args.hidden <= MAX_HIDDEN:
        raise ValueError(f"--hidden must be in 1..{MAX_HIDDEN}, got {args.hidden}")
    for name in ("bc_learning_rate", "learning_rate", "critic_learning_rate", "clip_coef", "reward_scale"):
        if not getattr(args, name) > 0 or not math.isfinite(getattr(args, name)):
            raise ValueError(f"--{name.replace('_', '-')} must be a positive number, got {getattr(args, name)}")
    for name in ("entropy_coef", "value_coef"):
        if not getattr(args, name) >= 0 or not math.isfinite(getattr(args, name)):
            raise ValueError(f"--{name.replace('_', '-')} must be a number >= 0, got {getattr(args, name)}")
    if not 0 <= args.gae_lambda <= 1:
        raise ValueError(f"--gae-lambda must be in [0, 1], got {args.gae_lambda}")
    if args.rules not in PRESETS:
        raise ValueError(f"--rules {args.rules!r}; allowed: {', '.join(PRESETS)}")
    try:
        config = make_config(args.rules, num_players=args.num_players or None)
    except ValueError as error:
        raise ValueError(f"--num-players {args.num_players}: {error}") from None
    check_training_player(args.bc_teacher, "--bc-teacher", config)
    parse_pool(args.opponent_pool, config)
    if args.reward not in REWARDS:
        raise ValueError(f"--reward {args.reward!r}; allowed: {', '.join(REWARDS)}")
    if args.reward == "own_penalty" and args.rules != "penalty":
        raise ValueError("--reward own_penalty needs --rules penalty (classic rounds score points, not penalties)")
    if args.pool_sampling not in ("fixed", "prioritized"):
        raise ValueError(f"--pool-sampling {args.pool_sampling!r}; allowed: fixed, prioritized")


# ----------------------------------------------------------------------------- the networks, the tables and the rollout buffers


@dataclass
class Networks:
    """The policy (with its own value head) and, optionally, the training-only privileged critic."""

    model: PolicyValueNet
    optimizer: torch.optim.Optimizer
    critic: PrivilegedCritic | None = None
    critic_optimizer: torch.optim.Optimizer | None = None

    @classmethod
    def build(cls, args: Args, observation_size: int) -> "Networks":
        model = build_model({"observation_size": observation_size, "hidden": args.hidden,
                             "outlook_features": args.outlook_features})
        networks = cls(model, torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5))
        if args.privileged_critic:
            networks.critic = PrivilegedCritic(observation_size, hidden=args.critic_hidden)
            networks.critic_optimizer = torch.optim.Adam(networks.critic.parameters(), lr=args.critic_learning_rate, eps=1e-5)
        return networks

    def values(self, inputs: tuple[torch.Tensor, ...], tables: VectorGymEnv) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(logits, values, privileged inputs)`` of a batch: the values are the critic's if there is one."""
        logits, value = self.model(*inputs)
        privileged = None
        if self.critic is not None:
            privileged = privileged_batch(tables)
            value = self.critic(inputs[0], inputs[1], privileged)
        return logits, value, privileged

    def training_state(self) -> dict[str, Any]:
        """What ``last.pt`` keeps beside the policy's weights, for ``--resume``."""
        state = {"optimizer": self.optimizer.state_dict()}
        if self.critic is not None:
            state.update(critic=self.critic.state_dict(), critic_optimizer=self.critic_optimizer.state_dict())
        return state


def privileged_batch(tables: VectorGymEnv) -> torch.Tensor:
    """Hidden facts of every table at its learner's decision (inputs of the training critic only)."""
    return torch.from_numpy(np.stack([privileged_features(match.round, int(seat))
                                      for match, seat in zip(tables.batch.matches, tables.batch.seats)]))


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
    values: torch.Tensor  # the critic's if there is one, else the policy's value head
    rewards: torch.Tensor  # round points / reward_scale, at the step that ended the round
    round_ends: torch.Tensor  # 1.0 where a round (one GAE episode) ended during the step
    privileged: torch.Tensor | None
    round_points: float = 0.0  # the learner's raw points over the rounds that ended
    rounds: int = 0
    table_wins: np.ndarray | None = None  # (tables,) rounds the learner won at each table (for the league)
    table_rounds: np.ndarray | None = None  # (tables,) rounds that ended at each table

    @classmethod
    def allocate(cls, steps: int, tables: int, observation_size: int, privileged: bool,
                 num_action_features: int = NUM_ACTION_FEATURES) -> "Rollout":
        shape = (steps, tables)
        return cls(
            observations=torch.zeros(*shape, observation_size),
            contexts=torch.zeros(*shape, NUM_CONTEXT_FEATURES),
            action_features=torch.zeros(*shape, MAX_LEGAL_ACTIONS, num_action_features),
            action_ids=torch.zeros(*shape, MAX_LEGAL_ACTIONS, dtype=torch.long),
            legal=torch.zeros(*shape, MAX_LEGAL_ACTIONS, dtype=torch.bool),
            actions=torch.zeros(shape, dtype=torch.long),
            log_probs=torch.zeros(shape),
            values=torch.zeros(shape),
            rewards=torch.zeros(shape),
            round_ends=torch.zeros(shape),
            privileged=torch.zeros(*shape, NUM_PRIVILEGED_FEATURES) if privileged else None,
        )

    def flat(self, name: str) -> torch.Tensor:
        """Buffer ``name`` with steps and tables merged into one batch dimension."""
        tensor = getattr(self, name)
        return tensor.reshape(-1, *tensor.shape[2:])


# ----------------------------------------------------------------------------- rollout


def retable(tables: VectorGymEnv, current: list[str], wanted: list[str], snapshots: SnapshotPool, model,
            config, seed: int) -> list[str]:
    """Give each table the opponent ``wanted`` names (PFSP re-split); returns the new names.

    Bots are built afresh for the tables that change; the self-play tables (old and new) are
    handed out again among the snapshot players, or play ``simple`` until the first snapshot."""
    for game, (old, new) in enumerate(zip(current, wanted)):
        if old != new and not (new == SELF and snapshots.states):
            tables.set_opponent(game, make_opponent("simple" if new == SELF else new, seed=seed * 1000 + game, config=config))
    self_play = [i for i, name in enumerate(wanted) if name == SELF]
    if snapshots.states and self_play:
        snapshots.seat(model, config.num_players, tables, self_play)
        snapshots.refresh()
    if wanted != current:
        shares = ", ".join(f"{name} {wanted.count(name)}" for name in dict.fromkeys(wanted))
        print(f"league: tables re-split: {shares}", file=sys.stderr, flush=True)
    return list(wanted)


def own_penalty_rewards(rewards: np.ndarray, infos: dict) -> np.ndarray:
    """``--reward own_penalty``: minus the learner's own penalty points of each round that ended.

    The learner's seat is the one the env paid its zero-sum reward to (seats paid the same reward
    were charged the same penalty), and its penalty is that seat's ``points`` in the round's
    outcome. Rarely (about one round in 200 at 3-4 players) two rounds end within one learner step
    (a round in which the learner never had to act) and the step's reward sums both, while the
    info holds the last outcome only; no seat of that outcome then has the reward, and the
    zero-sum reward is kept."""
    out = rewards.copy()
    ended = infos.get("_round_outcome")
    if ended is None:
        return out
    for j in np.flatnonzero(ended).tolist():
        outcome = infos["round_outcome"][j]
        seats = [s for s, r in enumerate(outcome["rewards"]) if abs(r - float(rewards[j])) < 1e-3]
        if seats:
            out[j] = -outcome["points"][seats[0]]
    return out


class Teacher:
    """The player imitated during the warm start (``--bc-teacher``, a player spec), choosing for
    every table's learner.

    A teacher with the fast path on engine states (``act_states``, as ``simple`` has) is one
    instance seeded with ``seed`` for all the tables; any other has one seeded instance per table
    and reads the learner's observation.
    """

    def __init__(self, spec: str, num_tables: int, seed: int, config: RulesConfig):
        shared = make_player(spec, seed=seed, rules=config)
        self.shared = shared if callable(getattr(shared, "act_states", None)) else None
        self.bots = None if self.shared is not None else [
            make_player(spec, seed=int(np.random.SeedSequence([seed, table]).generate_state(1)[0]), rules=config)
            for table in range(num_tables)]

    def actions(self, tables: VectorGymEnv, observations: np.ndarray, masks: np.ndarray) -> list[int]:
        if self.shared is not None:
            return [int(a) for a in self.shared.act_states([match.round for match in tables.batch.matches])]
        return [int(bot.act({"observation": obs, "action_mask": mask}))
                for bot, obs, mask in zip(self.bots, observations, masks)]


def collect_rollout(networks: Networks, tables: VectorGymEnv, observations: np.ndarray, masks: np.ndarray,
                    rollout: Rollout, teacher: Teacher | None, reward_scale: float,
                    reward: str = "points"):
    """Every table's learner decides once per step, in one batched forward pass, for T steps.

    ``teacher`` given (imitation): it chooses the actions; otherwise they are sampled from the
    policy. Returns the observations and masks after the last step.
    """
    num_players = tables.batch.num_players
    rollout.round_points, rollout.rounds = 0.0, 0
    rollout.table_wins = np.zeros(len(observations))
    rollout.table_rounds = np.zeros(len(observations))
    for t in range(rollout.actions.shape[0]):
        inputs, legal_actions = encode_batch(observations, masks, num_players, networks.model.outlook)
        with torch.no_grad():
            logits, value, privileged = networks.values(inputs, tables)
            distribution = torch.distributions.Categorical(logits=logits)
            if teacher is not None:
                chosen = torch.tensor([actions.index(action) for action, actions in
                                       zip(teacher.actions(tables, observations, masks), legal_actions)])
            else:
                chosen = distribution.sample()
            log_prob = distribution.log_prob(chosen)
        actions = np.array([acts[i] for acts, i in zip(legal_actions, chosen.tolist())])
        observations, rewards, terminated, truncated, infos = tables.step(actions)
        masks = infos["action_mask"]
        # One round is one GAE episode: it ends when a round (or the match) ended during the step.
        round_ended = terminated | truncated | infos.get("_round_outcome", np.zeros(len(actions), dtype=bool))
        rollout.round_points += float(rewards[round_ended].sum())
        rollout.rounds += int(round_ended.sum())
        rollout.table_rounds += round_ended
        rollout.table_wins += round_ended & (rewards > 0)
        (rollout.observations[t], rollout.contexts[t], rollout.action_features[t], rollout.action_ids[t],
         rollout.legal[t]) = inputs
        rollout.actions[t], rollout.log_probs[t], rollout.values[t] = chosen, log_prob, value
        trained = own_penalty_rewards(rewards, infos) if reward == "own_penalty" else rewards
        rollout.rewards[t] = torch.from_numpy(trained / reward_scale)
        rollout.round_ends[t] = torch.from_numpy(round_ended.astype(np.float32))
        if privileged is not None:
            rollout.privileged[t] = privileged
    return observations, masks


def bootstrap_value(networks: Networks, tables: VectorGymEnv, observations: np.ndarray, masks: np.ndarray) -> torch.Tensor:
    """The value of each table's next decision (where the rollout stopped)."""
    with torch.no_grad():
        inputs, _ = encode_batch(observations, masks, tables.batch.num_players, networks.model.outlook)
        return networks.values(inputs, tables)[1]


# ----------------------------------------------------------------------------- advantages


def compute_advantages(rollout: Rollout, next_value: torch.Tensor, gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)``: GAE inside each round with gamma = 1, bootstrapped from the
    next decision's value where a round runs past the end of the rollout."""
    steps = rollout.rewards.shape[0]
    advantages = torch.zeros_like(rollout.rewards)
    running = torch.zeros(rollout.rewards.shape[1])
    for t in reversed(range(steps)):
        not_done = 1.0 - rollout.round_ends[t]
        following = next_value if t == steps - 1 else rollout.values[t + 1]
        delta = rollout.rewards[t] + following * not_done - rollout.values[t]
        running = delta + gae_lambda * not_done * running
        advantages[t] = running
    return advantages, advantages + rollout.values


def explained_variance(predicted: torch.Tensor, target: torch.Tensor) -> float:
    """1 - Var(target - predicted) / Var(target): 1 for a perfect value, 0 for no better than a constant."""
    variance = float(target.var(correction=0))
    return float("nan") if variance == 0 else 1.0 - float((target - predicted).var(correction=0)) / variance


# ----------------------------------------------------------------------------- update

INPUTS = ("observations", "contexts", "action_features", "action_ids", "legal")  # the policy's, in order


def update_networks(networks: Networks, rollout: Rollout, advantages: torch.Tensor, returns: torch.Tensor,
                    phase: str, args: Args) -> dict[str, float]:
    """Minibatch passes over one rollout; the means of the losses and diagnostics.

    ``phase`` ``"bc"``: cross-entropy towards the teacher's actions; ``"critic"``: only the
    privileged critic learns; ``"ppo"``: the clipped PPO objective with a value loss and an
    entropy bonus. The privileged critic, if any, learns in every phase.
    """
    model, optimizer, critic = networks.model, networks.optimizer, networks.critic
    imitate = phase == "bc"
    inputs = [rollout.flat(name) for name in INPUTS]
    chosen, old_log_probs = rollout.flat("actions"), rollout.flat("log_probs")
    privileged = rollout.flat("privileged") if critic is not None else None
    flat_advantages, flat_returns = advantages.reshape(-1), returns.reshape(-1)
    size = flat_advantages.shape[0]
    for group in optimizer.param_groups:
        group["lr"] = args.bc_learning_rate if imitate else args.learning_rate
    stats: dict[str, list[float]] = {k: [] for k in ("policy_loss", "value_loss", "entropy", "critic_loss", "approx_kl", "clipfrac")}
    for _ in range(args.bc_epochs if imitate else args.ppo_epochs):
        order = torch.randperm(size)
        for begin in range(0, size, args.minibatch_size):
            idx = order[begin: begin + args.minibatch_size]
            logits, value = model(*(x[idx] for x in inputs))
            distribution = torch.distributions.Categorical(logits=logits)
            log_prob = distribution.log_prob(chosen[idx])
            entropy = distribution.entropy().mean()
            value_loss = 0.5 * (value - flat_returns[idx]).pow(2).mean()
            log_ratio = log_prob - old_log_probs[idx]
            ratio = log_ratio.exp()
            with torch.no_grad():  # diagnostics, as CleanRL: a KL estimate and the share of clipped ratios
                stats["approx_kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clipfrac"].append(float(((ratio - 1).abs() > args.clip_coef).float().mean()))
            critic_loss = float("nan")
            if critic is not None:
                # The policy's own value head stays as an auxiliary target; the critic gives the advantages.
                loss = 0.5 * (critic(inputs[0][idx], inputs[1][idx], privileged[idx]) - flat_returns[idx]).pow(2).mean()
                networks.critic_optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(critic.parameters(), 0.5)
                networks.critic_optimizer.step()
                critic_loss = loss.item()
            policy_loss = float("nan")
            if phase != "critic":
                if imitate:
                    objective = -log_prob.mean()
                    loss = objective + args.value_coef * value_loss
                else:
                    adv = flat_advantages[idx]
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                    objective = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                    loss = objective + args.value_coef * value_loss - args.entropy_coef * entropy
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                optimizer.step()
                policy_loss = objective.item()
            for key, value_ in (("policy_loss", policy_loss), ("value_loss", value_loss.item()),
                                ("entropy", entropy.item()), ("critic_loss", critic_loss)):
                stats[key].append(value_)
    result = {key: float(np.mean(values)) for key, values in stats.items()}
    result["explained_variance"] = explained_variance(rollout.flat("values"), flat_returns)
    return result


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train (see the module docstring); the summary (also written to ``summary.json``)."""
    args = parse_args(argv)
    check_args(args)
    files = RunFiles(args.run_dir)
    files.root.mkdir(parents=True, exist_ok=True)
    print(files.describe(), flush=True)

    # Seeding: one block for every source of randomness.
    seed_everything(args.seed, args.torch_threads)
    table_rng = np.random.default_rng(args.seed)

    config = make_config(args.rules, num_players=args.num_players or None)
    observation_size = layout_for(config.num_players).size
    networks = Networks.build(args, observation_size)
    teacher = Teacher(args.bc_teacher, args.num_tables, args.seed, config)
    metadata = {"rules": args.rules, "num_players": config.num_players, "args": dataclasses.asdict(args)}
    progress, resumed = starting_point(args, files, networks, config)
    if resumed:
        table_rng = np.random.default_rng([args.seed, progress.update])
    # Imitation first, unless the policy starts from trained weights; then the critic alone learns
    # for a few updates, so that its first advantages are not noise.
    imitation_updates = 0 if args.init_from else args.bc_updates
    policy_frozen_until = imitation_updates + (args.critic_warmup_updates if networks.critic is not None else 0)

    # The learner plays one seat (alternating each match) of every table; the table's opponent from
    # the pool plays the others (self-play tables play simple until the first snapshot).
    table_opponents = split_tables(parse_pool(args.opponent_pool, config), args.num_tables)
    self_play_tables = [i for i, name in enumerate(table_opponents) if name == SELF]
    snapshots = SnapshotPool(args.snapshot_capacity, args.snapshot_players, args.seed)
    sampler = PrioritizedSampler(parse_pool(args.opponent_pool, config)) if args.pool_sampling == "prioritized" else None
    tables = VectorGymEnv(args.num_tables, opponents=["simple" if name == SELF else name for name in table_opponents],
                          learner_seat="alternate", rules=args.rules, num_players=config.num_players,
                          episode="match", reward="points")
    observations, infos = tables.reset(seed=int(table_rng.integers(2**31)))
    masks = infos["action_mask"]
    rollout = Rollout.allocate(args.rollout_length, args.num_tables, observation_size, networks.critic is not None,
                               networks.model.num_action_features)
    log = RunLog(files, fresh=not resumed, with_critic=networks.critic is not None)
    evaluator = Evaluator(args.eval_matches, args.seed, config, args.eval_max_rounds)
    start = time.time() - progress.elapsed
    bar = tqdm(total=args.total_decisions, initial=progress.decisions, disable=not args.progress, unit="dec")
    saved = dataclasses.replace(progress) if resumed else None  # what last.pt holds, once this run wrote it

    with StopSignals() as stop:
        try:
            while progress.decisions < args.total_decisions and not stop.requested:
                phase = ("bc" if progress.update < imitation_updates else
                         "critic" if progress.update < policy_frozen_until else "ppo")
                # ---- rollout, advantages, update
                observations, masks = collect_rollout(networks, tables, observations, masks, rollout,
                                                      teacher if phase == "bc" else None, args.reward_scale,
                                                      args.reward)
                next_value = bootstrap_value(networks, tables, observations, masks)
                advantages, returns = compute_advantages(rollout, next_value, args.gae_lambda)
                stats = update_networks(networks, rollout, advantages, returns, phase, args)
                progress.update += 1
                progress.decisions += args.rollout_length * args.num_tables
                if self_play_tables and phase != "bc" and (not snapshots.states or progress.update % args.snapshot_every == 0):
                    if not snapshots.states:
                        snapshots.seat(networks.model, config.num_players, tables, self_play_tables)
                    snapshots.add(networks.model)
                    snapshots.refresh()
                if sampler is not None and phase != "bc":
                    sampler.record(table_results(table_opponents, rollout.table_wins, rollout.table_rounds))
                    if progress.update % args.reweight_every == 0:
                        table_opponents = retable(tables, table_opponents, split_tables(sampler.weights(), args.num_tables),
                                                  snapshots, networks.model, config, args.seed + progress.update)
                        self_play_tables = [i for i, name in enumerate(table_opponents) if name == SELF]
                progress.elapsed = time.time() - start

                # ---- logging, evaluation in the second process, checkpoints
                train_points = rollout.round_points / max(1, rollout.rounds)
                row = log.update(progress, phase, stats, train_points, networks.optimizer.param_groups[0]["lr"])
                log.evaluation(evaluator.collect(), progress, row)
                meta = {**metadata, "progress": dataclasses.asdict(progress), "evaluation": log.last_evaluation}
                save_checkpoint(files.last, networks.model, meta, extra=networks.training_state())
                saved = dataclasses.replace(progress)
                # A run that is imitation alone has its final policy evaluated, so that it has a best.pt too.
                ends_in_imitation = phase == "bc" and progress.decisions >= args.total_decisions
                due = phase == "ppo" and progress.update % args.eval_every == 0
                if (due or ends_in_imitation) and not evaluator.busy:
                    save_checkpoint(files.candidate(progress.update), networks.model, meta)
                    evaluator.submit(files.candidate(progress.update), progress.decisions)
                log.write(row)
                bar.update(args.rollout_length * args.num_tables)
                bar.set_postfix(phase=phase, pts=f"{train_points:+.2f}",
                                win_vs_simple=f"{log.last_evaluation.get('win_rate_vs_simple', float('nan')):.3f}")
            bar.close()
            # The last candidate's evaluation is waited for, unless a signal says stop.
            log.evaluation(evaluator.collect(wait=True, give_up=lambda: stop.requested), progress)
        except KeyboardInterrupt:  # a second signal: stop at once (last.pt holds the update before)
            pass
        finally:
            stop.ignore_further()  # the cleanup and the summary run to their end
            bar.close()
            evaluator.close()
            files.remove_candidates()
            tables.close()
            log.close()
        if saved is not None and saved.best_win_rate != progress.best_win_rate:
            # An evaluation finished after the last save: last.pt learns the best so far, for --resume.
            saved.best_win_rate = progress.best_win_rate
            payload = load_checkpoint(files.last)
            payload["metadata"].update(progress=dataclasses.asdict(saved), evaluation=log.last_evaluation)
            write_checkpoint(files.last, payload)
        return finish(files, saved or Progress(best_win_rate=progress.best_win_rate), log.last_evaluation,
                      stop.signal_name, argv)


def starting_point(args: Args, files: RunFiles, networks: Networks, config: RulesConfig) -> tuple[Progress, bool]:
    """Fresh, from trained weights (``--init-from``) or where the run stopped (``--resume``):
    ``(progress, resumed)``; says which."""
    if args.resume and files.last.exists():
        progress = resume(files.last, networks, args, config)
        evaluated = (f"best win rate vs simple {progress.best_win_rate:.3f}" if progress.best_win_rate >= 0
                     else "no evaluation yet")
        print(f"resumed from {files.last}: update {progress.update}, {progress.decisions} decisions, {evaluated}")
        return progress, True
    if args.resume:
        print(f"--resume: there is no {files.last} yet; starting a new run")
    elif files.last.exists():
        print(f"{files.last} exists but --resume was not given: starting over (its progress.csv is replaced)")
    if args.init_from:
        payload = load_checkpoint(args.init_from, rules=config)
        check_width(args, payload, "--init-from")
        networks.model.load_state_dict(payload["model"])
        print(f"policy initialised from {args.init_from}")
    return Progress(), False


def check_width(args: Args, payload: dict[str, Any], flag: str) -> None:
    hidden = payload["metadata"]["hidden"]
    if hidden != args.hidden:
        raise ValueError(f"{flag}: the checkpoint has hidden={hidden}; pass --hidden {hidden}")
    outlook = payload["metadata"].get("outlook_features", False)
    if outlook != args.outlook_features:
        raise ValueError(f"{flag}: the checkpoint's network {'reads' if outlook else 'does not read'} the outlook "
                         f"features; {'pass' if outlook else 'leave out'} --outlook-features")


def resume(path: Path, networks: Networks, args: Args, config: RulesConfig) -> Progress:
    """``--resume``: networks, optimizers and progress from the run's ``last.pt``."""
    payload = load_checkpoint(path, rules=config)
    check_width(args, payload, "--resume")
    saved = payload["metadata"].get("progress")
    if "optimizer" not in payload or not isinstance(saved, dict) or set(saved) != set(dataclasses.asdict(Progress())):
        raise CheckpointError(f"checkpoint {path} is not the last.pt of a training run (no optimizer state or progress)")
    networks.model.load_state_dict(payload["model"])  # checked by load_checkpoint
    try:
        networks.optimizer.load_state_dict(payload["optimizer"])
        if networks.critic is not None and "critic" in payload:
            networks.critic.load_state_dict(payload["critic"])
            networks.critic_optimizer.load_state_dict(payload["critic_optimizer"])
    except (KeyError, RuntimeError, TypeError, ValueError) as error:
        raise CheckpointError(f"checkpoint {path}: its optimizer or critic state does not fit this run "
                              f"({str(error).strip().splitlines()[0]}); "
                              f"--critic-hidden or --privileged-critic may differ from the run's") from None
    return Progress(**saved)


def resume_command(argv: list[str] | None) -> str:
    """The command line that continues this run."""
    kept = [a for a in (sys.argv[1:] if argv is None else argv) if a not in ("--resume", "--no-resume")]
    return shlex.join([*PROG.split(), *kept, "--resume"])


def finish(files: RunFiles, progress: Progress, last_evaluation: dict[str, float], stopped: str | None,
           argv: list[str] | None) -> dict[str, Any]:
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
        lines.append("  no evaluation finished (they start after imitation, every --eval-every updates, "
                     "or once at the end of a run that is imitation alone)")
    lines.append(f"  checkpoint: {files.last}; progress: {files.csv}; summary: {files.summary}")
    if files.plot.exists():
        lines.append(f"  plot: {files.plot}")
    print("\n".join(lines), flush=True)
    if stopped and progress.update:
        print(f"stopped by {stopped}; {files.last} holds update {progress.update}. Continue with:\n"
              f"  {resume_command(argv)}", file=sys.stderr, flush=True)
    elif stopped:
        print(f"stopped by {stopped} before the first update finished; nothing saved", file=sys.stderr, flush=True)
    return summary


def cli(argv: list[str] | None = None) -> int:
    """``python -m training.train``: exit 2 with a message on bad arguments or checkpoints,
    128 + the signal's number when stopped by a signal."""
    try:
        summary = main(argv)
    except ValueError as error:  # CheckpointError included
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before training began (once it has, signals stop it cleanly)
        print(f"{PROG}: interrupted before the first update; nothing saved", file=sys.stderr)
        return 128 + signal.SIGINT
    stopped = summary["stopped_by"]
    return 128 + signal.Signals[stopped].value if stopped else 0


if __name__ == "__main__":
    sys.exit(cli())
