"""The argument checks of ``TensorEnv`` that are not about the game: which devices it runs on, how
any non-negative int seed (as the AEC env takes) becomes a ``torch.Generator`` seed, and the decks,
dealers and actions it is given (each refused with a ValueError that says what is allowed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..echo import clipped, shown
from ..rules.actions import NUM_ACTIONS
from ..rules.cards import NUM_CARDS

#: The device types a TensorEnv runs on: real memory and a torch.Generator ("meta" has neither).
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu")
#: Seeds from here up are reduced to 63 bits through numpy's SeedSequence (torch's generator takes 64).
BIG_SEED = 1 << 63


def check_device(device: Any) -> torch.device:
    """``device`` as the ``torch.device`` its tensors report (``"cuda"`` becomes ``cuda:0``, ``"cpu:0"``
    ``cpu``), so that a state's device compares equal to its env's; ValueError naming what is allowed."""
    allowed = f"allowed: a {', '.join(DEVICE_TYPES)} device that torch can use here (e.g. 'cpu', 'cuda', 'cuda:0')"
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device={device!r} is not a torch device ({error}); {allowed}") from None
    if parsed.type not in DEVICE_TYPES:
        raise ValueError(f"device={device!r} is not allowed; {allowed}")
    try:
        return torch.zeros(1, device=parsed).device
    except (RuntimeError, TypeError, AssertionError) as error:  # CPU-only torch: AssertionError for cuda
        # (its first line, cut: torch's text for a backend it lacks lists its every dispatch key)
        reason = clipped((str(error).strip().splitlines() or [type(error).__name__])[0], 200)
        raise ValueError(f"device={device!r} is not usable here: {reason}; {allowed}") from None


def generator_seed(seed: int) -> int:
    """The ``torch.Generator`` seed of a reset seed: itself below 2**63, else 63 bits of numpy's
    ``SeedSequence(seed)`` (any non-negative int, as the AEC env takes)."""
    if seed < BIG_SEED:
        return seed
    return int(np.random.SeedSequence(seed).generate_state(1, np.uint64)[0] >> np.uint64(1))


def checked_decks(decks: Any, n: int, device: torch.device) -> torch.Tensor | None:
    """``reset``'s ``options["deck"]`` as an (n, 52) int64 tensor on ``device``: one permutation of
    the card ids per game, top first; None stays None."""
    if decks is None:
        return None
    try:
        tensor = torch.as_tensor(np.asarray(decks) if not isinstance(decks, torch.Tensor) else decks)
    except (TypeError, ValueError, RuntimeError):
        tensor = None
    if (tensor is None or tensor.shape != (n, NUM_CARDS) or tensor.dtype.is_floating_point or tensor.dtype.is_complex
            or tensor.dtype == torch.bool):
        raise ValueError(f"options['deck'] must be an integer tensor or array of shape ({n}, {NUM_CARDS}) "
                         f"(one deck of card ids per game, top first), got {decks!r:.80}")
    tensor = tensor.to(device=device, dtype=torch.int64)
    ok = (tensor.sort(1).values == torch.arange(NUM_CARDS, device=device)).all(1)
    if not bool(ok.all()):
        bad = int((~ok).nonzero()[0, 0])
        raise ValueError(f"options['deck'][{bad}] is not a permutation of the 52 card ids 0..51")
    return tensor


def checked_dealers(dealers: Any, n: int, num_players: int, device: torch.device) -> torch.Tensor | None:
    """``reset``'s ``options["dealer"]`` (one seat, or one per game) as an (n,) int64 tensor on
    ``device``; None stays None."""
    if dealers is None:
        return None
    p = num_players
    try:
        tensor = torch.as_tensor(np.asarray(dealers) if not isinstance(dealers, torch.Tensor) else dealers)
        if tensor.dtype == torch.uint64:  # (torch compares no uint64): its seats as int64, a huge one made negative
            tensor = torch.as_tensor(np.asarray(tensor.cpu().numpy()).astype(np.int64))
    except (TypeError, ValueError, RuntimeError, OverflowError):
        tensor = None
    if tensor is not None and tensor.dim() == 0:  # one seat for every game
        tensor = tensor.reshape(1).expand(n)
    if (tensor is None or tensor.shape != (n,) or tensor.dtype.is_floating_point or tensor.dtype == torch.bool
            or tensor.dtype.is_complex or bool(((tensor < 0) | (tensor >= p)).any())):
        raise ValueError(f"options['dealer'] must be one seat in 0..{p - 1} or ({n},) seats, got "
                         f"{' '.join(shown(dealers).split())}")
    return tensor.to(device=device, dtype=torch.int64)


def checked_actions(actions: Any, n: int, device: torch.device) -> tuple[torch.Tensor, np.ndarray | None]:
    """``step``'s actions as an (n,) int64 tensor on ``device``, and the actions as given where int64
    cannot hold them (huge uint64 ids, for the error message to name), else None."""
    given = None
    if isinstance(actions, torch.Tensor) and actions.dtype == torch.uint64:
        actions = actions.cpu().numpy()
    if not isinstance(actions, torch.Tensor):
        array = np.asarray(actions)
        if array.dtype == object or not (np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_):
            raise ValueError(f"actions must be integers (action ids 0..{NUM_ACTIONS - 1}), got dtype {array.dtype}")
        if array.dtype == np.uint64 and (array >= NUM_ACTIONS).any():  # int64 would wrap the largest
            given = array
            array = np.minimum(array, NUM_ACTIONS)  # out of range all the same
        actions = torch.as_tensor(array.astype(np.int64) if array.dtype != np.bool_ else array)
    if actions.shape != (n,):
        raise ValueError(f"actions must have shape ({n},) (one per game), got {tuple(actions.shape)}")
    if actions.dtype == torch.bool or actions.dtype.is_floating_point or actions.dtype.is_complex:
        raise ValueError(f"actions must be integers (action ids 0..{NUM_ACTIONS - 1}), got dtype {actions.dtype}")
    return actions.to(device=device, dtype=torch.int64), given


def checked_rows(rows: Any, n: int, device: torch.device) -> torch.Tensor:
    """``observe``'s game indices as a 1-D int64 tensor on ``device``: a tensor, array or list of
    ints in ``0..n-1`` (a bool mask is not indices: ``mask.nonzero().squeeze(1)`` gives them)."""
    allowed = f"allowed: a 1-D tensor, array or list of game indices 0..{n - 1}"
    if not isinstance(rows, torch.Tensor):
        array = np.asarray(rows)
        if array.dtype == object or not np.issubdtype(array.dtype, np.integer) or array.dtype == np.uint64:
            raise ValueError(f"rows must be integers, got dtype {array.dtype}; {allowed}")
        rows = torch.as_tensor(array.astype(np.int64))
    if rows.dim() != 1 or rows.dtype == torch.bool or rows.dtype.is_floating_point or rows.dtype.is_complex \
            or rows.dtype == torch.uint64:
        raise ValueError(f"rows must be 1-D integers, got shape {tuple(rows.shape)} of {rows.dtype}; {allowed}")
    rows = rows.to(device=device, dtype=torch.int64)
    if rows.numel() and not bool(((rows >= 0) & (rows < n)).all()):
        raise ValueError(f"rows hold {int(rows.min())}..{int(rows.max())}; {allowed}")
    return rows


__all__ = ["BIG_SEED", "DEVICE_TYPES", "check_device", "checked_actions", "checked_dealers", "checked_decks",
           "checked_rows", "generator_seed"]
