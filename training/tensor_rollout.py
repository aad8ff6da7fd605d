"""Learner rollouts on the tensor engine: the network, the games, their features and the ``simple``
opponent on one torch device, no per-game Python.

``TensorTables`` is ``VectorGymEnv``'s contract on a ``TensorEnv``: the learner plays one seat of
every game (a fixed seat, or ``"alternate"``: the other seat after each episode), the tensor
``simple`` (``okgin_env.tensor.simple``) plays the other, and ``learner_step`` returns once every
game waits for the learner again, with the learner's rewards since its last decision.
``collect_tensor_rollout`` fills ``training.train.Rollout`` buffers (on the device) from it with the
same network inputs, bit for bit, as ``collect_rollout`` computes on the host
(``okgin_env.tensor.network.decision_inputs``).
"""

from __future__ import annotations

import torch

from okgin_env.tensor import TensorEnv
from okgin_env.tensor.network import decision_inputs
from okgin_env.tensor.simple import simple_actions

from .model import PolicyValueNet


def resolve_device(device: str) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; otherwise the named device."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class TensorTables:
    """``num_tables`` games on ``device``; the learner at ``learner_seat`` (an int or ``"alternate"``)."""

    def __init__(self, num_tables: int, device: str | torch.device = "cpu", learner_seat: int | str = "alternate",
                 seed: int = 0, **env_options):
        self.env = TensorEnv(num_tables, device=device, illegal="report", **env_options)
        self.device = self.env.device
        self.alternate = learner_seat == "alternate"
        first = 0 if self.alternate else int(learner_seat)
        self.learner = torch.full((num_tables,), first, dtype=torch.int64, device=self.device)
        self._first = first
        self._seed = seed
        self._opponent_random = torch.Generator(device=self.device)
        self.teacher_random = torch.Generator(device=self.device)  # the imitation teacher's tie-breaks

    def reset(self, seed: int | None = None) -> None:
        """Deal every game and play the opponents until each game waits for the learner."""
        seed = self._seed if seed is None else seed
        self.env.reset(seed=seed)
        self._opponent_random.manual_seed(seed + 1)
        self.teacher_random.manual_seed(seed + 2)
        self.learner.fill_(self._first)
        self._advance_opponents(torch.zeros(self.env.num_envs, device=self.device),
                                torch.zeros(self.env.num_envs, dtype=torch.bool, device=self.device))

    def learner_step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Play the learner's ``actions`` (N,) in every game, then the opponents until the learner is
        to act again: ``(learner rewards since its decision (N,), a round ended meanwhile (N,))``."""
        out = self.env.step(actions)
        if bool(out.illegal.any()):
            raise ValueError(f"the learner's action is illegal in game {int(out.illegal.nonzero()[0, 0])}")
        rewards = out.rewards.gather(1, self.learner[:, None]).squeeze(1)
        ended = out.round_over.clone()
        self._switch_seats(out.terminated | out.truncated)
        return self._advance_opponents(rewards, ended)

    def _switch_seats(self, finished: torch.Tensor) -> None:
        if self.alternate:
            self.learner = torch.where(finished, (self.learner + 1) % self.env.num_players, self.learner)

    def _advance_opponents(self, rewards: torch.Tensor, ended: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        env = self.env
        while True:
            pending = env.current != self.learner
            if not bool(pending.any()):
                return rewards, ended
            out = env.step(simple_actions(env, generator=self._opponent_random), active=pending)
            rewards = rewards + torch.where(pending, out.rewards.gather(1, self.learner[:, None]).squeeze(1), 0.0)
            ended = ended | (out.round_over & pending)
            self._switch_seats((out.terminated | out.truncated) & pending)

    def close(self) -> None:
        pass

    def inputs(self) -> tuple[torch.Tensor, ...]:
        """The network's inputs of every game's learner decision: ``(observation, context, action
        features, action ids, legal)``."""
        return (self.env.observations, *decision_inputs(self.env))


def tensor_bootstrap_value(model: PolicyValueNet, tables: TensorTables) -> torch.Tensor:
    """The value of each table's next decision (where the rollout stopped)."""
    with torch.no_grad():
        return model(*tables.inputs())[1]


def collect_tensor_rollout(model: PolicyValueNet, tables: TensorTables, rollout, reward_scale: float,
                           imitate: bool = False) -> None:
    """``training.train.collect_rollout`` on the tensor engine: every table's learner decides once
    per step for T steps, sampled from the policy (``imitate``: the tensor ``simple`` chooses, the
    imitation phase's teacher); the buffers of ``rollout`` live on the device."""
    rollout.round_points, rollout.rounds = 0.0, 0
    points = torch.zeros((), dtype=torch.float64, device=tables.device)
    rounds = torch.zeros((), dtype=torch.int64, device=tables.device)
    for t in range(rollout.actions.shape[0]):
        inputs = tables.inputs()
        with torch.no_grad():
            logits, value = model(*inputs)
            distribution = torch.distributions.Categorical(logits=logits)
            if imitate:
                teacher = simple_actions(tables.env, generator=tables.teacher_random)
                chosen = (inputs[3] == teacher[:, None]).long().argmax(1)
            else:
                chosen = distribution.sample()
            log_prob = distribution.log_prob(chosen)
        actions = inputs[3].gather(1, chosen[:, None]).squeeze(1)
        rewards, round_ended = tables.learner_step(actions)
        points += rewards[round_ended].double().sum()
        rounds += round_ended.sum()
        (rollout.observations[t], rollout.contexts[t], rollout.action_features[t], rollout.action_ids[t],
         rollout.legal[t]) = inputs
        rollout.actions[t], rollout.log_probs[t], rollout.values[t] = chosen, log_prob, value
        rollout.rewards[t] = rewards / reward_scale
        rollout.round_ends[t] = round_ended.float()
    rollout.round_points, rollout.rounds = float(points), int(rounds)


__all__ = ["TensorTables", "collect_tensor_rollout", "resolve_device", "tensor_bootstrap_value"]
