"""sb3-contrib's MaskablePPO on the Gymnasium wrapper, against the simple bot.

Trains a ``MaskablePPO`` policy on ``okgin_env.GymEnv`` (the learner alternates seats each
episode, the other seat is ``make_bot("simple")``), saves it, loads it back, checks that the
reloaded model acts exactly as the trained one, and evaluates it against the random and the
simple bot. MaskablePPO reads the mask from the env's ``action_masks()`` method, so the policy
only ever samples legal actions.

With ``--observation features`` (the default) the env appends the solver features of
``okgin_env.features`` (deadwood after each discard, knock/gin possible, meld partners, ...) to
the card planes; ``--observation cards`` trains on the card planes alone. The policy
(``PerCardPolicy``, ``--network percard``, the default) is MaskablePPO's actor-critic policy with
the ``PerCardNet`` of ``examples/_percard.py`` as its ``mlp_extractor``: one small network shared
by the 52 cards scores discarding and knocking with each card, and a second one gives the value;
``--network mlp`` puts two plain layers over the flat array there instead. The reward is the
round's points (``--reward points``, scaled by 1/25), which also grades a lost round by the
deadwood left; ``--reward win`` gives +1/-1.

    pip install -e ".[sb3]"
    python examples/sb3_maskable_ppo.py --eval-rounds 1000 --eval-matches 200 --results runs/sb3/results.json

Prints (and with ``--results FILE`` writes) a JSON summary: training budget, wall time,
environment steps per second, win/loss/draw rates against each bot over single rounds
(``examples/_common``), and ``okgin_env.evaluate``'s mirrored results against simple over rounds
and matches (``examples/_versus_simple``). Every step goes through ``MaskCheck``, which raises if
an action outside the mask ever reaches the env.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require  # noqa: E402

require(("torch", "sb3_contrib", "stable_baselines3"), "sb3")

import gymnasium
import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from _common import DEFAULT_ENV_OPTIONS, Stopwatch, check_legal, evaluation, machine_note, write_results  # noqa: E402
from _percard import OBSERVATION_DEFAULT, ActorCriticNets, add_network_arguments, as_model_input  # noqa: E402
from _versus_simple import evaluate_vs_simple  # noqa: E402

import okgin_env  # noqa: E402
from okgin_env.bots import make_bot  # noqa: E402
from okgin_env.observation import check_observation  # noqa: E402


class PerCardPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic policy with ``_percard.ActorCriticNets`` as its ``mlp_extractor``.

    The extractor's outputs are already the 107 action logits and the value, so the policy's
    ``action_net`` and ``value_net`` are identities (SB3 would otherwise put a linear layer over
    them, mixing the cards' scores again). ``network``, ``observation`` and ``hidden`` come in
    through ``policy_kwargs`` and are saved with the model.
    """

    def __init__(self, *args: Any, network: str = "percard", observation: str = OBSERVATION_DEFAULT, hidden: int = 64, **kwargs: Any):
        self.network = network
        self.okgin_observation = observation
        self.hidden = hidden
        kwargs["ortho_init"] = False  # SB3's orthogonal init is for its own MLPs
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = ActorCriticNets(self.network, self.okgin_observation, self.hidden)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()
        self.value_net = nn.Identity()
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(network=self.network, observation=self.okgin_observation, hidden=self.hidden)
        return data


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

    def __init__(self, model: Any, observation: str = OBSERVATION_DEFAULT, deterministic: bool = True):
        self.model = model
        self.observation = observation
        self.deterministic = deterministic

    def act(self, observation: dict[str, np.ndarray]) -> int:
        # okgin_env.evaluate hands every policy card-layout observations: add the features if trained on them.
        action, _ = self.model.predict(
            as_model_input(observation, self.observation),
            action_masks=observation["action_mask"].astype(bool),
            deterministic=self.deterministic,
        )
        return int(action)


def make_env(seed: int, opponent: str, reward: str, reward_scale: float, keep: int = 0, observation: str = OBSERVATION_DEFAULT) -> MaskCheck:
    options = {**DEFAULT_ENV_OPTIONS, "reward": reward, "observation": observation}
    env = okgin_env.GymEnv(opponents=make_bot(opponent, seed=seed), learner_seat="alternate", **options)
    env.reset(seed=seed)
    return MaskCheck(env, reward_scale=reward_scale, keep=keep)


def progress_callback(reward_scale: float, every: int = 1):
    """An SB3 callback that prints, after every ``every`` rollouts, the decisions so far, the mean
    round reward (in points with ``--reward points``, unscaled) and the share of rounds won (against the training opponent) of the
    rounds that ended since the last line: the progress one sees while it trains."""
    from stable_baselines3.common.callbacks import BaseCallback

    class RoundProgress(BaseCallback):
        def _on_training_start(self) -> None:
            self.returns = np.zeros(self.training_env.num_envs)
            self.finished: list[float] = []
            self.rollouts = 0

        def _on_step(self) -> bool:
            self.returns += self.locals["rewards"] / reward_scale
            for i in np.flatnonzero(self.locals["dones"]):
                self.finished.append(float(self.returns[i]))
                self.returns[i] = 0.0
            return True

        def _on_rollout_end(self) -> None:
            self.rollouts += 1
            if self.rollouts % every or not self.finished:
                return
            rounds = np.array(self.finished)
            print(f"  {self.num_timesteps:>9,} decisions: {len(rounds)} rounds, mean reward {rounds.mean():+.2f}, "
                  f"won {np.mean(rounds > 0):.1%} (against the training opponent)", flush=True)
            self.finished = []

    return RoundProgress()


