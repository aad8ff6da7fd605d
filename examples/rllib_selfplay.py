"""RLlib on Ray: multi-agent self-play PPO on the PettingZoo env, several env runners.

The AEC env goes through RLlib's ``PettingZooEnv`` wrapper (a ``MultiAgentEnv``); both seats map
to one shared policy (``"shared"``: self-play with parameter sharing, the observation says which
seat plays). The policy is ``MaskedPPOModule``, a PPO ``RLModule`` of RLlib's new API stack that
builds its networks on the ``"observation"`` part of the env's dict observation and adds
``-inf`` (``FLOAT_MIN``) to the logits of the actions that ``"action_mask"`` forbids, in
exploration, inference and training, so that no illegal action is ever sampled.

Sampling runs in ``--num-env-runners`` Ray actors (default 2) on a local Ray instance. The same
script runs on an existing Ray cluster when given its address; nothing else changes:

    # one machine: a local Ray instance with 2 env runners
    python examples/rllib_selfplay.py --iterations 20
    # a cluster: `ray start --head` on one node, `ray start --address=HEAD_IP:6379` on the others
    # (each with this project's `.[rllib]` installed), then on any node of it:
    python examples/rllib_selfplay.py --address auto --num-env-runners 32

With ``--address`` (or ``OKGIN_RAY_ADDRESS``) the driver ships the ``okgin_env`` package to the
workers (Ray runtime_env ``py_modules``), so the nodes need only the pinned dependencies
(``pip install "ray[rllib]==2.60.0" torch==2.13.0 pettingzoo``). Ray 2.60's ``ray start`` turns
on token authentication: give the driver the cluster's token (``RAY_AUTH_TOKEN`` or
``~/.ray/auth_token``, see Ray's token-auth docs), or start a private test cluster with
``RAY_AUTH_MODE=disabled ray start --head``. Tested here against a ``ray start --head`` cluster
on this machine (``--address 127.0.0.1:6390``).

The shaped reward (``--shaping``, default 1.0; see ``DeadwoodShaping``) is what lets self-play
learn anything in a short budget: two untrained players draw almost every round.

``MaskAudit`` (an RLlib callback) runs on every env runner after each sample and checks, for every
agent step in the sampled episodes (what goes to the learner), that the action taken is allowed
by the action mask stored with its observation; the counts come back in the training results
(``env_runners/mask_audit_steps`` and ``env_runners/mask_audit_illegal``).

Prints (and with ``--results FILE`` writes) a JSON summary like the other examples.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEFAULT_ENV_OPTIONS, Stopwatch, evaluation, machine_note, write_results  # noqa: E402

import okgin_env  # noqa: E402
from pettingzoo.utils.wrappers import BaseWrapper  # noqa: E402

from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule  # noqa: E402
from ray.rllib.callbacks.callbacks import RLlibCallback  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.utils.torch_utils import FLOAT_MIN  # noqa: E402

POLICY = "shared"
ENV_NAME = "okgin_pettingzoo"


# --------------------------------------------------------------------------- worker-side code
# Everything in this section runs inside the env runners and learners (Ray actors); it uses
# only okgin_env, numpy, torch and RLlib, so it is pickled by value to any node of a cluster.


class DeadwoodShaping(BaseWrapper):
    """Adds ``coef * (deadwood before - deadwood after) / 100`` to a seat's reward for each discard.

    Two untrained players almost never knock (random play draws nearly every round), so a
    win/loss reward alone gives self-play almost no signal at first. The bonus pays for lowering
    one's own deadwood (the 10-card hand before the draw vs. after the discard or knock); summed
    over a round it is ``coef * (first - last deadwood) / 100``, a potential-based term that
    points the same way as the game's own goal. ``coef=0`` turns it off.
    """

    def __init__(self, env, coef: float):
        super().__init__(env)
        self.coef = coef
        self._last: dict[str, int] = {}

    def _deadwood(self, agent: str) -> int:
        return okgin_env.deadwood(self.env.unwrapped.hand(agent))

    def reset(self, seed=None, options=None):
        super().reset(seed=seed, options=options)
        self._last = {agent: self._deadwood(agent) for agent in self.env.possible_agents}

    def step(self, action):
        raw = self.env.unwrapped
        agent = raw.agent_selection
        discards = action is not None and 3 <= int(action) < 107 and not raw.terminations[agent]
        super().step(action)
        if discards and self.coef:
            now = self._deadwood(agent)
            # Stays in the seat's cumulative reward until that seat is next selected (env.last()).
            raw._cumulative_rewards[agent] += self.coef * (self._last[agent] - now) / 100.0
            self._last[agent] = now


def make_env(env_config: dict[str, Any]):
    """The env creator registered with Ray: okgin's AEC env in RLlib's PettingZoo wrapper."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    options = dict(env_config)
    shaping = float(options.pop("shaping", 0.0))
    env = okgin_env.env(**options)
    if shaping:
        env = DeadwoodShaping(env, shaping)
    return PettingZooEnv(env)


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """PPO's default torch module on the ``"observation"`` part, logits masked by ``"action_mask"``."""

    def __init__(self, *, observation_space=None, action_space=None, **kwargs):
        # The default encoder, policy and value heads are built for the flat observation only.
        self.dict_observation_space = observation_space
        super().__init__(observation_space=observation_space["observation"], action_space=action_space, **kwargs)

    def setup(self):
        super().setup()
        # What the env (and the connectors) see is the dict space.
        self.observation_space = self.dict_observation_space

    @staticmethod
    def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        observation = batch[Columns.OBS]
        if not isinstance(observation, dict):
            raise ValueError("MaskedPPOModule needs dict observations with 'observation' and 'action_mask'")
        inner = dict(batch)
        inner[Columns.OBS] = observation["observation"]
        return observation["action_mask"], inner

    @staticmethod
    def _mask(output: dict[str, Any], action_mask: Any) -> dict[str, Any]:
        logits = output[Columns.ACTION_DIST_INPUTS]
        allowed = action_mask.to(dtype=torch_bool()).to(logits.device)
        output[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(~allowed, FLOAT_MIN)
        return output

    def _forward(self, batch, **kwargs):
        action_mask, inner = self._split(batch)
        return self._mask(super()._forward(inner, **kwargs), action_mask)

    def _forward_train(self, batch, **kwargs):
        action_mask, inner = self._split(batch)
        return self._mask(super()._forward_train(inner, **kwargs), action_mask)

    def compute_values(self, batch, embeddings=None):
        if isinstance(batch[Columns.OBS], dict):
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


def torch_bool():
    import torch

    return torch.bool


def _rows(observations: Any, key: str, count: int) -> np.ndarray:
    """The ``key`` part of ``count`` observations, whether stored as a dict of arrays or a list of dicts."""
    if isinstance(observations, dict):
        return np.asarray(observations[key])[:count]
    return np.asarray([o[key] for o in list(observations)[:count]])


class MaskAudit(RLlibCallback):
    """After each ``sample()`` on an env runner: every sampled action must be in its stored mask."""

    def on_sample_end(self, *, env_runner=None, metrics_logger=None, samples=None, **kwargs):
        checked = illegal = 0
        for episode in samples or []:
            for agent_episode in getattr(episode, "agent_episodes", {}).values():
                steps = len(agent_episode)
                if steps == 0:
                    continue
                observations = agent_episode.get_observations(slice(0, steps))
                masks = _rows(observations, "action_mask", steps)
                actions = np.asarray(agent_episode.get_actions(slice(0, steps))).reshape(-1)
                legal = masks[np.arange(steps), actions] == 1
                checked += steps
                illegal += int((~legal).sum())
        if metrics_logger is not None:
            metrics_logger.log_value("mask_audit_steps", checked, reduce="sum")
            metrics_logger.log_value("mask_audit_illegal", illegal, reduce="sum")
        if illegal:
            raise AssertionError(f"{illegal} sampled action(s) outside their action mask")


# --------------------------------------------------------------------------- driver side


class RLlibPolicy:
    """The trained shared module as a docs/api.md policy: ``act(observation_dict) -> int``."""

    def __init__(self, module: Any):
        self.module = module

    def act(self, observation: dict[str, np.ndarray]) -> int:
        import torch

        batch = {
            Columns.OBS: {
                "observation": torch.as_tensor(observation["observation"][None]),
                "action_mask": torch.as_tensor(observation["action_mask"][None]),
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return int(torch.argmax(logits[0]).item())


def build_config(
    num_env_runners: int = 2,
    envs_per_runner: int = 1,
    rollout_fragment_length: int = 250,
    train_batch: int = 2000,
    minibatch: int = 250,
    epochs: int = 4,
    lr: float = 3e-4,
    reward: str = "win",
    shaping: float = 1.0,
    seed: int = 0,
):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    env_config = {**DEFAULT_ENV_OPTIONS, "reward": reward, "shaping": shaping}
    return (
        PPOConfig()
        # RLlib's env pre-check steps the env once with an unmasked random action, which okgin
        # rightly rejects (ValueError naming the legal actions); the check is switched off.
        .environment(ENV_NAME, env_config=env_config, disable_env_checking=True)
        .multi_agent(policies={POLICY}, policy_mapping_fn=lambda agent_id, episode, **kwargs: POLICY)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    POLICY: RLModuleSpec(module_class=MaskedPPOModule, model_config={"fcnet_hiddens": [256, 256]})
                }
            )
        )
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=envs_per_runner,
            num_cpus_per_env_runner=1,
            rollout_fragment_length=rollout_fragment_length,
        )
        .learners(num_learners=0)
        .training(
            train_batch_size_per_learner=train_batch,
            minibatch_size=minibatch,
            num_epochs=epochs,
            lr=lr,
            gamma=0.99,
            entropy_coeff=0.01,
            vf_loss_coeff=0.5,
        )
        .callbacks(MaskAudit)
        .debugging(seed=seed)
    )


