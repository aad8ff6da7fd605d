"""Tianshou multi-agent training on the PettingZoo env: masked PPO through Tianshou's PettingZoo adapter.

The AEC env goes through ``tianshou.env.PettingZooEnv`` (which turns each observation into
``{"agent_id", "obs", "mask"}``) into a ``MultiAgentOnPolicyAlgorithm`` that dispatches every
transition to the algorithm of the agent that acted: a ``LearnerPPO`` (Tianshou's ``PPO`` with a
``DiscreteActorPolicy``), against either a fixed bot (``--opponent simple|random``, wrapped as a
non-learning Tianshou algorithm) or a second ``LearnerPPO`` (``--opponent ppo``: two independent
learners).

``SeatSwap`` renames the env's agents ``"learner"`` / ``"opponent"`` and swaps their seats each
episode, so one PPO learns both seats (Tianshou's multi-agent manager keys algorithms by agent
name, and the observation says which seat is playing).

The networks are Tianshou custom nets around ``examples/_percard.py``: ``CardActor`` (the
actor: ``PerCardNet`` logits, with the actions that ``"mask"`` forbids set to -1e9, so they are
never sampled and never the mode) and ``CardCritic`` (the value), one small network shared by
the 52 cards (``--network percard``, the default; ``--network mlp``: two layers over the flat
array). With ``--observation features`` (the default) the env appends the solver features of
``okgin_env.features`` to the card planes; ``--observation cards`` trains on the planes alone.

**Returns across the opponent's moves.** Tianshou keeps every agent's steps in one buffer, in
play order, with the reward vector of all agents on each row; a round often ends on the
opponent's move (its knock), so the learner's result lands on a row of the opponent's. PPO's own
GAE would read only the learner's rows and never see it. ``LearnerPPO`` therefore computes the
advantages over its own decisions: each decision's reward is the agent's reward summed up to
its next decision (or to the end of the round), its successor is that next decision, and
decisions of a round still running when the collection stops are left out of that update.
The reward is the round's points (``--reward points``, scaled by 1/25), undiscounted.

    pip install -e ".[tianshou]"
    python examples/tianshou_multiagent.py --eval-rounds 1000 --eval-matches 200 --results runs/tianshou/results.json

Prints (and with ``--results FILE`` writes) a JSON summary like the other examples.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require  # noqa: E402

require(("torch", "tianshou"), "tianshou")

import numpy as np
import torch
from torch import nn

# Tianshou draws a tqdm bar for every gradient-update step even with show_progress=False.
os.environ.setdefault("TQDM_DISABLE", "1")

from _common import DEFAULT_ENV_OPTIONS, Stopwatch, check_legal, evaluation, machine_note, write_results  # noqa: E402
from _percard import OBSERVATION_DEFAULT, add_network_arguments, as_model_input, make_network  # noqa: E402
from _versus_simple import evaluate_vs_simple  # noqa: E402

import okgin_env  # noqa: E402
from okgin_env.bots import make_bot  # noqa: E402
from okgin_env.observation import check_observation  # noqa: E402
from pettingzoo import AECEnv  # noqa: E402
from tianshou.utils.net.common import ActionReprNet  # noqa: E402

AGENTS = ("learner", "opponent")
OPPONENTS = ("simple", "random", "ppo")


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


MASKED_LOGIT = -1e9  # an illegal action's logit: probability exp(-1e9) = 0, and no inf in the loss


def _values_and_mask(obs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The flat observation (float32) and the mask (bool, or None) of a Tianshou ``obs`` entry."""
    if hasattr(obs, "obs"):  # a Batch of {"agent_id", "obs", "mask"}
        values, mask = obs.obs, getattr(obs, "mask", None)
    else:
        values, mask = obs, None
    values = torch.as_tensor(np.asarray(values) if not isinstance(values, torch.Tensor) else values, dtype=torch.float32)
    if mask is not None:
        mask = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask).bool()
    return values, mask


class CardActor(ActionReprNet):
    """Tianshou actor: ``obs`` -> action logits, illegal actions at ``MASKED_LOGIT``."""

    def __init__(self, network: str, observation: str, hidden: int):
        super().__init__()
        self.net = make_network(network, observation, "logits", hidden)

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        values, mask = _values_and_mask(obs)
        logits = self.net(values)
        if mask is not None:
            logits = logits.masked_fill(~mask, MASKED_LOGIT)
        return logits, state


