"""The tensor engine: many games of gin as batched torch operations, on any torch device.

``TensorEnv`` (``okgin_env.tensor.env``) steps ``num_envs`` games with one call for all of them,
held in one ``TensorState`` value (``okgin_env.tensor.state``);
the meld solver it needs (``okgin_env.tensor.solver``) is batched torch code. Needs torch (the
``tensor`` or ``train`` extra); ``import okgin_env`` never loads it.
"""

from __future__ import annotations

from .env import TensorEnv, TensorStep
from .state import TensorState

__all__ = ["TensorEnv", "TensorState", "TensorStep"]