def _get(result: dict[str, Any], *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(result, dict) or key not in result:
            return default
        result = result[key]
    return result


def train(
    iterations: int = 20,
    num_env_runners: int = 2,
    envs_per_runner: int = 1,
    train_batch: int = 2000,
    minibatch: int = 250,
    epochs: int = 4,
    reward: str = "win",
    shaping: float = 1.0,
    address: str | None = None,
    seed: int = 0,
    out: str | Path = "runs/rllib_selfplay",
    eval_rounds: int = 200,
    shutdown: bool = True,
) -> dict[str, Any]:
    """Start or join Ray, train ``iterations`` PPO iterations, save, reload, evaluate."""
    import ray
    import ray.cloudpickle
    from ray.tune.registry import register_env

    this_module = sys.modules[__name__]
    if __name__ != "__main__":
        # Imported (by the test, say): ship this module's classes by value, as for a script.
        ray.cloudpickle.register_pickle_by_value(this_module)

    runtime_env: dict[str, Any] = {"env_vars": {"PYTHONWARNINGS": "ignore::DeprecationWarning"}}
    if address:
        # On a cluster, bring the exact okgin_env of the driver to every worker.
        runtime_env["py_modules"] = [okgin_env]
        ray.init(address=address, runtime_env=runtime_env, ignore_reinit_error=True)
    else:
        # A local Ray instance: logical CPUs for the driver and each env runner (the OS shares the
        # physical cores among them).
        ray.init(
            num_cpus=max(2, num_env_runners + 1),
            include_dashboard=False,
            runtime_env=runtime_env,
            ignore_reinit_error=True,
            log_to_driver=False,
        )
    try:
        register_env(ENV_NAME, make_env)
        config = build_config(
            num_env_runners=num_env_runners,
            envs_per_runner=envs_per_runner,
            rollout_fragment_length=max(50, train_batch // max(1, num_env_runners * envs_per_runner)),
            train_batch=train_batch,
            minibatch=minibatch,
            epochs=epochs,
            reward=reward,
            shaping=shaping,
            seed=seed,
        )
        algo = config.build_algo()
        clock = Stopwatch()
        history = []
        sampled = audited = illegal = 0
        for _ in range(iterations):
            result = algo.train()
            steps_now = _get(result, "env_runners", "num_env_steps_sampled_lifetime", default=0)
            history.append(
                {
                    "env_steps": steps_now,
                    "episode_return_mean": _get(result, "env_runners", "episode_return_mean"),
                    "episode_len_mean": _get(result, "env_runners", "episode_len_mean"),
                }
            )
            sampled = steps_now
            print(
                f"iteration {len(history)}/{iterations}: {int(steps_now)} env steps, "
                f"{clock.seconds():.0f} s, episode return mean {history[-1]['episode_return_mean']}",
                file=sys.stderr,
                flush=True,
            )
            # The audit counts are summed over each iteration's samples.
            audited += int(_get(result, "env_runners", "mask_audit_steps", default=0))
            illegal += int(_get(result, "env_runners", "mask_audit_illegal", default=0))
        train_seconds = clock.seconds()

        out = Path(out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        checkpoint = algo.save_to_path(str(out / "checkpoint"))
        module = algo.get_module(POLICY)
        probe = okgin_env.env(**DEFAULT_ENV_OPTIONS)
        probe.reset(seed=seed + 999)
        observation = probe.observe(probe.agent_selection)
        action = RLlibPolicy(module).act(observation)
        algo.stop()

        # Reload only the policy from the checkpoint (no env runners needed for that).
        from ray.rllib.core.rl_module.rl_module import RLModule

        module_path = os.path.join(checkpoint, "learner_group", "learner", "rl_module", POLICY)
        reloaded = RLModule.from_checkpoint(module_path)
        if RLlibPolicy(reloaded).act(observation) != action:
            raise AssertionError("reloaded module acts differently")

        policy = RLlibPolicy(reloaded)
        results: dict[str, Any] = {
            "framework": "RLlib PPO (new API stack), PettingZooEnv, shared-policy self-play",
            "machine": machine_note(),
            "ray_address": address or "local",
            "num_env_runners": num_env_runners,
            "envs_per_runner": envs_per_runner,
            "iterations": iterations,
            "reward": reward,
            "shaping": shaping,
            "env_steps_sampled": sampled,
            "train_seconds": round(train_seconds, 2),
            "env_steps_per_second": round(sampled / train_seconds, 1) if train_seconds else None,
            "mask_audit_steps": audited,
            "mask_audit_illegal": illegal,
            "history": history,
            "checkpoint": str(checkpoint),
            **evaluation(policy, eval_rounds),
        }
        results["_objects"] = {"module": reloaded}
        return results
    finally:
        if shutdown:
            ray.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="PPO training iterations")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--envs-per-runner", type=int, default=1)
    parser.add_argument("--train-batch", type=int, default=2000, help="env steps per iteration")
    parser.add_argument("--minibatch", type=int, default=250)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--reward", default="win", choices=["points", "win"])
    parser.add_argument("--shaping", type=float, default=1.0, help="deadwood shaping coefficient (0: off)")
    parser.add_argument(
        "--address",
        default=os.environ.get("OKGIN_RAY_ADDRESS"),
        help="an existing Ray cluster ('auto' or 'HOST:6379'); default: start a local instance",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200)
    parser.add_argument("--out", default="runs/rllib_selfplay")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    args = parser.parse_args(argv)
    results = train(
        iterations=args.iterations,
        num_env_runners=args.num_env_runners,
        envs_per_runner=args.envs_per_runner,
        train_batch=args.train_batch,
        minibatch=args.minibatch,
        epochs=args.epochs,
        reward=args.reward,
        shaping=args.shaping,
        address=args.address,
        seed=args.seed,
        out=args.out,
        eval_rounds=args.eval_rounds,
    )
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
