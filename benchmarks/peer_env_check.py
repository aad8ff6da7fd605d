"""Check what the JAX peer's PPO environment lets its agent do (the 80% per-hand figure of issue 51).

The peer (github.com/jhtschultz/openspiel-jax-games, ``ppo_gin_rummy_v3_fused.py``) reports PPO
winning 80% of hands against its Simple port by 35M steps. Its training env, ``env_step_fused``,
returns to the agent whenever the game is at the agent's draw phase. A stock draw in its engine is
a chance node that keeps the drawing player and the draw phase, so the env hands that chance node
to the agent: the legal mask is every card left in the stock and the agent's action chooses the
card it receives (it also reveals the stock, hence the opponent's hand).

This script plays the peer's own env, unchanged, with fixed agent policies and counts the hands
won by the peer's measure (reward > 0 at the end of a hand), lost and drawn, and the share of the
agent's steps that were such chance nodes:

* ``simple``: the peer's Simple bot for the agent too (its chance action is the highest card id
  left in the stock, as the bot's code chooses);
* ``simple-fair``: the same, but the stock card drawn at random, as a fair engine deals it;
* ``simple-best``: Simple that picks, at the chance node, the stock card leaving the least deadwood;
* ``random``: a uniformly random legal action.

Requirements (not okgin's): a clone of the peer at ``--peer-dir`` and ``pip install "jax[cpu]"
flax optax open_spiel`` (its engine imports ``pyspiel``; its checkpointing library, orbax, is
replaced by an empty module since nothing is saved).

Usage::

    python benchmarks/peer_env_check.py --peer-dir PATH [--envs 512] [--steps 60] [--seed 0]
        [--policies simple simple-fair simple-best random]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import types
from pathlib import Path

POLICIES = ("simple", "simple-fair", "simple-best", "random")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-dir", required=True, help="a clone of jhtschultz/openspiel-jax-games")
    parser.add_argument("--envs", type=int, default=512, help="environments stepped together")
    parser.add_argument("--steps", type=int, default=60, help="agent steps per environment")
    parser.add_argument("--seed", type=int, default=0, help="the JAX key of the run")
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    args = parser.parse_args(argv)
    if args.envs < 1 or args.steps < 1 or args.seed < 0:
        parser.error("--envs and --steps must be at least 1 and --seed non-negative")
    return args


def fail(message: str) -> None:
    print(f"peer_env_check: {message}", file=sys.stderr)
    raise SystemExit(2)


def load_peer(peer_dir: Path):
    """The peer's PPO module with its engine (its orbax import satisfied by empty modules)."""
    if not (peer_dir / "ppo_gin_rummy_v3_fused.py").is_file():
        fail(f"{peer_dir} has no ppo_gin_rummy_v3_fused.py; pass a clone of jhtschultz/openspiel-jax-games as --peer-dir")
    try:
        import flax.training
        import jax  # noqa: F401
        import pyspiel  # noqa: F401
    except ImportError as error:
        fail(f"{error.name} is missing: pip install \"jax[cpu]\" flax optax open_spiel")
    for name in ("orbax", "orbax.checkpoint", "flax.training.orbax_utils"):
        sys.modules.setdefault(name, types.ModuleType(name))
    flax.training.orbax_utils = sys.modules["flax.training.orbax_utils"]
    sys.path.insert(0, str(peer_dir))
    return importlib.import_module("ppo_gin_rummy_v3_fused")


def play(peer, policy: str, envs: int, steps: int, seed: int) -> dict[str, float]:
    import jax
    import jax.numpy as jnp

    gin = peer.gin

    def choose(env_state, key):
        mask = env_state["legal_mask"]
        game = env_state["game_state"]
        chance = gin.is_chance_node(game)
        if policy == "random":
            action = jax.random.categorical(key, jnp.where(mask, 0.0, -1e9))
        else:
            action = gin.simple_bot_action_opt(game)
            if policy == "simple-fair":
                action = jnp.where(chance, jax.random.categorical(key, jnp.where(mask, 0.0, -1e9)), action)
            elif policy == "simple-best":
                hand = gin.get_hand(game, game["current_player"])
                least = jax.vmap(lambda card: jnp.min(
                    gin.calculate_deadwood_compressed(hand.at[card].set(1))[1]).astype(jnp.int32))(jnp.arange(52))
                action = jnp.where(chance, jnp.argmin(jnp.where(mask[:52], least, 10_000)), action)
        # the peer samples from logits of -1e9 everywhere when the mask is empty: uniform over all actions
        return jnp.where(mask.any(), action, jax.random.randint(key, (), 0, peer.NUM_ACTIONS))

    @jax.jit
    def one_step(states, key):
        chance_turn = ~states["done"] & jax.vmap(gin.is_chance_node)(states["game_state"])
        actions = jax.vmap(choose)(states, jax.random.split(key, envs))
        states, reward = jax.vmap(peer.env_step_fused)(states, actions)
        done = states["done"]
        return jax.vmap(peer.env_reset_if_done)(states), reward, done, chance_turn

    key, first = jax.random.split(jax.random.PRNGKey(seed))
    states = jax.vmap(peer.env_init)(jax.random.split(first, envs))
    hands = won = drawn = chance_steps = 0
    started = time.perf_counter()
    for _ in range(steps):
        key, subkey = jax.random.split(key)
        states, reward, done, chance_turn = one_step(states, subkey)
        hands += int(done.sum())
        won += int((done & (reward > 0)).sum())
        drawn += int((done & (reward == 0)).sum())
        chance_steps += int(chance_turn.sum())
    return {"hands": hands, "won": won / max(hands, 1), "drawn": drawn / max(hands, 1),
            "chance_share": chance_steps / (envs * steps), "seconds": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    peer = load_peer(Path(args.peer_dir))
    print(f"{args.envs} envs x {args.steps} agent steps, seed {args.seed}\n")
    print("| agent policy | hands | won (reward > 0) | drawn | agent steps at a stock-draw chance node | seconds |")
    print("|---|---|---|---|---|---|")
    for policy in args.policies:
        row = play(peer, policy, args.envs, args.steps, args.seed)
        print(f"| {policy} | {row['hands']:,} | {row['won']:.1%} | {row['drawn']:.1%} | "
              f"{row['chance_share']:.1%} | {row['seconds']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
