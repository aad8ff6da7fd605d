"""Learner rollouts on the tensor engine: the network, the games, their features and the ``simple``
opponent on one torch device, no per-game Python.

``TensorTables`` is ``VectorGymEnv``'s contract on a ``TensorEnv``: the learner plays one seat of
every game (a fixed seat, or ``"alternate"``: the other seat after each episode), the tensor
``simple`` (``okgin_env.tensor.simple``) plays the other, and ``learner_step`` returns once every
game waits for the learner again, with the learner's rewards since its last decision.
It also implements the tables protocol (``training.host_tables``) over which
``training.train.collect_rollout`` fills the ``Rollout`` buffers (on the device), with the same
network inputs, bit for bit, as the host tables give (``okgin_env.tensor.network.decision_inputs``).
Its ``step`` does not play the tables in lockstep (the learner's move, then the opponents' until
every table waits for the learner: about 4 engine steps of the whole batch per learner decision,
most games idle): every engine step plays every game once, the learner's decisions (one forward
pass over the games where it is to act) and ``simple``'s in the others, about 2.2 engine steps per
learner decision; observations are encoded only for the learner's decisions
(``TensorEnv.step(observe=False)``, ``observe_rows``).

Threads: ``training.train.run`` sets torch's CPU threads to ``Hyperparameters.torch_threads`` (1)
on both paths; a caller that builds ``TensorTables`` itself on the CPU should call
``torch.set_num_threads(1)`` too (on a shared or small machine two threads measured up to 10x slower).
"""

from __future__ import annotations

import torch

from okgin_env.tensor import TensorEnv
from okgin_env.tensor.network import decision_inputs
from okgin_env.tensor.simple import simple_actions


def resolve_device(device: str) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; otherwise the named device."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def check_tensor_settings(config) -> None:
    """A ``ValueError`` naming the first setting of a ``training.train.TrainConfig`` with
    ``device`` set that the tensor engine does not take, or a CUDA device torch cannot find."""
    refused = [(config.rules not in ("classic", "standard"), f"--rules {config.rules}", "classic or standard"),
               (config.opponent_pool != "simple", f"--opponent-pool {config.opponent_pool!r}", "simple"),
               (config.bc_teacher != "simple", f"--bc-teacher {config.bc_teacher!r}", "simple"),
               (config.outlook_features, "--outlook-features", "off")]
    for wrong, what, allowed in refused:
        if wrong:
            raise ValueError(f"--device {config.device}: the tensor engine does not take {what}; allowed: {allowed}")
    if config.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch finds no CUDA device here; allowed: auto, cpu")


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
            pending = env.state.current != self.learner
            if not bool(pending.any()):
                return rewards, ended
            out = env.step(simple_actions(env.state, generator=self._opponent_random), active=pending)
            rewards = rewards + torch.where(pending, out.rewards.gather(1, self.learner[:, None]).squeeze(1), 0.0)
            ended = ended | (out.round_over & pending)
            self._switch_seats((out.terminated | out.truncated) & pending)

    # ---- the tables protocol of training.train.collect_rollout (see training.host_tables)

    def learner_to_act(self) -> torch.Tensor:
        return self.env.state.current == self.learner

    def opponent_actions(self) -> torch.Tensor:
        return simple_actions(self.env.state, generator=self._opponent_random)

    def teacher_actions(self, rows: torch.Tensor) -> torch.Tensor:
        return simple_actions(self.env.state, generator=self.teacher_random)[rows]

    def step(self, actions: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Every active game once, whoever is to act (observations are encoded only for the
        learner's next decisions, by ``inputs``): the learner's rewards and where a round ended."""
        out = self.env.step(actions, active=active, observe=False)
        if bool(out.illegal.any()):
            raise ValueError(f"an illegal action in game {int(out.illegal.nonzero()[0, 0])}")
        rewards = out.rewards.gather(1, self.learner[:, None]).squeeze(1)  # the seat's before any swap
        self._switch_seats(out.terminated | out.truncated)
        return rewards, out.round_over

    def close(self) -> None:
        pass

    def inputs(self, rows: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """The network's inputs of the decision to make in the games ``rows`` (default: every
        game, each at its learner's turn): ``(observation, context, action features, action ids, legal)``."""
        state = self.env.state
        if rows is None:
            rows = self.env.table_rows
        return (self.env.observe(state, rows, check_rows=False), *decision_inputs(state, rows=rows))  # rows: the engine's own


__all__ = ["TensorTables", "resolve_device"]
