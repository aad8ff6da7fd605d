"""The argument checks of ``TensorEnv`` that are not about the game: which devices it runs on, and
how any non-negative int seed (as the AEC env takes) becomes a ``torch.Generator`` seed."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

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
        raise ValueError(f"device={device!r} is not usable here: {error}; {allowed}") from None


def generator_seed(seed: int) -> int:
    """The ``torch.Generator`` seed of a reset seed: itself below 2**63, else 63 bits of numpy's
    ``SeedSequence(seed)`` (any non-negative int, as the AEC env takes)."""
    if seed < BIG_SEED:
        return seed
    return int(np.random.SeedSequence(seed).generate_state(1, np.uint64)[0] >> np.uint64(1))


__all__ = ["BIG_SEED", "DEVICE_TYPES", "check_device", "generator_seed"]