def train(
    timesteps: int = 300_000,
    n_envs: int = 8,
    n_steps: int = 128,
    batch_size: int = 256,
    epochs: int = 6,
    lr: float = 1e-3,
    gamma: float = 1.0,
    entropy: float = 0.01,
    network: str = "percard",
    hidden: int = 64,
    observation: str = OBSERVATION_DEFAULT,
    opponent: str = "simple",
    reward: str = "points",
    seed: int = 0,
    out: str | Path = "runs/sb3_maskable_ppo",
    eval_rounds: int = 200,
    eval_matches: int = 0,
    keep_masks: int = 0,
    verbose: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Train, save, reload, evaluate. ``timesteps`` counts the learner's decisions.

    Returns the results dict (and the live objects under "_objects")."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    check_observation(observation)
    torch.set_num_threads(1)
    # Points rewards reach +-100 or so; 1/25 keeps PPO's value targets near unit scale.
    reward_scale = 1 / 25 if reward == "points" else 1.0
    envs = [make_env(seed + i, opponent, reward, reward_scale, keep=keep_masks, observation=observation) for i in range(n_envs)]
    vec_env = DummyVecEnv([lambda e=e: e for e in envs])
    model = MaskablePPO(
        PerCardPolicy,
        vec_env,
        n_steps=n_steps,
        batch_size=batch_size,
        n_epochs=epochs,
        learning_rate=lr,
        # One round per episode, rewarded at its end: no discount (the TorchRL example's setting).
        gamma=gamma,
        gae_lambda=0.95,
        ent_coef=entropy,
        policy_kwargs={"network": network, "observation": observation, "hidden": hidden},
        seed=seed,
        device="cpu",
        verbose=verbose,
    )
    clock = Stopwatch()
    interrupted = False
    if progress:
        print(f"training MaskablePPO for {timesteps:,} decisions against {opponent} (Ctrl-C: save what there is and "
              "evaluate it)", flush=True)
    try:
        model.learn(total_timesteps=timesteps, callback=progress_callback(reward_scale) if progress else None)
    except KeyboardInterrupt:  # Ctrl-C: keep the model as it is, save and evaluate it
        interrupted = True
        print(f"\ninterrupted after {model.num_timesteps:,} decisions: saving and evaluating that model", flush=True)
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
    sample = probe.observe(probe.agent_selection)
    a = SB3Policy(model, observation).act(sample)
    b = SB3Policy(reloaded, reloaded.policy.okgin_observation).act(sample)
    if a != b:
        raise AssertionError(f"reloaded model acts differently: {a} != {b}")

    policy = SB3Policy(reloaded, observation)
    results: dict[str, Any] = {
        "framework": f"sb3-contrib {_version('sb3-contrib')} MaskablePPO ({network} policy)",
        "machine": machine_note(),
        "observation": observation,
        "network": network,
        "opponent_in_training": opponent,
        "reward": reward,
        "timesteps": timesteps,
        "interrupted": interrupted,
        "learner_env_steps": learner_steps,
        "train_seconds": round(train_seconds, 2),
        "env_steps_per_second": round(learner_steps / train_seconds, 1),
        "deals_redealt_at_reset": sum(e.skipped_deals for e in envs),
        "saved_to": str(path),
        **evaluation(policy, eval_rounds),
        **evaluate_vs_simple(policy, eval_rounds, eval_matches),
    }
    results["_objects"] = {"model": model, "reloaded": reloaded, "envs": envs, "vec_env": vec_env}
    return results


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=300_000, help="learner decisions to train on")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--n-steps", type=int, default=128, help="rollout length per env (n_envs * n_steps decisions per update)")
    parser.add_argument("--batch-size", type=int, default=256, help="decisions per gradient step")
    parser.add_argument("--epochs", type=int, default=6, help="PPO epochs per update")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=1.0, help="discount per learner decision")
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus coefficient")
    add_network_arguments(parser)
    parser.add_argument("--opponent", default="simple", choices=["random", "simple", "search"])
    parser.add_argument("--reward", default="points", choices=["points", "win"],
                        help="points: the round's score (scaled by 1/25); win: +1/-1 for the round's winner/loser")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200, help="rounds per evaluation")
    parser.add_argument("--eval-matches", type=int, default=0, help="whole matches against simple through okgin_env.evaluate")
    parser.add_argument("--out", default="runs/sb3_maskable_ppo")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    parser.add_argument("--verbose", type=int, default=0, help="SB3's own log level")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress lines (decisions, mean round reward and rounds won after each rollout)")
    args = parser.parse_args(argv)
    if args.timesteps < 1 or args.n_envs < 1 or args.n_steps < 2 or args.batch_size < 2 or args.eval_rounds < 1 or args.eval_matches < 0:
        parser.error("--timesteps, --n-envs and --eval-rounds must be at least 1, --n-steps and --batch-size at least 2, "
                     "--eval-matches at least 0")  # exits 2 with the usage line
    settings = {key: value for key, value in vars(args).items() if key != "results"}
    results = train(**settings)
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