class CardCritic(nn.Module):
    """Tianshou critic: ``obs`` -> state value ``[B, 1]``."""

    def __init__(self, network: str, observation: str, hidden: int):
        super().__init__()
        self.net = make_network(network, observation, "value", hidden)

    def forward(self, obs: Any, **kwargs: Any) -> torch.Tensor:
        return self.net(_values_and_mask(obs)[0])


def learner_returns(batch_agent_ids: np.ndarray, indices: np.ndarray, buffer: Any) -> dict[str, np.ndarray]:
    """For an agent's rows ``indices`` of ``buffer`` (all of them, in any order): the reward up to
    the agent's next decision, whether the round ended before it, the position (in ``indices``)
    of that next decision (-1 if none), and whether the round finished within the buffer.

    ``buffer.rew`` is that agent's reward column (as Tianshou's multi-agent dispatcher sets it
    while the agent's algorithm preprocesses its rows).
    """
    agent = batch_agent_ids[0]
    owner = np.asarray(buffer.obs.agent_id)
    rew, done = np.asarray(buffer.rew, dtype=np.float64), np.asarray(buffer.done, dtype=bool)
    position = {int(index): k for k, index in enumerate(indices)}
    n = len(indices)
    gain, ended = np.zeros(n), np.zeros(n, dtype=bool)
    successor, finished = np.full(n, -1), np.ones(n, dtype=bool)
    for k, index in enumerate(indices):
        row = int(index)
        total = rew[row]
        while True:
            if done[row]:
                ended[k] = True
                break
            following = int(buffer.next(row))
            if following == row:  # the data stops inside this round
                finished[k] = False
                break
            if owner[following] == agent:
                if following in position:
                    successor[k] = position[following]
                else:
                    finished[k] = False
                break
            total += rew[following]
            row = following
        gain[k] = total
    # A decision whose successor's round did not finish did not finish either (same round).
    for k in np.argsort(-np.asarray(indices, dtype=np.int64), kind="stable"):
        if successor[k] >= 0 and not finished[successor[k]]:
            finished[k] = False
    return {"gain": gain, "ended": ended, "successor": successor, "finished": finished}


def gae_over_decisions(gain, ended, successor, values, indices, gamma: float, lmbda: float) -> np.ndarray:
    """GAE advantages along each decision's chain of successors (a successor comes later in its
    env's sub-buffer: Tianshou's on-policy trainer empties the buffer after every update)."""
    following_values = np.where(successor >= 0, values[np.maximum(successor, 0)], 0.0)
    delta = gain + gamma * (~ended) * following_values - values
    advantages = np.zeros(len(gain))
    for k in np.argsort(-np.asarray(indices, dtype=np.int64), kind="stable"):
        later = advantages[successor[k]] if successor[k] >= 0 and not ended[k] else 0.0
        advantages[k] = delta[k] + gamma * lmbda * later
    return advantages


def learner_ppo_class():
    """Tianshou's ``PPO`` with its advantages computed over the agent's own decisions."""
    from tianshou.algorithm import PPO
    from tianshou.data import to_torch_as

    class LearnerPPO(PPO):
        def _add_returns_and_advantages(self, batch, buffer, indices):  # noqa: ANN001
            chains = learner_returns(np.asarray(batch.obs.agent_id), np.asarray(indices), buffer)
            with torch.no_grad():
                values = torch.cat([self.critic(part.obs) for part in batch.split(self.max_batchsize, shuffle=False, merge_last=True)]).flatten()
            advantages = gae_over_decisions(
                chains["gain"], chains["ended"], chains["successor"], values.numpy().astype(np.float64), indices,
                self.gamma, self.gae_lambda,
            )
            batch.v_s = values
            batch.returns = to_torch_as(advantages + values.numpy(), values)
            batch.adv = to_torch_as(advantages, values)
            kept = batch[np.flatnonzero(chains["finished"])]
            self.last_chains, self.last_batch = chains, kept  # what the latest update trained on (for tests)
            return kept

    return LearnerPPO


def make_ppo(action_space: Any, network: str, observation: str, hidden: int, lr: float, gamma: float, entropy: float):
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory

    policy = DiscreteActorPolicy(
        actor=CardActor(network, observation, hidden), action_space=action_space, deterministic_eval=False
    )
    return learner_ppo_class()(
        policy=policy, critic=CardCritic(network, observation, hidden), optim=AdamOptimizerFactory(lr=lr),
        eps_clip=0.2, vf_coef=0.5, ent_coef=entropy, max_grad_norm=1.0, gae_lambda=0.95, gamma=gamma,
        max_batchsize=1024, advantage_normalization=True,
    )


