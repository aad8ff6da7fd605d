"""The observation codec on the device: ``okgin_env.observation.encode`` for rows of a ``TensorEnv``,
built on ``seat_view_tensors``, the device's mirror of ``okgin_env.observation.seat_view``.

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
from .state import TensorState

_DISCARD, _OVER = int(Phase.DISCARD), int(Phase.OVER)


def seat_view_tensors(state: TensorState, rows: torch.Tensor, observer: torch.Tensor,
                      over: bool) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """``observation.seat_view`` for seat ``observer[j]`` of game ``rows[j]``, many at once:
    ``(planes, acting_seat, seat_from_dealer)``, ``planes`` (len(rows), P, 52) bool in the
    layout's card-plane order, ``acting_seat`` None when ``over`` (the round has ended: the
    opponents' hands are shown). ``tests/test_tensor.py`` checks it equals ``seat_view``."""
    p = state.num_players
    current = state.current[rows]
    to_act = (current == observer) & (not over)
    taken = state.taken_card[rows]
    pile_len = state.pile_len[rows]
    top = state.pile[rows, (pile_len - 1).clamp(min=0)]
    shown = state.hands if over else state.known
    planes = [state.hands[rows, observer],
              _one_hot(taken.clamp(min=0)) & (to_act & (taken >= 0))[:, None],
              _one_hot(top) & (pile_len > 0)[:, None],
              state.pile_mask[rows],
              _one_hot(state.upcard[rows])]
    for offset in range(1, p):
        seat = (observer + offset) % p
        planes += [shown[rows, seat], state.passed[rows, seat]]
    acting = None if over else (current - observer) % p
    return torch.stack(planes, 1), acting, (observer - state.dealer[rows]) % p


def _one_hot(cards: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(cards, NUM_CARDS).bool()


def encode_observations(env, state: TensorState, rows: torch.Tensor, observer: torch.Tensor, over: bool,
                        mask: torch.Tensor) -> torch.Tensor:
    """Observations (len(rows), D) of seat ``observer[j]`` in game ``rows[j]``; ``over``: the
    round has ended, as ``observation.encode``; with ``observation="features"`` followed by the
    solver features of the view and its ``mask``."""
    k, p, dev = rows.numel(), env.num_players, env.device
    s = env.layout.slices
    planes, acting, from_dealer = seat_view_tensors(state, rows, observer, over)
    obs = torch.zeros(k, env.obs_size, dtype=torch.float32, device=dev)
    obs[:, : planes.shape[1] * NUM_CARDS] = planes.flatten(1).float()
    # Numbers as the numpy codec computes them: in float64, then stored as float32.
    obs[:, s["knock_limit"]] = (state.knock_limit[rows].double() / KNOCK_LIMIT_SCALE).float()[:, None]
    stock_size = NUM_CARDS - state.stock_pos[rows]
    obs[:, s["stock_size"]] = (stock_size.double() / STOCK_SCALE).float()[:, None]
    phase = torch.full((k,), _OVER, dtype=torch.int64, device=dev) if over else state.phase[rows]
    obs[:, s["phase"]] = torch.nn.functional.one_hot(phase, 4).float()
    if acting is not None:
        obs[:, s["acting_seat"]] = torch.nn.functional.one_hot(acting, p).float()
    obs[:, s["seat_from_dealer"]] = torch.nn.functional.one_hot(from_dealer, p).float()
    target = env.config.target_score
    order = (observer[:, None] + torch.arange(p, device=dev)) % p
    obs[:, s["scores"]] = (state.totals[rows].gather(1, order).double() / target).float()
    obs[:, s["target_score"]] = target / TARGET_SCALE
    obs[:, s["reshuffles"]] = state.reshuffles[rows].float()[:, None]
    if env.observation == "features":
        size = env.layout.size
        known = planes[:, 5::2].any(1)
        passed = planes[:, 6::2].any(1)
        obs[:, size:] = solver_features(planes[:, 0], planes[:, 2], planes[:, 3], known, passed,
                                        state.knock_limit[rows], mask, env.meld_tables, solved=None if over else (
                                            state.phase[rows] == _DISCARD, state.hand_deadwood[rows],
                                            state.deadwood_after[rows]))
    return obs


__all__ = ["encode_observations", "seat_view_tensors"]
