"""Checkpoints: save atomically, load safely, play from observations.

A checkpoint is the ``torch.save`` of a dict ``{"format": 1, "model": state_dict, "metadata":
{...}}`` (a run's ``last.pt`` also holds optimizer states). ``load_checkpoint`` reads it with
``weights_only=True`` (no code in the file runs) and checks every field before anything is
built from it: the metadata's types and values (``rules``, ``num_players``,
``observation_size``, ``hidden``, ``network``, the observation layout version), that it was made for the
rules the caller plays, and that every weight tensor has the shape the network expects and is
finite. Any problem is a ``CheckpointError`` naming the file and what is wrong. So a file of
another preset, a damaged file or a hostile one never reaches the network, and no size read
from a file is allocated before it is known to match the weights actually stored.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from okgin_env.echo import shown
from okgin_env.features import decision_features_of_facts, facts_of_state
from okgin_env.observation import OBSERVATION_VERSION, PackedEncoder, layout_for
from okgin_env.observation import view as observation_view
from okgin_env.policy_loaders import policy_file_path
from okgin_env.pretrained import is_pretrained
from okgin_env.rules.actions import NUM_ACTIONS
from okgin_env.rules.config import PRESETS, RulesConfig, is_int, make_config
from okgin_env.rules.round import Phase

from .features import (
    MAX_LEGAL_ACTIONS,
    decision_features,
    decision_features_batch,
)
from .model import NETWORKS, PolicyValueNet, SuitEquivariantNet, make_network, parameter_shapes
from .symmetry import SuitSymmetricNet

CHECKPOINT_FORMAT = 1
#: Widest network a checkpoint may describe (trained ones use 192): bounds what a file can make us build.
MAX_HIDDEN = 4096
#: What a file made before an option existed holds for it: its metadata lacks the key (and saving
#: leaves an mlp's ``network`` out, so that the older files keep their bytes).
ABSENT_METADATA = {"outlook_features": False, "suit_symmetric": False, "network": "mlp"}


def metadata_value(meta: dict[str, Any], key: str) -> Any:
    """``meta[key]``, or ``ABSENT_METADATA[key]`` for a file made before that option."""
    return meta.get(key, ABSENT_METADATA[key])


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt, or made for other rules or another observation layout."""


# ----------------------------------------------------------------------------- saving


def _host_state(model: PolicyValueNet) -> dict[str, Any]:
    """The model's state dict with its tensors on the CPU (a model trained on a GPU saves like any other)."""
    state = model.state_dict()
    if all(value.device.type == "cpu" for value in state.values()):
        return state
    host = type(state)((name, value.cpu()) for name, value in state.items())
    host._metadata = getattr(state, "_metadata", None)
    return host


