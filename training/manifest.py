"""One manifest per run folder: the settings a stage ran with, so that a resume with other
settings is refused instead of silently mixing two runs.

``write_manifest(run_dir, config)`` writes ``run_dir/config.json`` (the settings, their hash
and where the run folder was); ``check_manifest(run_dir, config)`` raises a ``ValueError`` naming
the settings that differ from the recorded ones (or a damaged manifest file). Budgets (fields
declared with ``setting(..., budget=True)``, such as a run's total decisions) may grow on a resume.
A run folder may be copied or moved: a path setting is the same if it names the same file, or the
same place relative to the run folder (``same_setting``). A setting added after a run started is
missing from its record; it counts as recorded at its default (``with_defaults``), which is how
a new setting keeps the old behaviour, so the run still resumes with it left at its default. A
setting whose default is not what older runs did names that with ``setting(..., absent=VALUE)``
(``--network``: runs recorded before it trained the mlp); such a run resumes when the command
gives that value, and a resume that leaves it at today's default is refused by name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

MANIFEST = "config.json"


def config_dict(config: Any) -> dict[str, Any]:
    """A settings dataclass as plain JSON values (nested settings as dicts)."""
    return json.loads(json.dumps(dataclasses.asdict(config), sort_keys=True, default=str))


def with_defaults(recorded: Any, config: Any) -> Any:
    """``recorded`` (a ``config_dict`` of ``config``'s class) with the settings it lacks at their
    defaults, nested settings included: a record written before those settings existed."""
    if not isinstance(recorded, dict) or not dataclasses.is_dataclass(config):
        return recorded
    absent = {item.name: item.metadata["absent"] for item in dataclasses.fields(config) if "absent" in item.metadata}
    filled = {**config_dict(type(config)()), **absent, **recorded}  # (every setting has a default)
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        if item.name in recorded and dataclasses.is_dataclass(value):
            filled[item.name] = with_defaults(recorded[item.name], value)
    return filled


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


def run_place(run_dir: str | Path) -> dict[str, str]:
    """Where a run folder is and the working folder that relative paths start from: recorded beside
    settings, so that paths into the run folder still compare equal once it is copied or moved."""
    return {"run_dir": os.path.abspath(run_dir), "cwd": os.getcwd()}


def recorded_place(record: Any) -> dict[str, str] | None:
    """The ``run_place`` a record (a manifest, ``pipeline.json``) holds; None for one without."""
    place = record.get("place") if isinstance(record, dict) else None
    if isinstance(place, dict) and all(isinstance(place.get(key), str) for key in ("run_dir", "cwd")):
        return place
    return None


def _in_place(path: str, place: dict[str, str]) -> tuple[str, str]:
    """``path`` made absolute, and relative to the run folder."""
    absolute = os.path.normpath(os.path.join(place["cwd"], path))
    return absolute, os.path.relpath(absolute, place["run_dir"])


def same_setting(old: Any, new: Any, old_place: dict[str, str] | None, new_place: dict[str, str] | None) -> bool:
    """Whether a recorded setting (a JSON value; in dicts and lists, each item) agrees with a new
    one: equal, or (given both ``run_place``s) each of its comma-separated paths naming the same
    file or the same place relative to its run folder, so that a copied or moved run resumes."""
    if old == new:
        return True
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(same_setting(old[k], new[k], old_place, new_place) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(same_setting(a, b, old_place, new_place) for a, b in zip(old, new))
    if old_place is None or new_place is None or not isinstance(old, str) or not isinstance(new, str):
        return False
    olds, news = old.split(","), new.split(",")
    return len(olds) == len(news) and all(
        a == b or any(x == y for x, y in zip(_in_place(a, old_place), _in_place(b, new_place)))
        for a, b in zip(olds, news))


def write_manifest(run_dir: str | Path, config: Any) -> Path:
    path = Path(run_dir) / MANIFEST
    record = {"settings": type(config).__name__, "hash": config_hash(config), "config": config_dict(config),
              "place": run_place(run_dir)}
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
    check_same_settings(recorded, config, f"the run in {Path(run_dir)}", recorded_place(record), run_place(run_dir))


def check_same_settings(recorded: dict[str, Any], config: Any, what: str, old_place: dict[str, str] | None = None,
                        new_place: dict[str, str] | None = None) -> None:
    """A ``ValueError`` naming each setting of ``config`` that differs from ``recorded`` (a
    ``config_dict``), budgets and runtime fields left out; with the places of the recorded and the
    new run folder, paths are compared as ``same_setting`` does."""
    old, new = _flat(with_defaults(recorded, config)), _flat(config_dict(config))
    free = budget_fields(config)
    differing = [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in sorted(set(old) | set(new))
                 if key not in free and not same_setting(old.get(key), new.get(key), old_place, new_place)]
    if differing:
        raise ValueError(f"--resume with other settings than {what} was started with ({'; '.join(differing)}); "
                         "resume with its settings, or start a new run in another folder")


__all__ = ["MANIFEST", "check_manifest", "check_same_settings", "config_dict", "config_hash", "recorded_place",
           "run_place", "runtime_fields", "same_setting", "with_defaults", "write_manifest"]
