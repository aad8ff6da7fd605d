"""Tensor engine speed: ``okgin_env.tensor.TensorEnv`` against ``okgin_env.BatchEnv`` (numpy), in one run.

Both play uniformly random legal actions in classic two-player rounds (``episode="round"``), and
both produce every game's observation (the ``cards`` layout) and action mask at every step, resets
included; a step counts one decision per game. The random actions are drawn on the engine's side
(torch on the tensor engine's device, numpy for ``BatchEnv``), so neither pays for a conversion.
On a GPU the clock is read after ``torch.cuda.synchronize()``.

Prints one line per system and size, then the ratio at the shared size::

    tensor_env: device=cpu envs=1024 decisions_per_s=...
    batch_env: device=cpu envs=1024 decisions_per_s=...

    python benchmarks/bench_tensor.py                      # one CPU thread (the project's target row)
    python benchmarks/bench_tensor.py --device cuda --envs 1024 16384 131072

``--rollout`` adds the learner's rollout collection against ``simple`` (the engine, the network's
inputs, the opponent and the policy network's forward pass and sampling; no gradient step), for
today's trainer (``training.train.collect_rollout`` over ``HostTables``, ``VectorGymEnv`` games on the
host) and the tensor path (the same function over ``TensorTables`` on ``--device``), counting learner
decisions::

    rollout: system=today device=cpu tables=512 decisions_per_s=...
    rollout: system=tensor device=cpu tables=512 decisions_per_s=...

``--network`` picks the learner's network for both (default ``suits``, ``training.train``'s; ``mlp``:
the recipes' and the shipped files'); without ``--rollout`` or ``--ppo`` it is refused.

``--ppo`` adds the whole PPO learner (rollout, advantages and the gradient steps of
``training.train.update_networks`` with the shipped hyperparameters; no evaluation), counting learner
decisions, for the same two systems (``--ppo-tables`` for today's, ``--ppo-tensor-tables`` for the
tensor path's: the same network and update settings either way), and the gradient steps alone
(``update_only``, over one collected rollout: what a learner with free rollouts would reach, the
bound of any rollout speed-up)::

    ppo: system=today device=cpu tables=128 learner_decisions_per_s=...
    ppo: system=tensor device=cpu tables=512 learner_decisions_per_s=...
    ppo: system=update_only device=cpu tables=128 learner_decisions_per_s=...

    python benchmarks/bench_tensor.py --rollout --ppo     # host 128 tables, tensor 512 (the defaults)

Medians of ``--repeats`` measurements of ``--seconds`` each, the systems interleaved. ``--threads``
sets torch's CPU threads (default 1: the "one core" rows of the project's targets).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import add_repo_root  # noqa: E402

add_repo_root()  # --rollout and --ppo import the checkout's training package

from okgin_env.batch import BatchEnv  # noqa: E402
from okgin_env.bots.random_bot import random_legal_actions  # noqa: E402
from okgin_env.tensor import TensorEnv  # noqa: E402
from okgin_env.tensor.arguments import check_device  # noqa: E402


def tensor_loop(num_envs: int, device: str):
    env = TensorEnv(num_envs, device=device, episode="round", illegal="report")
    out = env.reset(seed=0)
    generator = torch.Generator(device=device).manual_seed(1)
    sync = torch.cuda.synchronize if env.device.type == "cuda" else (lambda: None)

    def run(seconds: float) -> int:
        nonlocal out
        decisions = 0
        sync()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            scores = torch.rand(out.action_mask.shape, generator=generator, device=env.device) * out.action_mask
            out = env.step(scores.argmax(1))
            decisions += num_envs
        sync()
        return decisions

    return run


def batch_loop(num_envs: int):
    env = BatchEnv(num_envs, episode="round", copy=False)
    out = env.reset(seed=0)
    rng = np.random.default_rng(1)

    def run(seconds: float) -> int:
        nonlocal out
        decisions = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            out = env.step(random_legal_actions(out.action_masks, rng))
            decisions += num_envs
        return decisions

    return run


def learner_tables(tensor: bool, tables: int, device: str):
    """Classic matches against ``simple``, the learner alternating seats, dealt with seed 0: the
    tensor engine's tables on ``device``, or the host's (``VectorGymEnv``) for today's trainer."""
    from okgin_env.rules.config import make_config
    from training.host_tables import HostTables, Teacher
    from training.tensor_rollout import TensorTables

    if tensor:
        env = TensorTables(tables, device=device, learner_seat="alternate", episode="match", reward="points")
    else:
        rules = make_config("classic")
        env = HostTables(tables, ["simple"] * tables, rules, "match", Teacher("simple", tables, 0, rules))
    env.reset(seed=0)
    return env


