"""The one settings helper (``okgin_env.settings``): how a setting is declared, said and checked,
and that the rule options, the bots' settings and the training commands all declare theirs with it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from okgin_env.settings import checked, expected, field_of, in_range, range_text, setting


@dataclass(frozen=True)
class Example:
    count: int = setting(3, "how many", low=1, high=52)
    share: float = setting(0.5, "a share", above=0, high=1)
    scale: float = setting(1.0, "no upper bound", low=0.0)
    mode: str = setting("greedy", "a choice", choices=("greedy", "uniform"))
    path: str | None = setting(None, "a file", kind=str, nonempty=True)
    flag: bool = setting(True, "on or off")


def meta(name: str) -> dict:
    return field_of(Example, name).metadata


@pytest.mark.parametrize("name, value, ok", [
    ("count", 1, True), ("count", 52, True), ("count", 0, False), ("count", 53, False), ("count", True, False),
    ("count", 2.0, False), ("count", np.int64(7), True), ("share", 0, False), ("share", 1, True),
    ("share", float("nan"), False), ("share", 10**400, False), ("scale", 1e9, True), ("scale", -0.1, False),
    ("mode", "uniform", True), ("mode", "other", False), ("path", None, True), ("path", "", False),
    ("path", "a.pt", True), ("flag", np.True_, True), ("flag", 1, False), ("count", None, False),
])
def test_a_value_is_in_range_by_its_declared_type_and_bounds(name, value, ok):
    assert in_range(value, meta(name)) is ok


def test_what_a_setting_takes_is_said_in_words_and_refused_with_its_name():
    assert expected(meta("count")) == "an int in 1..52"
    assert expected(meta("share")) == "a number > 0 and <= 1"
    assert expected(meta("scale")) == "a number at least 0"
    assert expected(meta("mode")) == "'greedy' or 'uniform'"
    assert expected(meta("path")) == "a file path, or None"
    assert range_text(meta("count")) == "at least 1 and at most 52" and range_text(meta("flag")) == ""
    with pytest.raises(ValueError, match=r"^count=0 is not allowed; expected an int in 1\.\.52$"):
        checked("count", 0, meta("count"))
    assert type(checked("count", np.int64(7), meta("count"))) is int
    assert field_of(Example, "count").metadata["help"] == "how many"


def test_the_rules_the_bots_and_the_training_commands_declare_with_it():
    from okgin_env.bots.settings import LookaheadSettings, SearchSettings
    from okgin_env.rules.config import RulesConfig
    from training.train import Hyperparameters, TrainConfig

    for cls in (RulesConfig, SearchSettings, LookaheadSettings, TrainConfig, Hyperparameters):
        for item in dataclasses.fields(cls):
            assert {"kind", "low", "high", "above", "choices", "optional", "help"} <= set(item.metadata), (cls, item.name)


def test_a_training_setting_takes_pythons_own_bools_and_floats():
    """A numpy bool or float32 would be written to the manifest as text and refuse a later resume."""
    from training.cli import check_settings
    from training.train import TrainConfig

    with pytest.raises(ValueError, match="--outlook-features must be True or False, got np.True_"):
        check_settings(TrainConfig(outlook_features=np.True_))
    with pytest.raises(ValueError, match="--minutes must be a finite number"):
        check_settings(TrainConfig(minutes=np.float32(1.0)))
    check_settings(TrainConfig(minutes=2, num_tables=np.int64(8)))
