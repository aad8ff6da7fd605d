"""sb3-contrib's MaskablePPO on the Gymnasium wrapper, against the simple bot.

Trains a ``MaskablePPO`` MLP policy on ``okgin_env.GymEnv`` (the learner alternates seats each
episode, the other seat is ``make_bot("simple")``), saves it, loads it back, checks that the
reloaded model acts exactly as the trained one, and evaluates it over single rounds against the
random and the simple bot (``examples/_common.play_rounds``). MaskablePPO reads the mask from the
env's ``action_masks()`` method, so the policy only ever samples legal actions.

    pip install -e ".[sb3]"
    python examples/sb3_maskable_ppo.py --timesteps 200000 --out runs/sb3

Prints (and with ``--results FILE`` writes) a JSON summary: training budget, wall time,
environment steps per second, and win/loss/draw rates against each bot. Every step goes through
``MaskCheck``, which raises if an action outside the mask ever reaches the env.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEFAULT_ENV_OPTIONS, Stopwatch, check_legal, evaluation, machine_note, write_results  # noqa: E402

import okgin_env  # noqa: E402
from okgin_env.bots import make_bot  # noqa: E402


class MaskCheck(gymnasium.Wrapper):
    """Checks every action against the mask the env last gave, counts steps, scales the reward.

    Also keeps the masks it handed out (``history``, most recent last) so a test can compare them
    with what MaskablePPO stored in its rollout buffer.
    """

    def __init__(self, env: okgin_env.GymEnv, reward_scale: float = 1.0, keep: int = 0):
        super().__init__(env)
        self.reward_scale = reward_scale
        self.keep = keep
        self.history: list[np.ndarray] = []
        self.steps = 0
        self.skipped_deals = 0

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        # GymEnv.reset can hand back a round that is already over: the opponent took the upcard
        # and knocked before the learner's first decision (a few in 10,000 deals against the
        # simple bot). Its observation has an all-zero mask, which no policy can act on, so
        # deal again (the next deal of the env's own RNG).
        while not self.env.unwrapped.action_masks().any():
            self.skipped_deals += 1
            observation, info = self.env.reset()
        return observation, info

    def action_masks(self) -> np.ndarray:
        mask = self.env.unwrapped.action_masks()
        # The mask must be exactly the legal actions of the learner's seat in the engine.
        engine = self.env.unwrapped.aec
        assert engine.agent_selection == engine.possible_agents[self.env.unwrapped.learner_seat]
        expected = np.zeros_like(mask)
        expected[engine.match.round.legal_actions()] = True
        assert np.array_equal(mask, expected), "action_masks() differs from the engine's legal actions"
        if self.keep:
            self.history.append(mask.copy())
            del self.history[: -self.keep]
        return mask

    def step(self, action):
        check_legal(action, self.env.unwrapped.action_masks(), "MaskablePPO: ")
        observation, reward, terminated, truncated, info = self.env.step(int(action))
        self.steps += 1
        return observation, reward * self.reward_scale, terminated, truncated, info


class SB3Policy:
    """A trained model as a docs/api.md policy: ``act(observation_dict) -> int``."""

    def __init__(self, model: Any, deterministic: bool = True):
        self.model = model
        self.deterministic = deterministic

    def act(self, observation: dict[str, np.ndarray]) -> int:
        action, _ = self.model.predict(
            observation["observation"], action_masks=observation["action_mask"].astype(bool), deterministic=self.deterministic
        )
        return int(action)


def make_env(seed: int, opponent: str, reward: str, reward_scale: float, keep: int = 0) -> MaskCheck:
    options = {**DEFAULT_ENV_OPTIONS, "reward": reward}
    env = okgin_env.GymEnv(opponents=make_bot(opponent, seed=seed), learner_seat="alternate", **options)
    env.reset(seed=seed)
    return MaskCheck(env, reward_scale=reward_scale, keep=keep)


def train(
    timesteps: int = 200_000,
    n_envs: int = 4,
    n_steps: int = 512,
    opponent: str = "simple",
    reward: str = "points",
    seed: int = 0,
    out: str | Path = "runs/sb3_maskable_ppo",
    eval_rounds: int = 200,
    keep_masks: int = 0,
    verbose: int = 0,
) -> dict[str, Any]:
    """Train, save, reload, evaluate. Returns the results dict (and the live objects under "_objects")."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    # Points rewards reach +-100 or so; 1/25 keeps PPO's value targets near unit scale.
    reward_scale = 1 / 25 if reward == "points" else 1.0
    envs = [make_env(seed + i, opponent, reward, reward_scale, keep=keep_masks) for i in range(n_envs)]
    vec_env = DummyVecEnv([lambda e=e: e for e in envs])
    model = MaskablePPO(
        "MlpPolicy",
        vec_env,
        n_steps=n_steps,
        batch_size=256,
        n_epochs=4,
        learning_rate=3e-4,
        gamma=0.99,
        ent_coef=0.01,
        policy_kwargs={"net_arch": [256, 256]},
        seed=seed,
        device="cpu",
        verbose=verbose,
    )
    clock = Stopwatch()
    model.learn(total_timesteps=timesteps)
    train_seconds = clock.seconds()
    learner_steps = sum(e.steps for e in envs)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "maskable_ppo_okgin.zip"
    model.save(path)
    reloaded = MaskablePPO.load(path, device="cpu")

    # The reloaded model must act exactly as the trained one (deterministic actions on real observations).
    probe = okgin_env.env(**DEFAULT_ENV_OPTIONS)
    probe.reset(seed=seed + 999)
    observation = probe.observe(probe.agent_selection)
    a = SB3Policy(model).act(observation)
    b = SB3Policy(reloaded).act(observation)
    if a != b:
        raise AssertionError(f"reloaded model acts differently: {a} != {b}")

    policy = SB3Policy(reloaded)
    results: dict[str, Any] = {
        "framework": "sb3-contrib MaskablePPO",
        "machine": machine_note(),
        "opponent_in_training": opponent,
        "reward": reward,
        "timesteps": timesteps,
        "learner_env_steps": learner_steps,
        "train_seconds": round(train_seconds, 2),
        "env_steps_per_second": round(learner_steps / train_seconds, 1),
        "deals_redealt_at_reset": sum(e.skipped_deals for e in envs),
        "saved_to": str(path),
        **evaluation(policy, eval_rounds),
    }
    results["_objects"] = {"model": model, "reloaded": reloaded, "envs": envs, "vec_env": vec_env}
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=200_000, help="learner decisions to train on")
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--n-steps", type=int, default=512, help="rollout length per env")
    parser.add_argument("--opponent", default="simple", choices=["random", "simple", "search"])
    parser.add_argument("--reward", default="points", choices=["points", "win"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200)
    parser.add_argument("--out", default="runs/sb3_maskable_ppo")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    parser.add_argument("--verbose", type=int, default=0)
    args = parser.parse_args(argv)
    results = train(
        timesteps=args.timesteps,
        n_envs=args.n_envs,
        n_steps=args.n_steps,
        opponent=args.opponent,
        reward=args.reward,
        seed=args.seed,
        out=args.out,
        eval_rounds=args.eval_rounds,
        verbose=args.verbose,
    )
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
