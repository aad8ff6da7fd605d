"""Tianshou multi-agent training on the PettingZoo env: masked DQN through Tianshou's PettingZoo adapter.

The AEC env goes through ``tianshou.env.PettingZooEnv`` (which turns each observation into
``{"agent_id", "obs", "mask"}``) into a ``MultiAgentOffPolicyAlgorithm`` that dispatches every
transition to the algorithm of the agent that acted: a ``DQN`` whose policy
(``DiscreteQLearningPolicy``) masks illegal actions out of its argmax and out of its
epsilon-greedy exploration, against either a fixed bot (``--opponent simple|random``, wrapped
as a non-learning Tianshou algorithm) or a second DQN (``--opponent dqn``: two independent
learners).

``SeatSwap`` renames the env's agents ``"learner"`` / ``"opponent"`` and swaps their seats each
episode, so one DQN learns both seats (Tianshou's multi-agent manager keys algorithms by agent
name, and the observation says which seat is playing).

Tianshou stores every agent's transition in one buffer with the reward vector of all agents;
the final reward of a round (the knock) lands in the row of the knocker's step, so the learner's
DQN uses 3-step returns (``n_step_return_horizon=3``), which reach from the learner's last
discard over the opponent's draw and knock to the end of the round.

    pip install -e ".[tianshou]"
    python examples/tianshou_multiagent.py --steps 200000 --out runs/tianshou

Prints (and with ``--results FILE`` writes) a JSON summary like the other examples.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Tianshou draws a tqdm bar for every gradient-update step even with show_progress=False.
os.environ.setdefault("TQDM_DISABLE", "1")

from _common import DEFAULT_ENV_OPTIONS, Stopwatch, check_legal, evaluation, machine_note, write_results  # noqa: E402

import okgin_env  # noqa: E402
from okgin_env.bots import make_bot  # noqa: E402
from pettingzoo import AECEnv  # noqa: E402

AGENTS = ("learner", "opponent")


class SeatSwap(AECEnv):
    """The okgin AEC env with agents named by role; the learner's seat alternates every reset.

    It also audits the env side of the mask contract: every action must be legal for the agent
    to act (checked here, before the env would raise), and ``emitted`` (when ``audit=True``)
    collects a fingerprint of every (observation, mask) pair handed out, so a test can check
    that what the learner stored is exactly what the env gave.
    """

    metadata = {"name": "okgin_seat_swap", "is_parallelizable": False, "render_modes": []}

    def __init__(self, audit: bool = False, reward_scale: float = 1.0, **env_options: Any):
        super().__init__()
        self.reward_scale = reward_scale
        self.env = okgin_env.env(**env_options)
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        space = self.env.observation_space("player_0")
        self.observation_spaces = {a: space for a in AGENTS}
        self.action_spaces = {a: self.env.action_space("player_0") for a in AGENTS}
        self.learner_seat = 1
        self.audit = audit
        self.emitted: set[bytes] = set()
        self.steps = 0

    def observation_space(self, agent: str):
        return self.observation_spaces[agent]

    def action_space(self, agent: str):
        return self.action_spaces[agent]

    # role <-> seat
    def _seat_agent(self, role: str) -> str:
        seat = self.learner_seat if role == "learner" else 1 - self.learner_seat
        return self.env.possible_agents[seat]

    def _role(self, seat_agent: str) -> str:
        return "learner" if self.env.unwrapped.agent_name_mapping[seat_agent] == self.learner_seat else "opponent"

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.learner_seat = 1 - self.learner_seat
        self.env.reset(seed=seed, options=options)
        self._sync()

    def _sync(self) -> None:
        inner = self.env
        self.agents = [self._role(a) for a in inner.agents]
        self.agent_selection = self._role(inner.agent_selection)
        scale = self.reward_scale
        self.rewards = {self._role(a): r * scale for a, r in inner.rewards.items()}
        self._cumulative_rewards = {self._role(a): r * scale for a, r in inner._cumulative_rewards.items()}
        self.terminations = {self._role(a): t for a, t in inner.terminations.items()}
        self.truncations = {self._role(a): t for a, t in inner.truncations.items()}
        # Tianshou's replay buffer stores infos as fixed-shape arrays; the variable-size
        # ``round_outcome`` dict (melds, hands) does not fit there, so infos stay empty.
        self.infos = {self._role(a): {} for a in inner.infos}

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        observation = self.env.observe(self._seat_agent(agent))
        if self.audit and observation["action_mask"].any():
            self.emitted.add(fingerprint(observation["observation"], observation["action_mask"]))
        return observation

    def step(self, action: Any) -> None:
        if action is not None and not (self.terminations[self.agent_selection] or self.truncations[self.agent_selection]):
            mask = self.env.observe(self.env.agent_selection)["action_mask"]
            action = check_legal(action, mask, f"tianshou {self.agent_selection}: ")
            self.steps += 1
        self.env.step(action)
        self._sync()

    def close(self) -> None:
        self.env.close()


def fingerprint(observation: np.ndarray, mask: np.ndarray) -> bytes:
    return np.asarray(observation, dtype=np.float32).tobytes() + np.asarray(mask, dtype=bool).tobytes()


def bot_algorithm(bot: Any, action_space: Any):
    """A fixed okgin bot as a (non-learning) Tianshou off-policy algorithm."""
    from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, TrainingStats
    from tianshou.algorithm.algorithm_base import Policy as TianshouPolicy
    from tianshou.data import Batch

    class BotPolicy(TianshouPolicy):
        def __init__(self) -> None:
            super().__init__(action_space=action_space)
            self.bot = bot

        def forward(self, batch, state=None, **kwargs):  # noqa: ANN001
            obs, mask = np.asarray(batch.obs.obs), np.asarray(batch.obs.mask)
            acts = [self.bot.act({"observation": o, "action_mask": m.astype(np.int8)}) for o, m in zip(obs, mask)]
            return Batch(act=np.asarray(acts, dtype=np.int64))

    class BotAlgorithm(OffPolicyAlgorithm):
        def __init__(self) -> None:
            super().__init__(policy=BotPolicy())

        def _update_with_batch(self, batch):  # noqa: ANN001
            return TrainingStats()

    return BotAlgorithm()


def make_dqn(observation_size: int, action_space: Any, lr: float, eps: float):
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import Net

    net = Net(state_shape=observation_size, action_shape=action_space.n, hidden_sizes=[256, 256])
    policy = DiscreteQLearningPolicy(model=net, action_space=action_space, eps_training=eps, eps_inference=0.0)
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=lr), gamma=0.99, n_step_return_horizon=3, target_update_freq=250)


class TianshouPolicy:
    """A trained Tianshou Q-policy as a docs/api.md policy: ``act(observation_dict) -> int``."""

    def __init__(self, policy: Any):
        self.policy = policy

    def act(self, observation: dict[str, np.ndarray]) -> int:
        import torch
        from tianshou.data import Batch

        batch = Batch(
            obs=Batch(obs=observation["observation"][None], mask=observation["action_mask"][None].astype(bool)),
            info=Batch(),
        )
        self.policy.eval()
        with torch.no_grad():
            return int(self.policy(batch).act[0])


def train(
    steps: int = 200_000,
    n_envs: int = 4,
    opponent: str = "simple",
    reward: str = "points",
    seed: int = 0,
    out: str | Path = "runs/tianshou_multiagent",
    eval_rounds: int = 200,
    audit: bool = False,
    lr: float = 1e-3,
    eps: float = 0.1,
) -> dict[str, Any]:
    """Train, save, reload, evaluate. ``steps`` counts env steps of both agents."""
    import torch
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams

    # Tianshou logs a warning per episode about the 2-D (per-agent) returns of multi-agent envs.
    logging.getLogger("tianshou.data.stats").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    np.random.seed(seed)
    env_options = {**DEFAULT_ENV_OPTIONS, "reward": reward}
    raw_envs: list[SeatSwap] = []

    def make_env() -> PettingZooEnv:
        # Points rewards reach +-100 or so; 1/25 keeps the Q-values near unit scale.
        env = SeatSwap(audit=audit, reward_scale=1 / 25 if reward == "points" else 1.0, **env_options)
        raw_envs.append(env)
        return PettingZooEnv(env)

    template = make_env()
    raw_envs.clear()
    observation_size = template.observation_space["observation"].shape[0]
    action_space = template.action_space
    learner = make_dqn(observation_size, action_space, lr, eps)
    if opponent == "dqn":
        other = make_dqn(observation_size, action_space, lr, eps)
    else:
        other = bot_algorithm(make_bot(opponent, seed=seed + 1), action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, other], env=template)

    train_envs = DummyVectorEnv([make_env for _ in range(n_envs)])
    train_envs.seed(seed)
    # Tianshou 2.0.1's trainer checks the whole replay buffer for NaNs after every collection
    # step (a copy of the buffer each time), so a modest buffer and large collection steps keep
    # that cost small.
    buffer = VectorReplayBuffer(20_000, n_envs)
    collector = Collector(algorithm, train_envs, buffer, exploration_noise=True)
    collector.reset()
    collect_per_step = min(256, max(16, steps // 8 // n_envs * n_envs))
    epoch_steps = min(steps, 10_000)
    params = OffPolicyTrainerParams(
        training_collector=collector,
        max_epochs=max(1, steps // epoch_steps),
        epoch_num_steps=epoch_steps,
        collection_step_num_env_steps=collect_per_step,
        update_step_num_gradient_steps_per_sample=1 / 8,  # one gradient step of 128 per 8 env steps
        batch_size=128,
        multi_agent_return_reduction=lambda returns: returns[:, 0],
        verbose=False,
        show_progress=False,
    )
    clock = Stopwatch()
    algorithm.run_training(params)
    train_seconds = clock.seconds()
    env_steps = sum(e.steps for e in raw_envs)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tianshou_dqn_learner.pt"
    torch.save(learner.policy.state_dict(), path)
    reloaded = make_dqn(observation_size, action_space, lr, eps)
    reloaded.policy.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    probe = okgin_env.env(**DEFAULT_ENV_OPTIONS)
    probe.reset(seed=seed + 999)
    observation = probe.observe(probe.agent_selection)
    if TianshouPolicy(learner.policy).act(observation) != TianshouPolicy(reloaded.policy).act(observation):
        raise AssertionError("reloaded policy acts differently")

    policy = TianshouPolicy(reloaded.policy)
    results: dict[str, Any] = {
        "framework": "Tianshou DQN (MultiAgentOffPolicyAlgorithm, PettingZooEnv)",
        "machine": machine_note(),
        "opponent_in_training": opponent,
        "reward": reward,
        "env_steps_both_agents": env_steps,
        "train_seconds": round(train_seconds, 2),
        "env_steps_per_second": round(env_steps / train_seconds, 1),
        "saved_to": str(path),
        **evaluation(policy, eval_rounds),
    }
    results["_objects"] = {
        "algorithm": algorithm,
        "learner": learner,
        "buffer": buffer,
        "raw_envs": raw_envs,
        "collector": collector,
    }
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="env steps (both agents) to train on")
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--opponent", default="simple", choices=["simple", "random", "dqn"])
    parser.add_argument("--reward", default="points", choices=["points", "win"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200)
    parser.add_argument("--out", default="runs/tianshou_multiagent")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    args = parser.parse_args(argv)
    results = train(
        steps=args.steps,
        n_envs=args.n_envs,
        opponent=args.opponent,
        reward=args.reward,
        seed=args.seed,
        out=args.out,
        eval_rounds=args.eval_rounds,
    )
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