def bot_algorithm(bot: Any, action_space: Any):
    """A fixed okgin bot as a (non-learning) Tianshou on-policy algorithm."""
    from tianshou.algorithm.algorithm_base import OnPolicyAlgorithm, TrainingStats
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

    class BotAlgorithm(OnPolicyAlgorithm):
        def __init__(self) -> None:
            super().__init__(policy=BotPolicy())

        def _update_with_batch(self, batch, batch_size, repeat):  # noqa: ANN001
            return TrainingStats()

    return BotAlgorithm()


class TianshouPolicy:
    """A trained Tianshou actor policy as a docs/api.md policy: ``act(observation_dict) -> int``.

    Greedy: the legal action with the highest logit of the policy's actor. (The policy itself
    samples; Tianshou's multi-agent manager does not pass its training-step flag on to the
    agents' policies, so their ``deterministic_eval`` would also make them greedy while they
    collect training data.)
    """

    def __init__(self, policy: Any, observation: str = OBSERVATION_DEFAULT):
        self.policy = policy
        self.observation = observation

    def act(self, observation: dict[str, np.ndarray]) -> int:
        from tianshou.data import Batch

        # okgin_env.evaluate hands every policy card-layout observations: add the features if trained on them.
        values = as_model_input(observation, self.observation)
        obs = Batch(obs=values[None], mask=observation["action_mask"][None].astype(bool))
        self.policy.eval()
        with torch.no_grad():
            logits, _ = self.policy.actor(obs)
        return int(torch.argmax(logits[0]))


