"""Learner tables on the host: ``VectorGymEnv`` games (the numpy engine) behind the tables protocol
that ``training.train.collect_rollout`` steps.

The protocol, which ``training.tensor_rollout.TensorTables`` implements on a torch device too:

- ``device``: where the network and the rollout buffers live;
- ``reset(seed)``: deal every table and play until each learner is to act;
- ``learner_to_act()``: a bool tensor (N,), the tables whose learner is to act now;
- ``inputs(rows=None)``: the network's inputs of those learners' decisions (None: every table's),
  ``(observation, context, action features, action ids, legal)``;
- ``opponent_actions()``: an action id (N,) for every table whose learner is not to act;
- ``teacher_actions(rows)``: the imitation teacher's action ids for those learners' decisions;
- ``step(actions, active)``: play every active table once; ``(what the step paid each table's
  learner (N,), float; a round ended in it (N,), bool)``;
- ``close()``.

``HostTables`` also has ``set_opponent(table, player)``, with which ``training.league`` seats
self-play snapshots (the tensor tables play ``simple`` only).

Here every table's learner is to act after every step (``VectorGymEnv`` plays the opponents inside
its step), so a rollout takes T steps of the whole batch; the tensor tables step each game once per
engine step, whoever is to act.
"""

from __future__ import annotations

import numpy as np
import torch

from okgin_env.players import make_player
from okgin_env.rules.config import RulesConfig
from okgin_env.vector import VectorGymEnv

from .policy import encode_batch


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


class HostTables:
    """``num_tables`` ``VectorGymEnv`` games, the learner alternating seats; ``opponents`` one
    player (spec or object) per table; ``teacher`` the imitation phase's."""

    device = torch.device("cpu")

    def __init__(self, num_tables: int, opponents: list, rules: RulesConfig, episode: str, teacher: Teacher,
                 outlook: bool = False):
        self.env = VectorGymEnv(num_tables, opponents=opponents, learner_seat="alternate", rules=rules.rules,
                                num_players=rules.num_players, episode=episode, reward="points")
        self.num_players = rules.num_players
        self.teacher = teacher
        self.outlook = outlook
        self.observations = self.masks = None

    def reset(self, seed: int) -> None:
        self.observations, infos = self.env.reset(seed=seed)
        self.masks = infos["action_mask"]

    def learner_to_act(self) -> torch.Tensor:
        return torch.ones(self.env.num_envs, dtype=torch.bool)

    def inputs(self, rows: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        # every table's: after each step every learner is to act, so ``rows`` is always all of them
        return encode_batch(self.observations, self.masks, self.num_players, self.outlook)[0]

    def opponent_actions(self) -> torch.Tensor:
        return torch.zeros(self.env.num_envs, dtype=torch.long)  # never read: opponents play inside step

    def teacher_actions(self, rows: torch.Tensor) -> torch.Tensor:
        return torch.tensor(self.teacher.actions(self.env, self.observations, self.masks))

    def step(self, actions: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.observations, rewards, terminated, truncated, infos = self.env.step(actions.numpy())
        self.masks = infos["action_mask"]
        # One round is one GAE episode: it ends when a round (or the match) ended during the step.
        ended = terminated | truncated | infos.get("_round_outcome", np.zeros(len(actions), dtype=bool))
        return torch.from_numpy(np.asarray(rewards, dtype=np.float64)), torch.from_numpy(ended)

    def set_opponent(self, table: int, opponent) -> None:
        """Seat ``opponent`` at ``table`` (self-play snapshots, ``training.league``)."""
        self.env.set_opponent(table, opponent)

    def close(self) -> None:
        self.env.close()


__all__ = ["HostTables", "Teacher"]