def save_checkpoint(path: str | Path, model: nn.Module, metadata: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    """Write weights + metadata to ``path`` atomically (temporary file, then rename). A
    suit-symmetric player (``load_policy(..., suit_symmetric=True)``'s model) is saved as its
    network's weights with ``suit_symmetric: true``, which loads it back as it played."""
    if isinstance(model, SuitSymmetricNet):
        model, metadata = model.network, {"suit_symmetric": True, **metadata}
    write_checkpoint(path, {
        "format": CHECKPOINT_FORMAT,
        "model": _host_state(model),
        "metadata": {
            "observation_version": OBSERVATION_VERSION,
            "observation_size": model.observation_size,
            "hidden": model.encoder[0].out_features,
            "outlook_features": model.outlook,
            **({} if model.network == "mlp" else {"network": model.network}),  # the older files' bytes kept
            **metadata,
        },
        **(extra or {}),
    })


def write_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """``torch.save(payload)`` to a temporary file beside ``path``, then rename: an interrupted
    write never leaves a half-written ``path``. Serialised in memory first: saved to a file path,
    torch names the archive inside after the (random) temporary file, and the same payload would
    give other bytes each time (label manifests recognise a starting checkpoint by its bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(handle)
    try:
        Path(temporary).write_bytes(buffer.getvalue())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


# ----------------------------------------------------------------------------- loading and checking




def expected_rules(rules: str | RulesConfig | None, num_players: int | None) -> tuple[str | None, int | None]:
    """``(preset, player count)`` to check a file against (``None``: not checked); a
    ``RulesConfig`` gives both."""
    if isinstance(rules, RulesConfig):
        return rules.rules, rules.num_players if num_players is None else num_players
    if rules is not None and rules not in PRESETS:
        raise ValueError(f"rules={rules!r} is not a preset; allowed: {', '.join(PRESETS)}, a RulesConfig or None")
    if num_players is not None and not is_int(num_players):
        raise ValueError(f"num_players={num_players!r} is not an int")
    return rules, num_players


def load_checkpoint(path: str | Path, rules: str | RulesConfig | None = None, num_players: int | None = None) -> dict[str, Any]:
    """Read and check a checkpoint (see the module docstring); its payload dict. ``path`` may
    name a shipped policy: ``pretrained:classic`` (``okgin_env.pretrained``).

    ``rules`` (a preset name or a ``RulesConfig``) and ``num_players``: what the caller plays; a
    file made for anything else is refused. ``None``: not checked.
    """
    try:
        installed = policy_file_path(path)
    except ValueError as error:  # an unknown pretrained name, or settings that only a player spec takes
        raise CheckpointError(str(error)) from None
    if is_pretrained(path):  # pretrained:NAME: the shipped file; messages name the spec
        try:
            return load_checkpoint(installed, rules, num_players)
        except CheckpointError as error:
            raise CheckpointError(str(error).replace(installed, path)) from None
    want_rules, want_players = expected_rules(rules, num_players)
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} " + ("is not a regular file" if path.exists() else "does not exist"))
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a damaged or unsafe file
        raise CheckpointError(_unreadable(path, error)) from None
    if not isinstance(payload, dict) or not is_int(payload.get("format")) or payload["format"] != CHECKPOINT_FORMAT \
            or "model" not in payload:
        raise CheckpointError(f"checkpoint {path} is not an okgin policy checkpoint (format {CHECKPOINT_FORMAT})")
    meta = payload.get("metadata")
    if not isinstance(meta, dict):
        raise CheckpointError(f"checkpoint {path} has no metadata dict (got {type(meta).__name__})")
    _check_metadata(path, meta)
    if want_rules is not None and meta["rules"] != want_rules:
        raise CheckpointError(
            f"checkpoint {path} was trained for rules={meta['rules']!r}, not {want_rules!r}; "
            f"play it with rules={meta['rules']!r}, num_players={meta['num_players']}"
        )
    if want_players is not None and meta["num_players"] != want_players:
        raise CheckpointError(
            f"checkpoint {path} was trained for num_players={meta['num_players']}, not {want_players}; "
            f"play it with rules={meta['rules']!r}, num_players={meta['num_players']}"
        )
    _check_weights(path, payload["model"],
                   parameter_shapes(meta["observation_size"], meta["hidden"], metadata_value(meta, "outlook_features"),
                                    network=metadata_value(meta, "network")))
    return payload


def _unreadable(path: Path, error: Exception) -> str:
    """One line for a file torch.load(weights_only=True) refused: torch's own text is several lines
    of advice, including to load with weights_only=False, which would run whatever code the file holds."""
    text = str(error)
    code = re.search(r"Unsupported global: GLOBAL (\S+)", text)
    if code:
        return f"checkpoint {path} holds code ({code.group(1)}), not only weights, and is refused: reading it would run that code"
    reason = text.partition("WeightsUnpickler error:")[2].partition("Check the documentation")[0] or text
    reason = " ".join(reason.split()) or (  # (an empty file's EOFError has no message)
        "the file ends before its data (EOFError)" if isinstance(error, EOFError) else type(error).__name__)
    return f"checkpoint {path} cannot be read (corrupt or not a torch file): {reason}"


def _check_metadata(path: Path, meta: dict[str, Any]) -> None:
    """Types and values of the fields the network and the rules are built from."""
    version = meta.get("observation_version")
    if not is_int(version) or version != OBSERVATION_VERSION:
        raise CheckpointError(
            f"checkpoint {path} uses observation layout version {version}; this okgin_env uses version {OBSERVATION_VERSION}"
        )
    for name in ("rules", "num_players", "observation_size", "hidden"):
        if name not in meta:
            raise CheckpointError(f"checkpoint {path}: metadata has no {name!r}")
    rules, players, size, hidden = meta["rules"], meta["num_players"], meta["observation_size"], meta["hidden"]
    if not isinstance(rules, str) or rules not in PRESETS:
        raise CheckpointError(f"checkpoint {path}: metadata rules={rules!r}; allowed: {', '.join(PRESETS)}")
    if not is_int(players):
        raise CheckpointError(f"checkpoint {path}: metadata num_players={players!r} is not an int")
    try:
        make_config(rules, num_players=players)
    except ValueError as error:
        raise CheckpointError(f"checkpoint {path}: metadata {error}") from None
    expected_size = layout_for(players).size
    if not is_int(size) or size != expected_size:
        raise CheckpointError(
            f"checkpoint {path}: metadata observation_size={size!r}, but the {players}-player observation has {expected_size} entries"
        )
    if not is_int(hidden) or not 1 <= hidden <= MAX_HIDDEN:
        raise CheckpointError(f"checkpoint {path}: metadata hidden={hidden!r}; expected an int in 1..{MAX_HIDDEN}")
    for flag in ("outlook_features", "suit_symmetric"):
        if not isinstance(metadata_value(meta, flag), bool):
            raise CheckpointError(f"checkpoint {path}: metadata {flag}={meta[flag]!r}; expected true or false")
    network = metadata_value(meta, "network")
    if not isinstance(network, str) or network not in NETWORKS:
        raise CheckpointError(f"checkpoint {path}: metadata network={network!r}; allowed: {', '.join(map(repr, NETWORKS))}")


def _check_weights(path: Path, state: Any, shapes: dict[str, tuple[int, ...]]) -> None:
    """Exactly the network's tensors, each of its shape, floating point and finite."""
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path}: 'model' is a {type(state).__name__}, not a dict of tensors")
    missing = sorted(set(shapes) - set(state))
    unexpected = sorted(set(state) - set(shapes), key=str)
    if missing or unexpected:
        raise CheckpointError(f"checkpoint {path} does not match the network: missing {missing}, unexpected {unexpected}")
    for name, shape in shapes.items():
        tensor = state[name]
        if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.float32:
            raise CheckpointError(f"checkpoint {path}: weight {name} is not a float32 tensor")
        if tensor.layout != torch.strided or tensor.is_meta or tensor.device.type != "cpu":
            raise CheckpointError(f"checkpoint {path}: weight {name} is not a dense tensor on the CPU "
                                  f"(layout {tensor.layout}, device {tensor.device})")
        if tuple(tensor.shape) != shape:
            raise CheckpointError(
                f"checkpoint {path} does not match the network: weight {name} has shape {tuple(tensor.shape)}, "
                f"the metadata's sizes give {shape}"
            )
        if not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"checkpoint {path}: weight {name} holds NaN or infinite values")


