"""TorchRL PPO on the PettingZoo AEC env through TorchRL's ``PettingZooWrapper``, against the simple bot.

``torchrl.envs.PettingZooWrapper`` wraps ``okgin_env.env()`` (an AEC env, so ``use_mask=True``:
each step only one agent acts, and the wrapper's ``("players", "mask")`` says which). Both seats
are one TorchRL group, ``"players"``, so every tensor carries a seat dimension of 2; the wrapper
moves each seat's ``action_mask`` out of the observation into ``("players", "action_mask")``
(the acting seat's legal actions; all True for the seat that is not to act).

Several such envs run side by side in a ``SerialEnv``; in env ``i`` the learner holds seat
``i % 2`` and the other seat is ``make_bot("simple")`` (``--opponent``), so the learner plays both
seats. ``VersusBot`` is the collection policy: the learner's ``ProbabilisticActor`` samples from a
``MaskedCategorical`` over its logits and the action mask (so it only ever samples legal actions),
then the bot's move replaces the action of the bot's seat. A ``torchrl.collectors.Collector``
gathers the steps; ``learner_decisions`` keeps the learner's own decisions and gives each one the
learner's reward up to its next decision (in a turn-based game the round often ends on the
opponent's move, so that reward arrives on a step where the learner does not act). TorchRL's
``ClipPPOLoss`` with its GAE value estimator then trains the actor and a value network.

The networks (``--network percard``, the default) are ``PerCardNet``: one small network shared
by the 52 cards reads each card's column of the observation and scores discarding and knocking
with it, so a lesson about one card holds for all; ``--network mlp`` is TorchRL's ``MLP`` over
the flat array (with two layers of 256 it had won none of its training rounds against simple
after 47,000 env steps, where ``PerCardNet`` was winning about a quarter of them). The reward is
the round's points (``--reward points``, scaled by 1/25), which also grades a lost round by the
deadwood left; with ``--reward win`` (+1/-1) a learner that never gets to knock sees the same -1
whatever it does.

With ``--observation features`` (the default) the env appends the solver features of
``okgin_env.features`` (deadwood after each discard, knock/gin possible, meld partners, ...) to
the card planes; ``--observation cards`` trains on the card planes alone.

    pip install -e ".[torchrl]"
    python examples/torchrl_ppo.py --eval-rounds 1000 --eval-matches 200 --results runs/torchrl_ppo/results.json

Prints (and with ``--results FILE`` writes) a JSON summary like the other examples: the budget,
wall time, steps per second, the mask audit's counts, win/loss/draw rates against the random and
the simple bot over single rounds (``examples/_common``), and ``okgin_env.evaluate``'s mirrored
results against simple over rounds and over matches (win rate among decided games, 95% interval).
Every action the collection policy sends is checked against the acting seat's mask
(``VersusBot``), and ``MaskAudit`` checks it again at the PettingZoo env.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require  # noqa: E402

require(("torch", "torchrl", "tensordict"), "torchrl")

import numpy as np
import torch
from torch import nn


from _common import Stopwatch, check_legal, evaluation, machine_note, write_results  # noqa: E402
from _percard import NETWORKS, OBSERVATION_DEFAULT, PerCardNet, add_network_arguments, as_model_input  # noqa: E402
from _versus_simple import evaluate_vs_simple  # noqa: E402

import okgin_env  # noqa: E402
from okgin_env.bots import make_bot  # noqa: E402
from okgin_env.observation import OBSERVATIONS, layout_for  # noqa: E402
from pettingzoo.utils import BaseWrapper  # noqa: E402

# TorchRL warns on every wrapper built with a PettingZoo other than the one it is tested with (1.24.3).
warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")

GROUP = "players"
SEATS = ("player_0", "player_1")
# okgin's observation space is a Dict; the wrapper takes "action_mask" out of it and keeps the
# rest as a nested entry, so the flat array sits at ("observation", "observation") in the group.
OBS_KEY = ("observation", "observation")


class MaskAudit(BaseWrapper):
    """The okgin AEC env with every action checked against the acting agent's mask before it steps.

    With ``audit=True`` it also keeps a fingerprint of every (observation, mask) pair it handed
    out for the agent to act, so a test can check that what TorchRL stored is what the env gave.
    """

    def __init__(self, env: Any, audit: bool = False):
        super().__init__(env)
        self.audit = audit
        self.emitted: set[bytes] = set()
        self.steps = 0

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        observation = super().observe(agent)
        if self.audit and observation["action_mask"].any():
            self.emitted.add(fingerprint(observation["observation"], observation["action_mask"]))
        return observation

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            # The engine's legal actions for the seat to act: the mask observe() gives it, without
            # encoding a whole observation again.
            action = check_legal(action, self.unwrapped.match.round.legal_mask(), f"torchrl {agent}: ")
            self.steps += 1
        super().step(action)


def fingerprint(observation: np.ndarray, mask: np.ndarray) -> bytes:
    return np.asarray(observation, dtype=np.float32).tobytes() + np.asarray(mask, dtype=bool).tobytes()


def wrapper_class():
    """``torchrl.envs.PettingZooWrapper``, reading the AEC turn bookkeeping straight from the env.

    TorchRL's env wrappers forward an attribute they lack to the wrapped env through a
    ``__getattr__`` that lists ``dir(self)`` first (about 2 ms a call here); the AEC wrapper reads
    ``agent_selection``, ``agents`` and ``possible_agents`` several times per step, which doubled
    the cost of a step. These properties return the same values directly.
    """
    from torchrl.envs import PettingZooWrapper

    class OkginPettingZooWrapper(PettingZooWrapper):
        @property
        def agent_selection(self) -> str:
            return self._env.agent_selection

        @property
        def agents(self) -> list[str]:
            return self._env.agents

        @property
        def possible_agents(self) -> list[str]:
            return self._env.possible_agents

    return OkginPettingZooWrapper


def make_env(observation: str = OBSERVATION_DEFAULT, reward: str = "points", audit: bool = False, envs: list | None = None):
    """One TorchRL ``PettingZooWrapper`` around ``okgin_env.env(episode="round")`` (through ``MaskAudit``)."""
    aec = MaskAudit(okgin_env.env(episode="round", reward=reward, observation=observation), audit=audit)
    if envs is not None:
        envs.append(aec)
    return wrapper_class()(aec, use_mask=True, group_map={GROUP: list(SEATS)}, categorical_actions=True)


def make_networks(observation: str = OBSERVATION_DEFAULT, network: str = "percard", hidden: int = 64):
    """The learner's actor (a ``MaskedCategorical`` over the 107 actions) and its value network.

    ``network="percard"``: ``PerCardNet`` (``hidden`` units per card); ``"mlp"``: TorchRL's ``MLP``
    with two hidden layers of ``hidden`` units over the flat observation.
    """
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor, ValueOperator

    if network not in NETWORKS:
        raise ValueError(f"network={network!r}; allowed: {', '.join(NETWORKS)}")
    size = layout_for(len(SEATS), observation).size
    if network == "percard":
        policy_net, value_net = PerCardNet(observation, "logits", hidden), PerCardNet(observation, "value", hidden)
    else:
        policy_net = MLP(in_features=size, out_features=okgin_env.NUM_ACTIONS, num_cells=[hidden, hidden], activation_class=nn.Tanh)
        value_net = MLP(in_features=size, out_features=1, num_cells=[hidden, hidden], activation_class=nn.Tanh)
    actor = ProbabilisticActor(
        TensorDictModule(policy_net, in_keys=[OBS_KEY], out_keys=["logits"]),
        in_keys={"logits": "logits", "mask": "action_mask"},  # MaskedCategorical(logits=..., mask=...)
        out_keys=["action"],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )
    critic = ValueOperator(value_net, in_keys=[OBS_KEY])
    return actor, critic


def make_versus_bot(actor: Any, bots: list[Any], learner_seats: list[int]):
    """The collection policy: the actor samples every seat, then the bots' seats get the bots' moves.

    Works on the batched env's tensordict (batch ``[n_envs]``, the group ``[n_envs, 2]``). Every
    action of the seat to act is checked against its mask; ``steps``/``learner_steps`` count them.
    """
    from tensordict.nn import TensorDictModuleBase

    class VersusBot(TensorDictModuleBase):
        in_keys = [(GROUP, *OBS_KEY), (GROUP, "action_mask"), (GROUP, "mask")]
        out_keys = [(GROUP, "action"), (GROUP, "logits"), *[(GROUP, key) for key in actor.log_prob_keys]]

        def __init__(self) -> None:
            super().__init__()
            self.actor = actor
            self.bots = bots
            self.learner_seats = learner_seats
            self.steps = 0
            self.learner_steps = 0

        def forward(self, tensordict):  # noqa: ANN001
            group = tensordict.get(GROUP)
            self.actor(group)  # over every seat of every env; only the acting seat's action is used
            actions = group.get("action")
            acting = group.get("mask")
            masks = group.get("action_mask")
            observations = group.get(OBS_KEY)
            for env_index, seat in torch.nonzero(acting).tolist():
                mask = masks[env_index, seat].numpy()
                if seat == self.learner_seats[env_index]:
                    self.learner_steps += 1
                else:
                    move = self.bots[env_index].act(
                        {"observation": observations[env_index, seat].numpy(), "action_mask": mask.astype(np.int8)}
                    )
                    actions[env_index, seat] = move
                check_legal(actions[env_index, seat], mask, f"env {env_index} seat {seat}: ")
                self.steps += 1
            return tensordict

    return VersusBot()


def learner_decisions(batch: Any, learner_seats: list[int], reward_scale: float = 1.0):
    """The learner's decisions of a collected batch (``[n_envs, T]``) as one flat TensorDict.

    Each decision gets the learner's reward summed up to its next decision (or to the end of the
    round: ``done``), and the next decision's observation as its ``next`` observation. Decisions
    of a round that is still running at the end of the batch are left out (that round's earlier
    decisions came in this batch, its later ones come in the next, each without the other's
    rewards), as are rounds that end before the learner acts (the bot knocked at once).
    """
    from tensordict import TensorDict

    group = batch.get(GROUP)
    acting = group.get("mask")
    rewards = batch.get(("next", GROUP, "reward"))[..., 0]
    dones = batch.get(("next", "done"))[..., 0]
    rows: list[tuple[int, int]] = []
    gains: list[float] = []
    ends: list[bool] = []
    for env_index, seat in enumerate(learner_seats):
        env_rows: list[int] = []
        env_gains: list[float] = []
        env_ends: list[bool] = []
        pending = None  # index (in env_rows) of the learner's latest decision of the running round
        finished = 0  # env_rows[:finished] belong to rounds that ended within the batch
        for t in range(acting.shape[1]):
            if acting[env_index, t, seat]:
                env_rows.append(t)
                env_gains.append(0.0)
                env_ends.append(False)
                pending = len(env_rows) - 1
            if pending is not None:
                env_gains[pending] += float(rewards[env_index, t, seat])
            if dones[env_index, t]:
                if pending is not None:
                    env_ends[pending] = True
                pending = None
                finished = len(env_rows)
        rows += [(env_index, t) for t in env_rows[:finished]]
        gains += env_gains[:finished]
        ends += env_ends[:finished]
    if not rows:
        return None
    env_idx = torch.tensor([r[0] for r in rows])
    time_idx = torch.tensor([r[1] for r in rows])
    seat_idx = torch.tensor([learner_seats[r[0]] for r in rows])
    observation = group.get(OBS_KEY)[env_idx, time_idx, seat_idx]
    done = torch.tensor(ends).unsqueeze(-1)
    # The next decision's observation (the following row: same env, same round) unless this one ended the round.
    next_observation = torch.where(done, observation, torch.roll(observation, -1, dims=0))
    data = {
        OBS_KEY: observation,
        "action_mask": group.get("action_mask")[env_idx, time_idx, seat_idx],
        "action": group.get("action")[env_idx, time_idx, seat_idx],
        ("next", *OBS_KEY): next_observation,
        ("next", "reward"): torch.tensor(gains, dtype=torch.float32).unsqueeze(-1) * reward_scale,
        ("next", "done"): done,
        ("next", "terminated"): done.clone(),
    }
    for key in group.keys(True, True):
        if isinstance(key, str) and key.endswith("log_prob"):
            data[key] = group.get(key)[env_idx, time_idx, seat_idx]
    return TensorDict(data, batch_size=[len(rows)])


class TorchRLPolicy:
    """The trained actor as a docs/api.md policy: ``act(observation_dict) -> int`` (greedy).

    The most probable legal action: what the actor itself returns under
    ``set_exploration_type(ExplorationType.DETERMINISTIC)`` (the ``MaskedCategorical``'s mode),
    computed from the actor's logits network directly, without a TensorDict per decision.
    Accepts card-layout observations too (what ``okgin_env.evaluate`` hands every policy) and
    appends the features itself when the actor was trained on ``observation="features"``.
    """

    def __init__(self, actor: Any, observation: str = OBSERVATION_DEFAULT):
        self.actor = actor
        self.logits = actor.module[0].module  # the MLP of the actor's first module, which writes "logits"
        self.observation = observation

    def act(self, observation: dict[str, np.ndarray]) -> int:

        values = as_model_input(observation, self.observation)
        legal = torch.as_tensor(np.asarray(observation["action_mask"]).astype(bool))
        with torch.no_grad():
            logits = self.logits(torch.as_tensor(values))
        return int(torch.argmax(logits.masked_fill(~legal, -torch.inf)))


def check_settings(observation: str, n_envs: int, frames_per_batch: int, frames: int) -> None:
    """A ValueError saying what is wrong with these settings and what is allowed; nothing else."""
    if observation not in OBSERVATIONS:
        raise ValueError(f"observation={observation!r}; allowed: {', '.join(OBSERVATIONS)}")
    if n_envs < 2 or n_envs % 2:
        raise ValueError(f"n_envs must be even and at least 2 (the learner holds seat i % 2 of env i), got {n_envs}")
    if frames_per_batch < n_envs or frames_per_batch % n_envs:
        raise ValueError(f"frames_per_batch must be a positive multiple of n_envs ({n_envs}), got {frames_per_batch}")
    if frames < frames_per_batch:
        raise ValueError(f"frames ({frames}) must be at least frames_per_batch ({frames_per_batch})")


def train(
    frames: int = 131_072,
    n_envs: int = 8,
    frames_per_batch: int = 2048,
    epochs: int = 6,
    minibatch: int = 256,
    lr: float = 1e-3,
    gamma: float = 1.0,
    lmbda: float = 0.95,
    entropy: float = 0.01,
    network: str = "percard",
    hidden: int = 64,
    observation: str = OBSERVATION_DEFAULT,
    opponent: str = "simple",
    reward: str = "points",
    seed: int = 0,
    out: str | Path = "runs/torchrl_ppo",
    eval_rounds: int = 200,
    eval_matches: int = 0,
    audit: bool = False,
    log_every: int = 0,
) -> dict[str, Any]:
    """Train, save, reload, evaluate. ``frames`` counts env steps of both seats (rounded up to
    whole batches).

    Returns the results dict (and the live objects under ``"_objects"``). ``audit=True`` keeps the
    env's (observation, mask) fingerprints and the last batch (and its learner decisions) for tests.
    """
    check_settings(observation, n_envs, frames_per_batch, frames)
    from torchrl.collectors import Collector
    from torchrl.envs import SerialEnv
    from torchrl.objectives import ClipPPOLoss, ValueEstimators

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    # Points rewards reach +-100 or so; 1/25 keeps the value targets near unit scale.
    reward_scale = 1 / 25 if reward == "points" else 1.0
    frames = -(-frames // frames_per_batch) * frames_per_batch  # whole batches

    raw_envs: list[MaskAudit] = []
    # In this process: a TorchRL ParallelEnv (worker processes) stepped fewer envs per second on
    # the 2-core machine the figures of docs/frameworks.md come from.
    env = SerialEnv(n_envs, lambda: make_env(observation, reward, audit, raw_envs))
    env.set_seed(seed)
    learner_seats = [i % 2 for i in range(n_envs)]
    bots = [make_bot(opponent, seed=seed + 1000 + i) for i in range(n_envs)]
    actor, critic = make_networks(observation, network, hidden)
    policy = make_versus_bot(actor, bots, learner_seats)
    # The policy reads nothing that a TorchRL transform would add (such as InitTracker's "is_init").
    collector = Collector(
        env, policy, frames_per_batch=frames_per_batch, total_frames=frames, auto_register_policy_transforms=False
    )
    policy.steps = policy.learner_steps = 0  # the collector tried the policy once on a reset tensordict

    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=entropy, critic_coeff=0.5, normalize_advantage=True)
    loss.make_value_estimator(ValueEstimators.GAE, gamma=gamma, lmbda=lmbda)
    optimizer = torch.optim.Adam(loss.parameters(), lr=lr)

    clock = Stopwatch()
    decisions = updates = 0
    last = None
    for batch_index, batch in enumerate(collector):
        data = learner_decisions(batch, learner_seats, reward_scale)
        if data is None:
            continue
        decisions += len(data)
        with torch.no_grad():
            loss.value_estimator(data, params=loss.critic_network_params, target_params=loss.target_critic_network_params)
        for _ in range(epochs):
            for index in torch.randperm(len(data)).split(minibatch):
                terms = loss(data[index])
                total = terms["loss_objective"] + terms["loss_critic"] + terms["loss_entropy"]
                optimizer.zero_grad()
                total.backward()
                torch.nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
                optimizer.step()
                updates += 1
        if audit:
            last = {"batch": batch, "decisions": data}
        if log_every and batch_index % log_every == 0:
            ends = data["next", "done"][:, 0]
            final = data["next", "reward"][ends, 0] / reward_scale
            print(
                f"batch {batch_index}: {policy.steps} env steps, {clock.seconds():.0f}s; this batch's finished rounds: "
                f"{len(final)}, won {float((final > 0).float().mean()):.3f}, mean reward {float(final.mean()):+.2f}",
                flush=True,
            )
    collector.shutdown()
    train_seconds = clock.seconds()

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "torchrl_ppo_actor.pt"
    torch.save({"actor": actor.state_dict(), "observation": observation, "network": network, "hidden": hidden}, path)
    saved = torch.load(path, map_location="cpu", weights_only=True)
    reloaded, _ = make_networks(saved["observation"], saved["network"], saved["hidden"])
    reloaded.load_state_dict(saved["actor"])

    # The reloaded actor must act exactly as the trained one (greedy actions on real observations).
    probe = okgin_env.env(episode="round", observation=observation)
    probe.reset(seed=seed + 999)
    sample = probe.observe(probe.agent_selection)
    if TorchRLPolicy(actor, observation).act(sample) != TorchRLPolicy(reloaded, observation).act(sample):
        raise AssertionError("reloaded actor acts differently")

    trained = TorchRLPolicy(reloaded, observation)
    env_steps = policy.steps
    results: dict[str, Any] = {
        "framework": f"TorchRL {_version('torchrl')} PPO (PettingZooWrapper, MaskedCategorical)",
        "machine": machine_note(),
        "observation": observation,
        "opponent_in_training": opponent,
        "reward": reward,
        "frames": frames,
        "env_steps_both_seats": env_steps,
        "learner_decisions_trained_on": decisions,
        "gradient_steps": updates,
        "train_seconds": round(train_seconds, 2),
        "env_steps_per_second": round(env_steps / train_seconds, 1),
        "mask_audit_steps": policy.steps,
        "mask_audit_learner_steps": policy.learner_steps,
        "saved_to": str(path),
        **evaluation(trained, eval_rounds),
        **evaluate_vs_simple(trained, eval_rounds, eval_matches),
    }
    results["_objects"] = {"actor": actor, "reloaded": reloaded, "policy": policy, "raw_envs": raw_envs, "last": last}
    return results


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=131_072, help="env steps (both seats) to train on")
    parser.add_argument("--n-envs", type=int, default=8, help="envs side by side (even: the learner holds seat i %% 2)")
    parser.add_argument("--frames-per-batch", type=int, default=2048, help="env steps per PPO update")
    parser.add_argument("--epochs", type=int, default=6, help="PPO epochs per batch")
    parser.add_argument("--minibatch", type=int, default=256, help="learner decisions per gradient step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=1.0, help="discount per learner decision")
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus coefficient")
    add_network_arguments(parser)
    parser.add_argument("--opponent", default="simple", choices=["random", "simple"])
    parser.add_argument("--reward", default="points", choices=["points", "win"],
                        help="points: the round's score (scaled by 1/25), which also tells a lost round "
                        "with little deadwood from one with much; win: +1/-1 for the round's winner/loser")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200, help="rounds per evaluation")
    parser.add_argument("--eval-matches", type=int, default=0, help="whole matches against simple through okgin_env.evaluate")
    parser.add_argument("--out", default="runs/torchrl_ppo")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    parser.add_argument("--log-every", type=int, default=5, help="print progress every N batches (0: quiet)")
    args = parser.parse_args(argv)
    settings = {key: value for key, value in vars(args).items() if key not in ("results",)}
    settings["lmbda"] = 0.95
    try:
        check_settings(args.observation, args.n_envs, args.frames_per_batch, args.frames)
        if args.eval_rounds < 1 or args.eval_matches < 0:
            raise ValueError(f"--eval-rounds must be at least 1 and --eval-matches at least 0, got {args.eval_rounds}, {args.eval_matches}")
    except ValueError as error:
        parser.error(str(error))  # exits 2 with the usage line
    results = train(**settings)
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
