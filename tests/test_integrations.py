"""The framework examples (examples/) end to end on a tiny budget: train, save, reload, evaluate.

Each test is marked ``integration`` and skips when its framework is not installed, so the
default suite stays green without them; CI installs ``.[integrations]`` and runs
``pytest -m integration tests/test_integrations.py`` in a separate step.

Besides "it runs", each test checks the mask contract on the learning side: the masks that the
framework stored with its training data are exactly the masks the env gave, no stored or sent
action lies outside its mask (every env in the examples also checks each action before stepping,
and okgin itself raises on an illegal one), and the trained policy gives no probability / never
picks an action outside the mask.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import okgin_env

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def real_observations(count: int, seed: int = 3) -> list[dict[str, np.ndarray]]:
    """Observations of the agent to act, from rounds of random play (varied phases and masks)."""
    env = okgin_env.env(episode="round")
    rng = np.random.default_rng(seed)
    found: list[dict[str, np.ndarray]] = []
    game = 0
    while len(found) < count:
        env.reset(seed=seed + game)
        game += 1
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            if rng.random() < 0.2:
                found.append({k: v.copy() for k, v in observation.items()})
            legal = np.flatnonzero(observation["action_mask"])
            env.step(int(rng.choice(legal)))
    return found[:count]


def check_eval(results: dict) -> None:
    for key in ("eval_vs_random", "eval_vs_simple"):
        summary = results[key]
        assert summary["wins"] + summary["losses"] + summary["draws"] == summary["rounds"] > 0
        assert 0.0 <= summary["win_rate"] <= 1.0
    assert results["env_steps_per_second"] > 0


def test_sb3_maskable_ppo(tmp_path):
    pytest.importorskip("sb3_contrib")
    import torch

    example = load_example("sb3_maskable_ppo")
    n_envs, n_steps = 2, 128
    results = example.train(
        timesteps=2 * n_envs * n_steps, n_envs=n_envs, n_steps=n_steps, eval_rounds=4, keep_masks=n_steps, out=tmp_path
    )
    check_eval(results)
    assert (tmp_path / "maskable_ppo_okgin.zip").is_file()
    objects = results["_objects"]
    model, envs = objects["model"], objects["envs"]

    # The masks in MaskablePPO's rollout buffer are exactly those the envs handed out, in order
    # (after training the buffer is flattened env-major), and every stored action is inside its mask.
    buffer = model.rollout_buffer
    stored_masks = buffer.action_masks.reshape(n_envs, n_steps, -1)
    stored_actions = buffer.actions.reshape(n_envs, n_steps).astype(int)
    for i, env in enumerate(envs):
        given = np.stack(env.history[-n_steps:]).astype(np.float32)
        np.testing.assert_array_equal(stored_masks[i], given)
        assert given[np.arange(n_steps), stored_actions[i]].all()

    # The trained policy puts no probability outside the mask, for the trained and the reloaded model.
    observations = real_observations(40)
    obs = torch.as_tensor(np.stack([o["observation"] for o in observations]))
    masks = np.stack([o["action_mask"] for o in observations]).astype(bool)
    for policy_model in (model, objects["reloaded"]):
        with torch.no_grad():
            probs = policy_model.policy.get_distribution(obs, action_masks=masks).distribution.probs.numpy()
        assert np.all(probs[~masks] < 1e-6)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_tianshou_multiagent(tmp_path):
    pytest.importorskip("tianshou")
    example = load_example("tianshou_multiagent")
    results = example.train(steps=640, n_envs=2, eval_rounds=4, audit=True, out=tmp_path)
    check_eval(results)
    assert (tmp_path / "tianshou_dqn_learner.pt").is_file()
    objects = results["_objects"]
    buffer = objects["buffer"]
    emitted = set().union(*(env.emitted for env in objects["raw_envs"]))
    assert emitted

    # Every transition in the replay buffer: its (observation, mask) pair is one the env emitted,
    # and its action is inside its mask.
    assert len(buffer) >= 600
    data = buffer[buffer.sample_indices(0)]  # every stored transition of every env's sub-buffer
    assert len(data) == len(buffer)
    obs, masks, acts = np.asarray(data.obs.obs), np.asarray(data.obs.mask), np.asarray(data.act).astype(int)
    assert masks.dtype == bool and masks.shape[1] == okgin_env.NUM_ACTIONS
    assert masks[np.arange(len(acts)), acts].all()
    for o, m in zip(obs, masks):
        assert example.fingerprint(o, m) in emitted

    # The learner's greedy action is always inside the mask (also when only one action is legal).
    policy = example.TianshouPolicy(objects["learner"].policy)
    for observation in real_observations(40):
        assert observation["action_mask"][policy.act(observation)] == 1
        only = np.zeros_like(observation["action_mask"])
        choice = int(np.flatnonzero(observation["action_mask"])[-1])
        only[choice] = 1
        assert policy.act({"observation": observation["observation"], "action_mask": only}) == choice


def test_rllib_selfplay(tmp_path):
    pytest.importorskip("ray.rllib")
    pytest.importorskip("torch")
    import torch

    example = load_example("rllib_selfplay")
    results = example.train(
        iterations=1, num_env_runners=2, train_batch=200, minibatch=100, epochs=1, eval_rounds=4, out=tmp_path
    )
    check_eval(results)
    assert results["num_env_runners"] == 2
    # Every sampled agent step went through MaskAudit on the env runners: none outside its mask.
    assert results["mask_audit_steps"] >= 0.9 * results["env_steps_sampled"] > 0
    assert results["mask_audit_illegal"] == 0

    # The reloaded module's action distribution gives (numerically) zero probability outside the mask.
    from ray.rllib.core.columns import Columns

    module = results["_objects"]["module"]
    observations = real_observations(40)
    batch = {
        Columns.OBS: {
            "observation": torch.as_tensor(np.stack([o["observation"] for o in observations])),
            "action_mask": torch.as_tensor(np.stack([o["action_mask"] for o in observations])),
        }
    }
    masks = np.stack([o["action_mask"] for o in observations]).astype(bool)
    with torch.no_grad():
        for forward in (module.forward_inference, module.forward_exploration):
            logits = forward(dict(batch))[Columns.ACTION_DIST_INPUTS]
            probs = torch.softmax(logits, dim=-1).numpy()
            assert np.all(probs[~masks] < 1e-6)