def build_model(metadata: dict[str, Any]) -> PolicyValueNet | SuitEquivariantNet:
    """A freshly initialised network of the kind and sizes in ``metadata`` (draws from torch's RNG)."""
    return make_network(metadata_value(metadata, "network"), metadata["observation_size"],
                        hidden=metadata.get("hidden", 192), outlook=metadata_value(metadata, "outlook_features"))


def model_from_checkpoint(payload: dict[str, Any]) -> PolicyValueNet:
    """The network of a checked payload (``load_checkpoint``), built without touching torch's RNG."""
    with torch.random.fork_rng(devices=[]):
        model = build_model(payload["metadata"])
    model.load_state_dict(payload["model"])
    return model


# ----------------------------------------------------------------------------- playing


def encode_decision(observation: np.ndarray, mask: np.ndarray, num_players: int, outlook: bool = False):
    """Network inputs of one decision: (context, action features, action ids, legal flags, actions).
    ``outlook``: as the network's own ``outlook`` (the next-draw columns)."""
    view = observation_view({"observation": observation, "action_mask": mask})
    _check_players(view, num_players)
    actions = view.legal  # the mask's legal ids, ascending, as Python ints
    context, features = decision_features(view, actions, MAX_LEGAL_ACTIONS, outlook)
    ids, legal = _action_slots([actions], MAX_LEGAL_ACTIONS)
    return context, features, ids[0], legal[0], actions


def _check_players(view, num_players: int) -> None:
    if view.num_players != num_players:
        raise ValueError(f"the observation is for {view.num_players} players, the network for {num_players}")


