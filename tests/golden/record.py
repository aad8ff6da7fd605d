"""Golden fixed-seed behaviour of the environments, the bots and the shipped policy.

``python tests/golden/record.py`` writes ``tests/golden/golden.json.gz``; ``tests/test_golden.py``
recomputes everything with the same seeds and requires it to be identical. Recorded before the
upper floors were consolidated (issue 13), so that the refactor is proven behaviour-preserving:
the trajectories go through public names only (``okgin_env.env``, ``BatchEnv``, ``VectorGymEnv``,
``GymEnv``, ``make_bot``, ``training.load_policy``), which the refactor keeps.

What is recorded (observations and masks as SHA-256 digests of their bytes; everything else in
full):

- the AEC env for every preset and player count, both episode kinds and both rewards, played by
  seeded ``simple`` bots (actions, the acting agent's observation and mask, every agent's
  observation every 16 steps and at the end, rewards, terminations, truncations, round outcomes);
- ``BatchEnv`` under seeded uniform random actions (seats, observations, masks, rewards, dones,
  round outcomes and final observations), and ``observe`` of every seat;
- ``VectorGymEnv`` against the batched ``simple`` opponent, the learner random;
- ``GymEnv`` against a seeded ``simple`` opponent;
- the decisions of ``simple`` and ``search`` on fixed positions;
- the shipped policy's actions (and logits, compared to 1e-4) on fixed observations.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GOLDEN = HERE / "golden.json.gz"

ENV_CASES = [
    ("classic", 2),
    ("penalty", 2),
    ("penalty", 3),
    ("penalty", 4),
]


def digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for array in arrays:
        a = np.ascontiguousarray(array)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:24]


def plain(value: Any) -> Any:
    """JSON-ready copy (numpy scalars and arrays to Python)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


# ----------------------------------------------------------------------------- AEC env


def aec_trajectory(rules: str, num_players: int, episode: str, reward: str, seed: int, max_steps: int = 4000):
    import okgin_env
    from okgin_env.bots import make_bot

    env = okgin_env.env(rules=rules, num_players=num_players, episode=episode, reward=reward)
    env.reset(seed=seed)
    bots = {agent: make_bot("simple", seed=seed * 10 + i) for i, agent in enumerate(env.possible_agents)}
    steps = []
    for t, agent in enumerate(env.agent_iter(max_steps)):
        observation, rew, terminated, truncated, info = env.last()
        record: dict[str, Any] = {
            "agent": agent,
            "obs": digest(observation["observation"], observation["action_mask"]),
            "reward": float(rew),
            "term": bool(terminated),
            "trunc": bool(truncated),
        }
        if "round_outcome" in info:
            record["outcome"] = plain(info["round_outcome"])
        if t % 16 == 0 or terminated or truncated:
            record["all"] = digest(*[env.observe(a)["observation"] for a in env.agents])
            record["rewards"] = {a: float(r) for a, r in env.rewards.items()}
        action = None if terminated or truncated else bots[agent].act(observation)
        record["action"] = action
        steps.append(record)
        env.step(action)
    return {"steps": steps, "scores": plain(env.unwrapped.scores)}


# ----------------------------------------------------------------------------- batch engine


def random_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(masks.shape[0], dtype=np.int64)
    for i, row in enumerate(masks):
        legal = np.flatnonzero(row)
        out[i] = legal[rng.integers(legal.size)]
    return out


def batch_trajectory(rules: str, num_players: int, episode: str, reward: str, seed: int, steps: int = 300):
    import okgin_env

    batch = okgin_env.BatchEnv(6, rules=rules, num_players=num_players, episode=episode, reward=reward)
    rng = np.random.default_rng(seed + 1)
    seats, obs, masks, rewards, dones, infos = batch.reset(seed=seed)
    records = [digest(seats, obs, masks)]
    for t in range(steps):
        if t % 3 == 2:  # a subset of the games
            games = np.flatnonzero(np.arange(batch.num_games) % 2 == t % 2)
            cur_masks = batch.action_masks[games]
            result = batch.step(random_actions(cur_masks, rng), games=games)
        else:
            result = batch.step(random_actions(batch.action_masks, rng))
        seats, obs, masks, rewards, dones, infos = result
        record: dict[str, Any] = {"d": digest(seats, obs, masks, rewards, dones)}
        if "round_outcome" in infos:
            record["outcomes"] = plain([o for o, ok in zip(infos["round_outcome"], infos["_round_outcome"]) if ok])
        if "final_obs" in infos:
            record["final"] = digest(*[f for f, ok in zip(infos["final_obs"], infos["_final_obs"]) if ok])
        if t % 25 == 0:
            record["observe"] = digest(*[a for s in range(num_players) for a in batch.observe(s)])
        records.append(record)
    return records


def vector_gym_trajectory(rules: str, num_players: int, seed: int, steps: int = 200):
    import okgin_env

    vec = okgin_env.VectorGymEnv(5, "simple", learner_seat="alternate", rules=rules, num_players=num_players)
    rng = np.random.default_rng(seed + 2)
    obs, infos = vec.reset(seed=seed)
    records = [digest(obs, infos["action_mask"], vec.learner_seats)]
    for _ in range(steps):
        obs, rew, term, trunc, infos = vec.step(random_actions(infos["action_mask"], rng))
        record: dict[str, Any] = {"d": digest(obs, rew, term, trunc, infos["action_mask"], vec.learner_seats)}
        if "final_obs" in infos:
            record["final"] = digest(*[f for f, ok in zip(infos["final_obs"], infos["_final_obs"]) if ok])
        if "round_outcome" in infos:
            record["outcomes"] = plain([o for o, ok in zip(infos["round_outcome"], infos["_round_outcome"]) if ok])
        records.append(record)
    return records