def train(
    steps: int = 400_000,
    n_envs: int = 8,
    collect_steps: int = 2048,
    epochs: int = 6,
    minibatch: int = 256,
    lr: float = 1e-3,
    gamma: float = 1.0,
    entropy: float = 0.01,
    network: str = "percard",
    hidden: int = 64,
    observation: str = OBSERVATION_DEFAULT,
    opponent: str = "simple",
    reward: str = "points",
    seed: int = 0,
    out: str | Path = "runs/tianshou_multiagent",
    eval_rounds: int = 200,
    eval_matches: int = 0,
    audit: bool = False,
    log: bool = False,
) -> dict[str, Any]:
    """Train, save, reload, evaluate. ``steps`` counts env steps of both agents (rounded up to
    whole epochs of 10 collections of ``collect_steps``); ``log`` prints
    progress to stderr before each collection."""
    from tianshou.algorithm.multiagent.marl import MultiAgentOnPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv
    from tianshou.trainer import OnPolicyTrainerParams

    check_observation(observation)
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent={opponent!r}; allowed: {', '.join(OPPONENTS)}")
    # Tianshou logs a warning per episode about the 2-D (per-agent) returns of multi-agent envs.
    logging.getLogger("tianshou.data.stats").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    np.random.seed(seed)
    env_options = {**DEFAULT_ENV_OPTIONS, "reward": reward, "observation": observation}
    raw_envs: list[SeatSwap] = []

    def make_env() -> PettingZooEnv:
        # Points rewards reach +-100 or so; 1/25 keeps the values near unit scale.
        env = SeatSwap(audit=audit, reward_scale=1 / 25 if reward == "points" else 1.0, **env_options)
        raw_envs.append(env)
        return PettingZooEnv(env)

    template = make_env()
    raw_envs.clear()
    action_space = template.action_space
    learner = make_ppo(action_space, network, observation, hidden, lr, gamma, entropy)
    if opponent == "ppo":
        other = make_ppo(action_space, network, observation, hidden, lr, gamma, entropy)
    else:
        other = bot_algorithm(make_bot(opponent, seed=seed + 1), action_space)
    algorithm = MultiAgentOnPolicyAlgorithm(algorithms=[learner, other], env=template)

    train_envs = DummyVectorEnv([make_env for _ in range(n_envs)])
    train_envs.seed(seed)
    # Room for one collection (the on-policy trainer empties the buffer after each update).
    buffer = VectorReplayBuffer(2 * collect_steps + 2 * n_envs, n_envs)
    collector = Collector(algorithm, train_envs, buffer, exploration_noise=True)
    collector.reset()

    def report(epoch: int, env_step: int) -> None:
        """Progress on stderr before each collection (with ``log``): the latest update's finished rounds."""
        chains = getattr(learner, "last_chains", None)
        if chains is None or not log:
            return
        results = chains["gain"][chains["ended"] & chains["finished"]]
        print(f"epoch {epoch}: {env_step} env steps, {clock.seconds():.0f} s; latest update: {len(results)} rounds, "
              f"won {float((results > 0).mean()) if len(results) else float('nan'):.3f}", file=sys.stderr, flush=True)

    epoch_steps = min(steps, 10 * collect_steps)
    params = OnPolicyTrainerParams(
        training_collector=collector,
        max_epochs=max(1, -(-steps // epoch_steps)),
        epoch_num_steps=epoch_steps,
        collection_step_num_env_steps=collect_steps,
        update_step_num_repetitions=epochs,
        batch_size=minibatch,
        multi_agent_return_reduction=lambda returns: returns[:, 0],
        training_fn=report,
        verbose=False,
        show_progress=False,
    )
    clock = Stopwatch()
    algorithm.run_training(params)
    train_seconds = clock.seconds()
    env_steps = sum(e.steps for e in raw_envs)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tianshou_ppo_learner.pt"
    torch.save({"policy": learner.policy.state_dict(), "network": network, "observation": observation, "hidden": hidden}, path)
    saved = torch.load(path, map_location="cpu", weights_only=True)
    reloaded = make_ppo(action_space, saved["network"], saved["observation"], saved["hidden"], lr, gamma, entropy)
    reloaded.policy.load_state_dict(saved["policy"])
    probe = okgin_env.env(**DEFAULT_ENV_OPTIONS)
    probe.reset(seed=seed + 999)
    sample = probe.observe(probe.agent_selection)
    if TianshouPolicy(learner.policy, observation).act(sample) != TianshouPolicy(reloaded.policy, observation).act(sample):
        raise AssertionError("reloaded policy acts differently")

    policy = TianshouPolicy(reloaded.policy, observation)
    results: dict[str, Any] = {
        "framework": f"Tianshou {_version('tianshou')} PPO (MultiAgentOnPolicyAlgorithm, PettingZooEnv, {network} nets)",
        "machine": machine_note(),
        "observation": observation,
        "network": network,
        "opponent_in_training": opponent,
        "reward": reward,
        "env_steps_both_agents": env_steps,
        "train_seconds": round(train_seconds, 2),
        "env_steps_per_second": round(env_steps / train_seconds, 1),
        "saved_to": str(path),
        **evaluation(policy, eval_rounds),
        **evaluate_vs_simple(policy, eval_rounds, eval_matches),
    }
    results["_objects"] = {
        "algorithm": algorithm,
        "learner": learner,
        "buffer": buffer,
        "raw_envs": raw_envs,
        "collector": collector,
    }
    return results


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400_000, help="env steps (both agents) to train on (rounded up to whole epochs of 10 collections)")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--collect-steps", type=int, default=2048, help="env steps (both agents) per PPO update")
    parser.add_argument("--epochs", type=int, default=6, help="PPO epochs per update")
    parser.add_argument("--minibatch", type=int, default=256, help="decisions per gradient step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=1.0, help="discount per learner decision")
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus coefficient")
    add_network_arguments(parser)
    parser.add_argument("--opponent", default="simple", choices=OPPONENTS)
    parser.add_argument("--reward", default="points", choices=["points", "win"],
                        help="points: the round's score (scaled by 1/25); win: +1/-1 for the round's winner/loser")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200, help="rounds per evaluation")
    parser.add_argument("--eval-matches", type=int, default=0, help="whole matches against simple through okgin_env.evaluate")
    parser.add_argument("--out", default="runs/tianshou_multiagent")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    parser.add_argument("--log", action=argparse.BooleanOptionalAction, default=True,
                        help="print progress to stderr before each collection (--no-log: quiet)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.n_envs < 1 or args.collect_steps < args.n_envs or args.minibatch < 2 or args.eval_rounds < 1 or args.eval_matches < 0:
        parser.error("--steps, --n-envs and --eval-rounds must be at least 1, --collect-steps at least --n-envs, "
                     "--minibatch at least 2, --eval-matches at least 0")  # exits 2 with the usage line
    settings = {key: value for key, value in vars(args).items() if key != "results"}
    results = train(**settings)
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