def _action_slots(actions: list[list[int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, legal flags)``, one row of ``width`` slots per decision: its legal action ids, then
    padding (id ``NUM_ACTIONS``, flag False)."""
    ids = np.full((len(actions), width), NUM_ACTIONS, dtype=np.int64)
    legal = np.zeros((len(actions), width), dtype=bool)
    for row, legal_actions in enumerate(actions):
        ids[row, : len(legal_actions)] = legal_actions
        legal[row, : len(legal_actions)] = True
    return ids, legal


def encode_views(views, num_players: int, width: int = MAX_LEGAL_ACTIONS, outlook: bool = False):
    """``encode_decision`` of many decisions at once, stacked as tensors, from their views
    (``okgin_env.observation.view``, or ``view_of_state`` where the round state is at hand):
    ``((context, action features, action ids, legal flags), each decision's legal actions)``, the
    action rows cut to ``width`` (rows past a decision's legal actions are padding). Equal, row for
    row, to ``encode_decision`` (``tests/test_features.py``)."""
    for v in views:
        _check_players(v, num_players)
    actions = [v.legal for v in views]
    contexts, features = decision_features_batch(views, actions, width, outlook)
    ids, legal = _action_slots(actions, width)
    return tuple(torch.from_numpy(x) for x in (contexts, features, ids, legal)), actions


def encode_states(encoder: PackedEncoder, states, scores, observer: int | None = None, outlook: bool = False):
    """The network's inputs for the decision of the seat to act in each round state of ``states``
    (``observer``, if given, must be that seat in every one; the seats may differ otherwise),
    read straight from the states: ``((observations, context,
    action features, action ids, legal flags), each decision's legal actions)``, the action rows cut
    to the widest legal set. ``scores[k]`` are the match totals by seat of ``states[k]``;
    ``encoder`` is a ``PackedEncoder`` of the table's player count and target score. Equal, array
    for array, to stacking ``encode`` and ``encode_views`` of ``view_of_state`` (``tests/test_features.py``);
    what labelling's rollouts use, skipping the views."""
    if not states:
        raise ValueError("encode_states needs at least one round state")
    for st in states:
        if st.phase is Phase.OVER or st.num_players != encoder.num_players:
            raise ValueError(f"encode_states reads decisions of rounds in play at the encoder's {encoder.num_players}-player "
                             f"table; got a {st.num_players}-player round in phase {st.phase.name}")
    count = len(states)
    observations = np.zeros((count, encoder.size), dtype=np.float32)
    masks = np.empty((count, NUM_ACTIONS), dtype=np.int8)
    acting = encoder.unpack(encoder.pack_acting(states, range(count)),
                            np.asarray(scores, dtype=np.int64).reshape(count, -1), observations, masks)
    if observer is not None and np.any(acting != observer):
        raise ValueError(f"encode_states reads the decisions of the seat to act; seat {observer} is not to act in every state")
    actions = [list(st.legal_actions()) for st in states]
    width = max(len(legal) for legal in actions)
    contexts, features = decision_features_of_facts(
        [facts_of_state(st, st.current) for st in states], actions, width, outlook)
    ids, legal = _action_slots(actions, width)
    return tuple(torch.from_numpy(x) for x in (observations, contexts, features, ids, legal)), actions


def encode_batch(observations: np.ndarray, masks: np.ndarray, num_players: int, outlook: bool = False):
    """Network inputs for a batch of decisions, and each decision's legal actions."""
    views = [observation_view({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)]
    tensors, actions = encode_views(views, num_players, outlook=outlook)
    return (torch.from_numpy(np.asarray(observations, dtype=np.float32)), *tensors), actions


def decision_forward(model: PolicyValueNet, observation: np.ndarray, encoded: tuple) -> tuple[torch.Tensor, float]:
    """``(logits of the legal actions, value)`` of one decision: a forward pass of batch 1 of the
    observation and ``encode_decision``'s inputs ``encoded`` (whose last entry is the legal actions)."""
    inputs = (np.asarray(observation, dtype=np.float32), *encoded[:-1])
    with torch.no_grad():
        logits, value = model(*(torch.from_numpy(x[None]) for x in inputs))
    return logits[0, : len(encoded[-1])], float(value[0])


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
        if np.shape(mask) != (NUM_ACTIONS,):
            raise ValueError(f"action_mask must have shape ({NUM_ACTIONS},), got {np.shape(mask)}")
        if not np.any(mask):  # the same words as the bots
            raise ValueError("no legal action: this observation is not for the agent to act")
        return self.act_encoded(flat, encode_decision(flat, mask, self.num_players, self.model.outlook))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``act`` of many observations (M, obs_size) with their masks (M, 107) in one forward pass:
        the same actions as ``act`` one by one (greedy; sampled from this policy's generator
        otherwise). ``VectorGymEnv`` opponents and the search bot's playouts use it."""
        observations = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(masks)
        if observations.ndim != 2 or masks.shape != (observations.shape[0], NUM_ACTIONS):
            raise ValueError(f"observations (M, size) and masks (M, {NUM_ACTIONS}) expected, "
                             f"got {observations.shape} and {masks.shape}")
        if observations.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if layout_for(self.num_players).size != observations.shape[1]:
            raise ValueError(f"observations have {observations.shape[1]} entries; this policy expects the "
                             f"{self.num_players}-player layout")
        if not masks.any(axis=1).all():
            raise ValueError("no legal action: an observation of the batch is not for the agent to act")
        inputs, legal_actions = encode_batch(observations, masks, self.num_players, self.model.outlook)
        with torch.no_grad():
            logits, _ = self.model(*inputs)
        if self.greedy:
            chosen = logits.argmax(1).tolist()
        else:
            chosen = []
            for row, actions in zip(torch.softmax(logits, dim=-1).numpy().astype(np.float64), legal_actions):
                row = row[: len(actions)]
                chosen.append(int(self.rng.choice(len(actions), p=row / row.sum())) if len(actions) > 1 else 0)
        return np.array([actions[i] for actions, i in zip(legal_actions, chosen)], dtype=np.int64)

    def act_encoded(self, flat: np.ndarray, encoded: tuple) -> int:
        """``act`` of an observation whose inputs ``encode_decision`` already gave (``encoded``;
        ``flat`` its observation vector): for callers that encoded it for their own use."""
        actions = encoded[-1]
        if len(actions) == 1:
            return actions[0]
        logits, _ = decision_forward(self.model, flat, encoded)
        if self.greedy:
            return actions[int(torch.argmax(logits))]
        probabilities = torch.softmax(logits, dim=-1).numpy().astype(np.float64)
        return actions[int(self.rng.choice(len(actions), p=probabilities / probabilities.sum()))]


def load_policy(
    path: str | Path,
    greedy: bool = True,
    seed: int | None = None,
    threads: int | None = 1,
    *,
    rules: str | RulesConfig | None = "classic",
    num_players: int | None = None,
    suit_symmetric: bool | None = None,
) -> NetworkPolicy:
    """A policy object with ``act(observation) -> int`` from a checkpoint file, or from a shipped
    policy by name (``"pretrained:classic"``, ``okgin_env.pretrained``).

    ``rules`` and ``num_players``: what the policy will play (default: classic, two players, as
    ``okgin_env.env()``); a file trained for other rules or another player count raises
    ``CheckpointError``. ``rules`` may be a preset name (``num_players`` then defaults to that
    preset's own count), a ``RulesConfig`` (its preset and player count), or ``None`` to accept
    the file's own rules. ``threads``: torch CPU threads to use (default 1, the fastest for
    single observations; ``None`` leaves torch's setting alone). ``suit_symmetric``: average each
    decision over the renamings of the suits (``training.symmetry``; only those that keep spades
    where the table's ``spade_double`` is on); ``None``: as the file's metadata says (default
    off). Loading does not draw from torch's global random generator.
    """
    if threads is not None and (not is_int(threads) or threads < 1):
        raise ValueError(f"threads={threads!r}; allowed: None (torch's own setting) or a positive int")
    if isinstance(rules, str) and rules in PRESETS and num_players is None:
        num_players = make_config(rules).num_players
    payload = load_checkpoint(path, rules=rules, num_players=num_players)
    meta = payload["metadata"]
    model = model_from_checkpoint(payload)
    if suit_symmetric is None:
        suit_symmetric = metadata_value(meta, "suit_symmetric")
    if not isinstance(suit_symmetric, bool):
        raise ValueError(f"suit_symmetric must be True, False or None, got {shown(suit_symmetric)}")
    if suit_symmetric:
        table = rules if isinstance(rules, RulesConfig) else make_config(
            rules if isinstance(rules, str) else meta["rules"], num_players=meta["num_players"])
        model = SuitSymmetricNet(model, meta["num_players"], keep_spades=table.spade_double)
    return NetworkPolicy(model, meta["num_players"], greedy=greedy, seed=seed, threads=threads)
