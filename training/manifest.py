"""One manifest per run folder: the settings a stage ran with, so that a resume with other
settings is refused instead of silently mixing two runs.

``write_manifest(run_dir, config)`` writes ``run_dir/config.json`` (the settings and their
hash); ``check_manifest(run_dir, config)`` raises a ``ValueError`` naming the settings that
differ from the recorded ones (or a damaged manifest file). Budgets (fields declared with
``setting(..., budget=True)``, such as a run's total decisions) may grow on a resume.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

MANIFEST = "config.json"


def config_dict(config: Any) -> dict[str, Any]:
    """A settings dataclass as plain JSON values (nested settings as dicts)."""
    return json.loads(json.dumps(dataclasses.asdict(config), sort_keys=True, default=str))


def runtime_fields(config: Any) -> set[str]:
    """The fields that say how a stage runs (processes, a cluster), not what it makes (``runtime=True``)."""
    return {item.name for item in dataclasses.fields(config) if item.metadata.get("runtime")}


def budget_fields(config: Any) -> set[str]:
    """The fields a resume may change: budgets and how the stage runs (``setting(..., budget=True)``
    or ``runtime=True``)."""
    return {item.name for item in dataclasses.fields(config)
            if item.metadata.get("budget") or item.metadata.get("runtime")}


def config_hash(config: Any) -> str:
    """The settings' hash, budgets left out."""
    kept = {key: value for key, value in config_dict(config).items() if key not in budget_fields(config)}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def write_manifest(run_dir: str | Path, config: Any) -> Path:
    path = Path(run_dir) / MANIFEST
    record = {"settings": type(config).__name__, "hash": config_hash(config), "config": config_dict(config)}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record, indent=2))
    partial.replace(path)
    return path


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def check_manifest(run_dir: str | Path, config: Any) -> None:
    """Nothing when ``run_dir`` has no manifest or the same settings; else a ``ValueError`` that
    names each differing setting with its recorded and its new value."""
    path = Path(run_dir) / MANIFEST
    if not path.exists():
        return
    try:
        record = json.loads(path.read_text())
        recorded = record["config"]
        if not isinstance(recorded, dict):
            raise TypeError("config is not an object")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is damaged ({type(error).__name__}: {error}); start a new run in another folder") from None
    check_same_settings(recorded, config, f"the run in {Path(run_dir)}")


def check_same_settings(recorded: dict[str, Any], config: Any, what: str) -> None:
    """A ``ValueError`` naming each setting of ``config`` that differs from ``recorded`` (a
    ``config_dict``), budgets and runtime fields left out."""
    old, new = _flat(recorded), _flat(config_dict(config))
    free = budget_fields(config)
    differing = [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in sorted(set(old) | set(new))
                 if old.get(key) != new.get(key) and key not in free]
    if differing:
        raise ValueError(f"--resume with other settings than {what} was started with ({'; '.join(differing)}); "
                         "resume with its settings, or start a new run in another folder")


__all__ = ["MANIFEST", "check_manifest", "check_same_settings", "config_dict", "config_hash", "runtime_fields",
           "write_manifest"]