def gym_trajectory(seed: int, steps: int = 400):
    from okgin_env import GymEnv
    from okgin_env.bots import make_bot

    gym = GymEnv(make_bot("simple", seed=seed), learner_seat="alternate", episode="round")
    learner = make_bot("simple", seed=seed + 1)
    obs, info = gym.reset(seed=seed)
    records = [digest(obs, info["action_mask"])]
    for _ in range(steps):
        action = learner.act({"observation": obs, "action_mask": info["action_mask"]})
        obs, rew, term, trunc, info = gym.step(action)
        records.append([action, digest(obs, info["action_mask"]), float(rew), bool(term), bool(trunc)])
        if term or trunc:
            obs, info = gym.reset()
            records.append(digest(obs, info["action_mask"]))
    return records


# ----------------------------------------------------------------------------- fixed positions


def positions(rules: str, num_players: int, seed: int, count: int) -> list[dict[str, np.ndarray]]:
    """Observation dicts of the acting agent from seeded simple-vs-simple play (decisions with a choice)."""
    import okgin_env
    from okgin_env.bots import make_bot

    env = okgin_env.env(rules=rules, num_players=num_players, episode="match")
    env.reset(seed=seed)
    bots = {agent: make_bot("simple", seed=seed + i) for i, agent in enumerate(env.possible_agents)}
    found = []
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            if not env.agents:
                seed += 1000
                env.reset(seed=seed)
            continue
        if int(observation["action_mask"].sum()) > 1:
            found.append({"observation": observation["observation"].copy(), "action_mask": observation["action_mask"].copy()})
            if len(found) == count:
                return found
        env.step(bots[agent].act(observation))
    return found


def bot_decisions():
    from okgin_env.bots import make_bot

    out: dict[str, Any] = {}
    for rules, n in ENV_CASES:
        pos = positions(rules, n, seed=700 + n, count=120)
        simple = make_bot("simple", seed=5)
        out[f"simple/{rules}{n}"] = [simple.act(p) for p in pos]
        search = make_bot("search", seed=6, rollouts=48)
        out[f"search48/{rules}{n}"] = [search.act(p) for p in pos[:24]]
    pos = positions("classic", 2, seed=900, count=6)
    search = make_bot("search", seed=7)
    out["search_default/classic2"] = [search.act(p) for p in pos]
    search = make_bot("search", seed=8, rollouts=40, opponent_model="uniform", infer_takes=False, consistency_tries=1)
    out["search_uniform/classic2"] = [search.act(p) for p in positions("classic", 2, seed=901, count=20)]
    return out


def policy_decisions():
    sys.path.insert(0, str(ROOT))
    from training import load_policy

    # The network's own choices and scores: the file's weights, whichever way its metadata asks it to play
    # (since 2026-12-07 averaged over the suits' renamings, tests/test_symmetry.py).
    policy = load_policy(str(ROOT / "checkpoints" / "okgin_classic.pt"), suit_symmetric=False)
    pos = positions("classic", 2, seed=1234, count=300)
    actions, logits = [], []
    for p in pos:
        actions.append(policy.act(p))
        logits.append(policy_logits(policy, p))
    return {"actions": actions, "logits": logits}


def policy_logits(policy, observation) -> list[float]:
    """The shipped network's scores of the legal actions, rounded to 1e-5 (compared to 1e-4)."""
    import torch

    from training.policy import encode_decision

    flat, mask = observation["observation"], observation["action_mask"]
    context, features, ids, legal, actions = encode_decision(flat, mask, 2)
    with torch.no_grad():
        out, _ = policy.model(
            torch.from_numpy(flat[None].astype(np.float32)),
            torch.from_numpy(context[None]),
            torch.from_numpy(features[None]),
            torch.from_numpy(ids[None]),
            torch.from_numpy(legal[None]),
        )
    return [round(float(x), 5) for x in out[0, : len(actions)]]


# ----------------------------------------------------------------------------- all


def record_all(with_policy: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {"aec": {}, "batch": {}, "vector_gym": {}}
    for rules, n in ENV_CASES:
        for episode in ("match", "round"):
            for reward in ("points", "win"):
                if episode == "round" and reward == "win" and n > 2:
                    continue
                key = f"{rules}/{n}/{episode}/{reward}"
                data["aec"][key] = aec_trajectory(rules, n, episode, reward, seed=31 + n)
        data["batch"][f"{rules}/{n}/match/points"] = batch_trajectory(rules, n, "match", "points", seed=51 + n)
        data["batch"][f"{rules}/{n}/round/win"] = batch_trajectory(rules, n, "round", "win", seed=61 + n, steps=150)
        data["vector_gym"][f"{rules}/{n}"] = vector_gym_trajectory(rules, n, seed=71 + n)
    data["gym"] = gym_trajectory(seed=81)
    data["bots"] = bot_decisions()
    if with_policy:
        data["policy"] = policy_decisions()
    return plain(data)


def load_golden() -> dict[str, Any]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as handle:
        return json.load(handle)


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    data = record_all()
    with gzip.open(GOLDEN, "wt", encoding="utf-8") as handle:
        json.dump(data, handle, separators=(",", ":"), sort_keys=True)
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")
