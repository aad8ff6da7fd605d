"""Checkpoints: save atomically, load safely (``weights_only=True``), play from observations."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from okgin_env.observation import OBSERVATION_VERSION, layout_for

from .features import MAX_LEGAL_ACTIONS, ObservationView, action_features, context_features
from .model import PolicyValueNet

CHECKPOINT_FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt, or made for other rules or another observation layout."""


def save_checkpoint(path: str | Path, model: PolicyValueNet, metadata: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    """Write weights + metadata to ``path`` atomically (temporary file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "model": model.state_dict(),
        "metadata": {
            "observation_version": OBSERVATION_VERSION,
            "observation_size": model.observation_size,
            "hidden": model.encoder[0].out_features,
            **metadata,
        },
        **(extra or {}),
    }
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(handle)
    try:
        torch.save(payload, temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def load_checkpoint(path: str | Path, rules: str | None = None, num_players: int | None = None) -> dict[str, Any]:
    """Load and check a checkpoint; clear errors name the file and what does not match."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a damaged file
        raise CheckpointError(f"checkpoint {path} cannot be read (corrupt or not a torch file): {error}") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT or "model" not in payload:
        raise CheckpointError(f"checkpoint {path} is not an okgin policy checkpoint (format {CHECKPOINT_FORMAT})")
    meta = payload["metadata"]
    if meta.get("observation_version") != OBSERVATION_VERSION:
        raise CheckpointError(
            f"checkpoint {path} uses observation layout version {meta.get('observation_version')}; "
            f"this okgin_env uses version {OBSERVATION_VERSION}"
        )
    if rules is not None and meta.get("rules") != rules:
        raise CheckpointError(f"checkpoint {path} was trained for rules={meta.get('rules')!r}, not {rules!r}")
    if num_players is not None and meta.get("num_players") != num_players:
        raise CheckpointError(
            f"checkpoint {path} was trained for num_players={meta.get('num_players')}, not {num_players}"
        )
    return payload


def build_model(metadata: dict[str, Any]) -> PolicyValueNet:
    return PolicyValueNet(metadata["observation_size"], hidden=metadata.get("hidden", 192))


def encode_decision(observation: np.ndarray, mask: np.ndarray, num_players: int):
    """Network inputs of one decision: (context, action features, action ids, legal flags, actions)."""
    view = ObservationView(observation, num_players)
    actions = [int(a) for a in np.flatnonzero(mask)]
    features = np.zeros((MAX_LEGAL_ACTIONS, action_features(view, []).shape[1]), dtype=np.float32)
    features[: len(actions)] = action_features(view, actions)
    ids = np.full(MAX_LEGAL_ACTIONS, 107, dtype=np.int64)
    ids[: len(actions)] = actions
    legal = np.zeros(MAX_LEGAL_ACTIONS, dtype=bool)
    legal[: len(actions)] = True
    return context_features(view), features, ids, legal, actions


class NetworkPolicy:
    """``act(observation) -> int`` from a trained network; greedy by default."""

    def __init__(
        self, model: PolicyValueNet, num_players: int, greedy: bool = True, seed: int | None = None, threads: int | None = 1
    ):
        if threads is not None:
            # One observation at a time is fastest on one thread; with more, torch's threads spin
            # against each other on a busy machine (measured: 0.6 ms per decision vs 49 ms on 2 cores).
            torch.set_num_threads(threads)
        self.model = model.eval()
        self.num_players = num_players
        self.greedy = greedy
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict[str, np.ndarray]) -> int:
        flat, mask = observation["observation"], observation["action_mask"]
        if layout_for(self.num_players).size != flat.shape[-1]:
            raise ValueError(
                f"observation has {flat.shape[-1]} entries; this policy expects the {self.num_players}-player layout"
            )
        context, features, ids, legal, actions = encode_decision(flat, mask, self.num_players)
        if len(actions) == 1:
            return actions[0]
        with torch.no_grad():
            logits, _ = self.model(
                torch.from_numpy(flat[None].astype(np.float32)),
                torch.from_numpy(context[None]),
                torch.from_numpy(features[None]),
                torch.from_numpy(ids[None]),
                torch.from_numpy(legal[None]),
            )
        logits = logits[0, : len(actions)]
        if self.greedy:
            return actions[int(torch.argmax(logits))]
        probabilities = torch.softmax(logits, dim=-1).numpy().astype(np.float64)
        return actions[int(self.rng.choice(len(actions), p=probabilities / probabilities.sum()))]


def load_policy(path: str | Path, greedy: bool = True, seed: int | None = None, threads: int | None = 1) -> NetworkPolicy:
    """A policy object with ``act(observation) -> int`` from a checkpoint file.

    ``threads``: torch CPU threads to use (default 1, the fastest for single observations;
    ``None`` leaves torch's setting alone).
    """
    payload = load_checkpoint(path)
    meta = payload["metadata"]
    model = build_model(meta)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError as error:
        raise CheckpointError(f"checkpoint {path} does not match the network: {error}") from None
    return NetworkPolicy(model, meta["num_players"], greedy=greedy, seed=seed, threads=threads)
