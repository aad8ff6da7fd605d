"""RLlib on Ray: multi-agent PPO on the PettingZoo env, against the simple bot or in self-play, several env runners.

The AEC env goes through RLlib's ``PettingZooEnv`` wrapper (a ``MultiAgentEnv``). The learned
policy is ``"shared"``; who holds the other seat is ``--opponent``:

* ``simple`` (the default): RLlib's heuristic-opponent pattern. The other seat maps to the
  policy ``"simple"``, a non-trainable ``SimpleBotModule`` (an ``RLModule`` whose forward passes
  return ``make_bot("simple")``'s moves as the actions); ``policy_mapping_fn`` gives the learner
  seat 0 in half of the episodes and seat 1 in the others (by the episode's id), and
  ``policies_to_train=["shared"]``.
* ``self``: both seats map to ``"shared"`` (self-play with parameter sharing; the observation
  says which seat plays).

``MaskedPPOModule`` is a PPO ``RLModule`` of RLlib's new API stack (``TorchRLModule`` with the
``ValueFunctionAPI``) whose policy and value networks are the ``PerCardNet`` of
``examples/_percard.py`` (``--network percard``, the default: one small network shared by the 52
cards; ``--network mlp``: two layers over the flat array), read from the ``"observation"`` part
of the env's dict observation; it adds ``FLOAT_MIN`` to the logits of the actions that
``"action_mask"`` forbids, in exploration, inference and training, so that no illegal action is
ever sampled. With ``--observation features`` (the default) the env appends the solver features
of ``okgin_env.features`` to the card planes; ``--observation cards`` trains on the planes alone.
The reward is the round's points (``--reward points``, scaled by 1/25 by ``RewardScale``),
undiscounted.

Sampling runs in ``--num-env-runners`` Ray actors (default 2) on a local Ray instance. The same
script runs on an existing Ray cluster when given its address; nothing else changes:

    # one machine: a local Ray instance with 2 env runners
    python examples/rllib_selfplay.py --eval-rounds 1000 --eval-matches 200 --results runs/rllib/results.json
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

The shaped reward (``--shaping``, default 1.0 with ``--opponent self`` and 0 against simple; see
``DeadwoodShaping``) is what lets self-play learn anything in a short budget: two untrained
players draw almost every round.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import require  # noqa: E402

require(("torch", "ray"), "rllib")

import numpy as np


from _common import DEFAULT_ENV_OPTIONS, Stopwatch, evaluation, machine_note, write_results  # noqa: E402
import _percard  # noqa: E402
from _percard import OBSERVATION_DEFAULT, add_network_arguments, as_model_input, make_network  # noqa: E402
from _versus_simple import evaluate_vs_simple  # noqa: E402

import okgin_env  # noqa: E402
from okgin_env.observation import check_observation  # noqa: E402
from pettingzoo.utils.wrappers import BaseWrapper  # noqa: E402

from ray.rllib.callbacks.callbacks import RLlibCallback  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModule  # noqa: E402
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule  # noqa: E402
from ray.rllib.utils.torch_utils import FLOAT_MIN  # noqa: E402

POLICY = "shared"
BOT_POLICY = "simple"
OPPONENTS = ("simple", "self")
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


class RewardScale(BaseWrapper):
    """Multiplies the reward that ``last()`` reports (what RLlib's wrapper reads) by ``scale``."""

    def __init__(self, env, scale: float):
        super().__init__(env)
        self.scale = scale

    def last(self, observe: bool = True):
        observation, reward, terminated, truncated, info = super().last(observe)
        return observation, reward * self.scale, terminated, truncated, info


def make_env(env_config: dict[str, Any]):
    """The env creator registered with Ray: okgin's AEC env in RLlib's PettingZoo wrapper."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    options = dict(env_config)
    shaping = float(options.pop("shaping", 0.0))
    scale = float(options.pop("reward_scale", 1.0))
    env = okgin_env.env(**options)
    if shaping:
        env = DeadwoodShaping(env, shaping)
    if scale != 1.0:
        env = RewardScale(env, scale)
    return PettingZooEnv(env)


def _split(batch: dict[str, Any]) -> tuple[Any, Any]:
    """The (flat observation, action mask) of a batch of okgin's dict observations."""
    observation = batch[Columns.OBS]
    if not isinstance(observation, dict):
        raise ValueError("okgin's RLModules need dict observations with 'observation' and 'action_mask'")
    return observation["observation"], observation["action_mask"]


class MaskedPPOModule(TorchRLModule, ValueFunctionAPI):
    """PPO's module: ``_percard`` policy and value networks on ``"observation"``, logits masked by ``"action_mask"``.

    ``model_config``: ``network`` (``"percard"`` or ``"mlp"``), ``observation`` (the env option
    the networks read), ``hidden`` (units per layer).
    """

    def setup(self):
        config = self.model_config or {}
        network = config.get("network", "percard")
        observation = config.get("observation", OBSERVATION_DEFAULT)
        hidden = int(config.get("hidden", 64))
        self.pi = make_network(network, observation, "logits", hidden)
        self.vf = make_network(network, observation, "value", hidden)

    def _forward(self, batch, **kwargs):
        values, action_mask = _split(batch)
        logits = self.pi(values)
        allowed = action_mask.to(dtype=torch_bool()).to(logits.device)
        return {Columns.ACTION_DIST_INPUTS: logits.masked_fill(~allowed, FLOAT_MIN)}

    def _forward_train(self, batch, **kwargs):
        return self._forward(batch, **kwargs)

    def compute_values(self, batch, embeddings=None):
        values, _ = _split(batch)
        return self.vf(values).squeeze(-1)


class SimpleBotModule(RLModule):
    """The simple bot as a non-trainable RLModule: its moves are the actions (RLlib samples nothing)."""

    def setup(self):
        from okgin_env.bots import make_bot

        self.bot = make_bot("simple", seed=int((self.model_config or {}).get("seed", 0)))

    def _forward(self, batch, **kwargs):
        values, masks = _split(batch)
        values, masks = np.asarray(values), np.asarray(masks)
        actions = [self.bot.act({"observation": v, "action_mask": m.astype(np.int8)}) for v, m in zip(values, masks)]
        return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError("SimpleBotModule does not train: keep it out of policies_to_train")


def learner_seat_of(episode: Any) -> int:
    """The seat the learned policy holds in this episode: 0 or 1, half the episodes each (by its id)."""
    import zlib

    return zlib.crc32(str(episode.id_).encode()) % 2


def map_versus_simple(agent_id: str, episode: Any, **kwargs: Any) -> str:
    seat = int(agent_id.rsplit("_", 1)[1])
    return POLICY if seat == learner_seat_of(episode) else BOT_POLICY


def map_self_play(agent_id: str, episode: Any, **kwargs: Any) -> str:
    return POLICY


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
    """The trained shared module as a docs/api.md policy: ``act(observation_dict) -> int`` (greedy)."""

    def __init__(self, module: Any, observation: str = OBSERVATION_DEFAULT):
        self.module = module
        self.observation = observation

    def act(self, observation: dict[str, np.ndarray]) -> int:
        import torch

        # okgin_env.evaluate hands every policy card-layout observations: add the features if trained on them.
        batch = {
            Columns.OBS: {
                "observation": torch.as_tensor(as_model_input(observation, self.observation)[None]),
                "action_mask": torch.as_tensor(observation["action_mask"][None]),
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return int(torch.argmax(logits[0]).item())


def build_config(
    num_env_runners: int = 2,
    envs_per_runner: int = 1,
    rollout_fragment_length: int = 256,
    train_batch: int = 2048,
    minibatch: int = 256,
    epochs: int = 6,
    lr: float = 1e-3,
    gamma: float = 1.0,
    entropy: float = 0.01,
    network: str = "percard",
    hidden: int = 64,
    observation: str = OBSERVATION_DEFAULT,
    opponent: str = "simple",
    reward: str = "points",
    shaping: float = 0.0,
    seed: int = 0,
):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    check_observation(observation)
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent={opponent!r}; allowed: {', '.join(OPPONENTS)}")
    env_config = {
        **DEFAULT_ENV_OPTIONS, "reward": reward, "observation": observation, "shaping": shaping,
        # Points rewards reach +-100 or so; 1/25 keeps the value targets near unit scale.
        "reward_scale": 1 / 25 if reward == "points" else 1.0,
    }
    specs = {
        POLICY: RLModuleSpec(
            module_class=MaskedPPOModule, model_config={"network": network, "observation": observation, "hidden": hidden}
        )
    }
    if opponent == "simple":
        specs[BOT_POLICY] = RLModuleSpec(module_class=SimpleBotModule, model_config={"seed": seed + 1})
        multi_agent = {"policies": {POLICY, BOT_POLICY}, "policy_mapping_fn": map_versus_simple, "policies_to_train": [POLICY]}
    else:
        multi_agent = {"policies": {POLICY}, "policy_mapping_fn": map_self_play}
    return (
        PPOConfig()
        # RLlib's env pre-check steps the env once with an unmasked random action, which okgin
        # rightly rejects (ValueError naming the legal actions); the check is switched off.
        .environment(ENV_NAME, env_config=env_config, disable_env_checking=True)
        .multi_agent(**multi_agent)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
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
            # One round per episode, rewarded at its end: no discount (the TorchRL example's setting).
            gamma=gamma,
            lambda_=0.95,
            entropy_coeff=entropy,
            vf_loss_coeff=0.5,
            use_kl_loss=False,
            grad_clip=1.0,
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
    iterations: int = 100,
    num_env_runners: int = 2,
    envs_per_runner: int = 1,
    train_batch: int = 2048,
    minibatch: int = 256,
    epochs: int = 6,
    lr: float = 1e-3,
    gamma: float = 1.0,
    entropy: float = 0.01,
    network: str = "percard",
    hidden: int = 64,
    observation: str = OBSERVATION_DEFAULT,
    opponent: str = "simple",
    reward: str = "points",
    shaping: float | None = None,
    address: str | None = None,
    seed: int = 0,
    out: str | Path = "runs/rllib_selfplay",
    eval_rounds: int = 200,
    eval_matches: int = 0,
    shutdown: bool = True,
) -> dict[str, Any]:
    """Start or join Ray, train ``iterations`` PPO iterations, save, reload, evaluate.

    ``shaping=None``: 1.0 in self-play, 0 against simple (see ``DeadwoodShaping``)."""
    import ray
    import ray.cloudpickle
    from ray.tune.registry import register_env

    check_observation(observation)
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent={opponent!r}; allowed: {', '.join(OPPONENTS)}")
    if shaping is None:
        shaping = 1.0 if opponent == "self" else 0.0
    observation_kind = observation
    import torch

    # The driver's own forward passes (the evaluation) are one decision at a time: more torch
    # threads only contend for the cores (the other examples do the same).
    torch.set_num_threads(1)
    this_module = sys.modules[__name__]
    if __name__ != "__main__":
        # Imported (by the test, say): ship this module's classes by value, as for a script.
        ray.cloudpickle.register_pickle_by_value(this_module)
    # The shared network module sits next to this script, not on the workers' path.
    ray.cloudpickle.register_pickle_by_value(_percard)

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
            lr=lr,
            gamma=gamma,
            entropy=entropy,
            network=network,
            hidden=hidden,
            observation=observation,
            opponent=opponent,
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
                    # The learned policy's own mean return per round (points / 25 with reward="points").
                    "learner_return_mean": _get(result, "env_runners", "module_episode_returns_mean", POLICY),
                    "episode_len_mean": _get(result, "env_runners", "episode_len_mean"),
                }
            )
            sampled = steps_now
            print(
                f"iteration {len(history)}/{iterations}: {int(steps_now)} env steps, "
                f"{clock.seconds():.0f} s, learner return mean {history[-1]['learner_return_mean']}",
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
        sample = probe.observe(probe.agent_selection)
        action = RLlibPolicy(module, observation_kind).act(sample)
        algo.stop()

        # Reload only the policy from the checkpoint (no env runners needed for that).
        from ray.rllib.core.rl_module.rl_module import RLModule

        module_path = os.path.join(checkpoint, "learner_group", "learner", "rl_module", POLICY)
        reloaded = RLModule.from_checkpoint(module_path)
        if RLlibPolicy(reloaded, observation_kind).act(sample) != action:
            raise AssertionError("reloaded module acts differently")

        policy = RLlibPolicy(reloaded, observation_kind)
        results: dict[str, Any] = {
            "framework": f"RLlib {ray.__version__} PPO (new API stack), PettingZooEnv, "
            + ("shared-policy self-play" if opponent == "self" else "against a SimpleBotModule"),
            "machine": machine_note(),
            "observation": observation_kind,
            "network": network,
            "opponent_in_training": opponent,
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
            **evaluate_vs_simple(policy, eval_rounds, eval_matches),
        }
        results["_objects"] = {"module": reloaded}
        return results
    finally:
        if shutdown:
            ray.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100, help="PPO training iterations")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--envs-per-runner", type=int, default=1)
    parser.add_argument("--train-batch", type=int, default=2048, help="env steps (both seats) per iteration")
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=1.0, help="discount per decision")
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus coefficient")
    add_network_arguments(parser)
    parser.add_argument("--opponent", default="simple", choices=OPPONENTS,
                        help="simple: the other seat is the simple bot (a non-trainable RLModule); self: self-play")
    parser.add_argument("--reward", default="points", choices=["points", "win"],
                        help="points: the round's score (scaled by 1/25); win: +1/-1 for the round's winner/loser")
    parser.add_argument("--shaping", type=float, default=None,
                        help="deadwood shaping coefficient (0: off; default 1.0 with --opponent self, else 0)")
    parser.add_argument(
        "--address",
        default=os.environ.get("OKGIN_RAY_ADDRESS"),
        help="an existing Ray cluster ('auto' or 'HOST:6379'); default: start a local instance",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-rounds", type=int, default=200, help="rounds per evaluation")
    parser.add_argument("--eval-matches", type=int, default=0, help="whole matches against simple through okgin_env.evaluate")
    parser.add_argument("--out", default="runs/rllib_selfplay")
    parser.add_argument("--results", default=None, help="also write the JSON summary here")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.num_env_runners < 0 or args.train_batch < 2 or args.eval_rounds < 1 or args.eval_matches < 0:
        parser.error("--iterations and --eval-rounds must be at least 1, --num-env-runners at least 0, "
                     "--train-batch at least 2, --eval-matches at least 0")  # exits 2 with the usage line
    settings = {key: value for key, value in vars(args).items() if key != "results"}
    results = train(**settings)
    results.pop("_objects")
    write_results(args.results, results)


if __name__ == "__main__":
    main()
