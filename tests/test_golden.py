"""Golden fixed-seed behaviour (``tests/golden/record.py``): the environments, the batch engine,
the vector and single-agent Gymnasium views, the bots' decisions and the shipped policy's actions
must be exactly what they were when the golden file was recorded."""

from __future__ import annotations

import pytest

from tests.golden import record

GOLDEN = record.load_golden()


def _first_difference(expected, actual, path="") -> str:
    if type(expected) is not type(actual):
        return f"{path}: {expected!r} != {actual!r}"
    if isinstance(expected, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in expected or key not in actual:
                return f"{path}/{key}: present on one side only"
            found = _first_difference(expected[key], actual[key], f"{path}/{key}")
            if found:
                return found
        return ""
    if isinstance(expected, list):
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = _first_difference(e, a, f"{path}[{i}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}: length {len(expected)} != {len(actual)}"
        return ""
    return "" if expected == actual else f"{path}: {expected!r} != {actual!r}"


def _check(expected, actual):
    difference = _first_difference(expected, actual)
    assert not difference, f"behaviour differs from the golden recording at {difference}"


@pytest.mark.parametrize("key", sorted(GOLDEN["aec"]))
def test_aec_env(key):
    rules, n, episode, reward = key.split("/")
    _check(GOLDEN["aec"][key], record.plain(record.aec_trajectory(rules, int(n), episode, reward, seed=31 + int(n))))


@pytest.mark.parametrize("key", sorted(GOLDEN["batch"]))
def test_batch_env(key):
    rules, n, episode, reward = key.split("/")
    seed, steps = (51 + int(n), 300) if episode == "match" else (61 + int(n), 150)
    _check(GOLDEN["batch"][key], record.plain(record.batch_trajectory(rules, int(n), episode, reward, seed, steps)))


@pytest.mark.parametrize("key", sorted(GOLDEN["vector_gym"]))
def test_vector_gym_env(key):
    rules, n = key.split("/")
    _check(GOLDEN["vector_gym"][key], record.plain(record.vector_gym_trajectory(rules, int(n), seed=71 + int(n))))


def test_gym_env():
    _check(GOLDEN["gym"], record.plain(record.gym_trajectory(seed=81)))


def test_bot_decisions():
    _check(GOLDEN["bots"], record.plain(record.bot_decisions()))


def test_shipped_policy_decisions():
    pytest.importorskip("torch")
    actual = record.policy_decisions()
    assert actual["actions"] == GOLDEN["policy"]["actions"]
    for i, (expected, got) in enumerate(zip(GOLDEN["policy"]["logits"], actual["logits"])):
        assert got == pytest.approx(expected, abs=1e-4), f"logits of position {i}"