def rollout_loop(system: str, tables: int, device: str, network: str, steps: int = 16):
    """Rollout collection of ``steps`` learner decisions per table, repeated; today's or the tensor path."""
    from okgin_env.observation import layout_for
    from training.model import make_network
    from training.train import Rollout, collect_rollout

    torch.manual_seed(0)
    size = layout_for(2).size
    on = "cpu" if system == "today" else device
    model = make_network(network, size).to(on).eval()
    rollout = Rollout.allocate(steps, tables, size, device=on)
    env = learner_tables(system != "today", tables, device)
    sync = torch.cuda.synchronize if env.device.type == "cuda" else (lambda: None)

    def collect() -> None:
        collect_rollout(model, env, rollout, 1.0)
        sync()

    def run(seconds: float) -> int:
        decisions = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            collect()
            decisions += steps * tables
        return decisions

    return run


def ppo_loop(system: str, tables: int, device: str, network: str):
    """Whole PPO updates (``Hyperparameters()``'s rollout length, epochs and minibatches)."""
    from okgin_env.observation import layout_for
    from training.model import make_network
    from training.train import Hyperparameters, Rollout, bootstrap_value, collect_rollout, compute_advantages, update_networks

    torch.manual_seed(0)
    hyper = Hyperparameters()
    size = layout_for(2).size
    on = device if system == "tensor" else "cpu"
    model = make_network(network, size, hidden=hyper.hidden).to(on)
    optimizer = torch.optim.Adam(model.parameters(), lr=hyper.learning_rate, eps=1e-5)
    rollout = Rollout.allocate(hyper.rollout_length, tables, size, device=on)
    env = learner_tables(system == "tensor", tables, device)

    def collect() -> torch.Tensor:
        collect_rollout(model, env, rollout, hyper.reward_scale)
        return bootstrap_value(model, env)

    if system == "update":  # the gradient steps alone, over one collected rollout: the bound of both
        fixed = collect()
        collect = lambda: fixed  # noqa: E731

    sync = torch.cuda.synchronize if torch.device(on).type == "cuda" else (lambda: None)

    def run(seconds: float) -> int:
        decisions = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            next_value = collect()
            advantages, returns = compute_advantages(rollout, next_value, hyper.gae_lambda)
            update_networks(model, optimizer, rollout, advantages, returns, "ppo", hyper)
            sync()
            decisions += hyper.rollout_length * tables
        return decisions

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], prog="bench_tensor.py")
    parser.add_argument("--device", default="cpu", help="torch device of the tensor engine (default %(default)s)")
    parser.add_argument("--envs", type=int, nargs="+", default=[1024], help="batch sizes (default %(default)s)")
    parser.add_argument("--batch-envs", type=int, default=1024, help="BatchEnv's batch size (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default %(default)s)")
    parser.add_argument("--rollout", action="store_true", help="also measure rollout collection against simple")
    parser.add_argument("--tables", type=int, nargs="+", default=[512], help="rollout tables, per system (default %(default)s)")
    parser.add_argument("--ppo", action="store_true", help="also measure the whole PPO learner")
    parser.add_argument("--ppo-tables", type=int, default=128,
                        help="the host PPO learner's tables (default %(default)s, the recipes')")
    parser.add_argument("--ppo-tensor-tables", type=int, default=512,
                        help="the tensor PPO learner's tables (default %(default)s: on one CPU thread its "
                             "rollout runs as fast as at 2,048 and 4x faster than at 128)")
    parser.add_argument("--network", default=None,
                        help="the learner's network in --rollout and --ppo, a training.model.NETWORKS name "
                             "(default: training.train's)")
    parser.add_argument("--seconds", type=float, default=3.0, help="wall time per measurement (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="measurements per system; the median is printed")
    args = parser.parse_args()
    sizes = (*args.envs, args.batch_envs, *args.tables, args.ppo_tables, args.ppo_tensor_tables)
    if not 0 < args.seconds < math.inf or args.repeats < 1 or args.threads < 1 or min(sizes) < 1:
        parser.error("--seconds must be a finite number > 0; --repeats, --threads and every batch and table count "
                     "at least 1")
    try:
        check_device(args.device)  # the tensor engine's own check: a device it runs on, usable here
    except ValueError as error:
        parser.error(f"--device: {error}")
    torch.set_num_threads(args.threads)
    if args.rollout or args.ppo:  # the engine rows alone need no training package
        from training.model import NETWORKS
        from training.train import TrainConfig

        args.network = TrainConfig.network if args.network is None else args.network
        if args.network not in NETWORKS:
            parser.error(f"--network {args.network!r}: allowed: {', '.join(NETWORKS)}")
    elif args.network is not None:
        parser.error("--network picks the learner's network of --rollout and --ppo; add one of them "
                     "(the engine rows use no network)")
    systems = {f"tensor_env: device={args.device} envs={n}": (lambda n=n: tensor_loop(n, args.device)) for n in args.envs}
    systems[f"batch_env: device=cpu envs={args.batch_envs}"] = lambda: batch_loop(args.batch_envs)
    if args.rollout:
        for tables in args.tables:
            systems[f"rollout: system=today device=cpu tables={tables}"] = (
                lambda tables=tables: rollout_loop("today", tables, "cpu", args.network))
            systems[f"rollout: system=tensor device={args.device} tables={tables}"] = (
                lambda tables=tables: rollout_loop("tensor", tables, args.device, args.network))
    tensor_tables = args.ppo_tensor_tables
    ppo_today = f"ppo: system=today device=cpu tables={args.ppo_tables}"
    ppo_tensor = f"ppo: system=tensor device={args.device} tables={tensor_tables}"
    ppo_update = f"ppo: system=update_only device=cpu tables={args.ppo_tables}"
    if args.ppo:
        systems[ppo_today] = lambda: ppo_loop("today", args.ppo_tables, "cpu", args.network)
        systems[ppo_tensor] = lambda: ppo_loop("tensor", tensor_tables, args.device, args.network)
        systems[ppo_update] = lambda: ppo_loop("update", args.ppo_tables, "cpu", args.network)
    loops = {}
    try:
        for name, factory in systems.items():
            loops[name] = factory()
            loops[name](min(0.5, args.seconds / 5))  # warm-up: tables on the device, first deals
    except (MemoryError, torch.OutOfMemoryError, RuntimeError) as error:
        if not isinstance(error, (MemoryError, torch.OutOfMemoryError)) and "allocate" not in str(error):
            raise
        parser.exit(2, f"{parser.prog}: error: {name}: the tables do not fit in memory on their device "
                       f"({str(error).splitlines()[0][:200]}); give fewer --envs, --tables or --ppo-*tables\n")
    rates: dict[str, list[float]] = {name: [] for name in systems}
    for repeat in range(args.repeats):
        for name, loop in loops.items():
            start = time.perf_counter()
            decisions = loop(args.seconds)
            rates[name].append(decisions / (time.perf_counter() - start))
        print(f"  repeat {repeat + 1}/{args.repeats}: " + ", ".join(f"{r[-1]:,.0f}/s" for r in rates.values()), file=sys.stderr)
    print(f"torch {torch.__version__}, {args.threads} CPU thread(s), {args.seconds:g} s per measurement, "
          f"median of {args.repeats}" + (f", network {args.network}" if args.rollout or args.ppo else ""))
    for name, values in rates.items():
        unit = "learner_decisions_per_s" if name.startswith("ppo") else "decisions_per_s"
        print(f"{name} {unit}={statistics.median(values):.0f}")
    batch = statistics.median(rates[f"batch_env: device=cpu envs={args.batch_envs}"])
    for n in args.envs:
        tensor = statistics.median(rates[f"tensor_env: device={args.device} envs={n}"])
        print(f"ratio tensor_env(envs={n}) / batch_env(envs={args.batch_envs}): {tensor / batch:.2f}x")
    if args.rollout:
        for tables in args.tables:
            today = statistics.median(rates[f"rollout: system=today device=cpu tables={tables}"])
            tensor = statistics.median(rates[f"rollout: system=tensor device={args.device} tables={tables}"])
            print(f"ratio rollout tensor / today (tables={tables}): {tensor / today:.2f}x")
    if args.ppo:
        today, tensor = statistics.median(rates[ppo_today]), statistics.median(rates[ppo_tensor])
        per_repeat = [b / a for a, b in zip(rates[ppo_today], rates[ppo_tensor])]
        print(f"ratio ppo tensor (tables={tensor_tables}) / today (tables={args.ppo_tables}): {tensor / today:.2f}x "
              f"(per repeat {min(per_repeat):.2f}-{max(per_repeat):.2f}x)")
        update = statistics.median(rates[ppo_update])
        print(f"bound: a learner whose rollouts cost nothing runs at the update's rate, "
              f"{update / today:.2f}x today's (update_only / today)")


if __name__ == "__main__":
    main()
