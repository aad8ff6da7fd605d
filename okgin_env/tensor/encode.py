"""The observation codec on the device: ``okgin_env.observation.encode`` for rows of a ``TensorEnv``.

Bit for bit the numpy codec's vector (``tests/test_tensor.py`` compares them), built from the
env's state tensors for many games and seats at once; with ``observation="features"`` followed by
the solver features (``okgin_env.tensor.features``).
"""

from __future__ import annotations

import torch

from ..observation import TARGET_SCALE
from ..observation.layout import KNOCK_LIMIT_SCALE, STOCK_SCALE
from ..rules.cards import NUM_CARDS
from ..rules.round import Phase
from .features import solver_features

_DISCARD, _OVER = int(Phase.DISCARD), int(Phase.OVER)


def encode_observations(env, rows: torch.Tensor, observer: torch.Tensor, over: bool,
                        mask: torch.Tensor) -> torch.Tensor:
    """Observations (len(rows), D) of seat ``observer[j]`` in game ``rows[j]``; ``over``: the
    round has ended (the opponents' hands are shown), as ``observation.encode``; with
    ``observation="features"`` followed by the solver features of the view and its ``mask``."""
    k, p, dev = rows.numel(), env.num_players, env.device
    s = env.layout.slices
    obs = torch.zeros(k, env.obs_size, dtype=torch.float32, device=dev)
    obs[:, s["hand"]] = env.hands[rows, observer].float()
    current = env.current[rows]
    if not over:
        taken = env.taken_card[rows]
        has_taken = (taken >= 0) & (current == observer)
        obs[:, s["taken_card"]] = (torch.nn.functional.one_hot(taken.clamp(min=0), NUM_CARDS).bool()
                                   & has_taken[:, None]).float()
    pile_len = env.pile_len[rows]
    top = env.pile[rows, (pile_len - 1).clamp(min=0)]
    obs[:, s["discard_top"]] = (torch.nn.functional.one_hot(top, NUM_CARDS).bool() & (pile_len > 0)[:, None]).float()
    obs[:, s["discard_pile"]] = env.pile_mask[rows].float()
    obs[:, s["upcard"]] = torch.nn.functional.one_hot(env.upcard[rows], NUM_CARDS).float()
    for offset in range(1, p):
        seat = (observer + offset) % p
        shown = env.hands if over else env.known
        obs[:, s[f"opponent_{offset}_known"]] = shown[rows, seat].float()
        obs[:, s[f"opponent_{offset}_passed"]] = env.passed[rows, seat].float()
    # Numbers as the numpy codec computes them: in float64, then stored as float32.
    obs[:, s["knock_limit"]] = (env.knock_limit[rows].double() / KNOCK_LIMIT_SCALE).float()[:, None]
    stock_size = NUM_CARDS - env.stock_pos[rows]
    obs[:, s["stock_size"]] = (stock_size.double() / STOCK_SCALE).float()[:, None]
    phase = torch.full((k,), _OVER, dtype=torch.int64, device=dev) if over else env.phase[rows]
    obs[:, s["phase"]] = torch.nn.functional.one_hot(phase, 4).float()
    if not over:
        obs[:, s["acting_seat"]] = torch.nn.functional.one_hot((current - observer) % p, p).float()
    obs[:, s["seat_from_dealer"]] = torch.nn.functional.one_hot((observer - env.dealer[rows]) % p, p).float()
    target = env.config.target_score
    order = (observer[:, None] + torch.arange(p, device=dev)) % p
    obs[:, s["scores"]] = (env.totals[rows].gather(1, order).double() / target).float()
    obs[:, s["target_score"]] = target / TARGET_SCALE
    obs[:, s["reshuffles"]] = env.reshuffles[rows].float()[:, None]
    if env.observation == "features":
        size = env.layout.size
        opponents = [(observer + offset) % p for offset in range(1, p)]
        shown = env.hands if over else env.known
        known = torch.stack([shown[rows, seat] for seat in opponents]).any(0)
        passed = torch.stack([env.passed[rows, seat] for seat in opponents]).any(0)
        obs[:, size:] = solver_features(obs[:, s["hand"]].bool(), obs[:, s["discard_top"]].bool(),
                                        obs[:, s["discard_pile"]].bool(), known, passed, env.knock_limit[rows],
                                        mask, env._tables, solved=None if over else (
                                            env.phase[rows] == _DISCARD, env._hand_deadwood[rows],
                                            env._deadwood_after[rows]))
    return obs


__all__ = ["encode_observations"]
