"""What a PPO practitioner reads after each update, beside the losses: how well the value fits
(``explained_variance``) and what the learner did in the rollout (``behaviour``: the columns
``BEHAVIOUR`` of ``progress.csv`` and TensorBoard's ``behaviour/``)."""

from __future__ import annotations

from typing import Any

import torch

from okgin_env.rules.actions import KNOCK_BASE, TAKE_DISCARD

from .features import GIN_COLUMN

BEHAVIOUR = ("hands_won", "knock_rate", "gin_rate", "upcard_take_rate")  # behaviour()'s keys, in order


def explained_variance(predicted: torch.Tensor, target: torch.Tensor) -> float:
    """1 - Var(target - predicted) / Var(target): 1 for a perfect value, 0 for no better than a constant."""
    variance = float(target.var(correction=0))
    return float("nan") if variance == 0 else 1.0 - float((target - predicted).var(correction=0)) / variance


def behaviour(rollout: Any) -> dict[str, float]:
    """What the learner did over one rollout (a ``training.train.Rollout``), per round that ended in it: hands won, knocks and
    gins (``hands_won``, ``knock_rate``, ``gin_rate``), and the share of the upcards it could take
    that it took (``upcard_take_rate``)."""
    slot = rollout.actions[..., None]
    taken = rollout.action_ids.gather(-1, slot).squeeze(-1)
    taken_features = rollout.action_features.gather(
        2, slot[..., None].expand(-1, -1, 1, rollout.action_features.shape[-1])).squeeze(2)
    knocks = taken >= KNOCK_BASE
    could_take = ((rollout.action_ids == TAKE_DISCARD) & rollout.legal).any(-1)
    rounds = max(1, rollout.rounds)
    return {"hands_won": float(((rollout.rewards > 0) & (rollout.round_ends > 0)).sum()) / rounds,
            "knock_rate": float(knocks.sum()) / rounds,
            "gin_rate": float((knocks & (taken_features[..., GIN_COLUMN] == 1)).sum()) / rounds,
            "upcard_take_rate": float((taken == TAKE_DISCARD).sum()) / max(1, int(could_take.sum()))}
