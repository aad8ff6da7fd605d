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
from okgin_env.observation import layout_for

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


def test_sb3_maskable_ppo(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    import torch
    from okgin_env.features import with_features

    example = load_example("sb3_maskable_ppo")
    n_envs, n_steps = 2, 128
    results = example.train(
        timesteps=2 * n_envs * n_steps, n_envs=n_envs, n_steps=n_steps, eval_rounds=4, eval_matches=2, keep_masks=n_steps,
        out=tmp_path,
    )
    check_eval(results)
    assert results["observation"] == "features" and results["network"] == "percard"
    progress = capsys.readouterr().out  # progress by default: a line per rollout with rounds ended
    assert "training MaskablePPO for 512 decisions against simple" in progress
    assert "won" in progress and "mean reward" in progress and not results["interrupted"]
    check_vs_simple(results)
    assert (tmp_path / "maskable_ppo_okgin.zip").is_file()
    objects = results["_objects"]
    model, envs = objects["model"], objects["envs"]
    # The per-card networks are the policy: SB3's own linear heads are identities.
    assert isinstance(model.policy.action_net, torch.nn.Identity) and isinstance(model.policy.value_net, torch.nn.Identity)
    assert type(objects["reloaded"].policy.mlp_extractor.policy_net).__name__ == "PerCardNet"

    # The masks in MaskablePPO's rollout buffer are exactly those the envs handed out, in order
    # (after training the buffer is flattened env-major), and every stored action is inside its mask.
    buffer = model.rollout_buffer
    stored_masks = buffer.action_masks.reshape(n_envs, n_steps, -1)
    stored_actions = buffer.actions.reshape(n_envs, n_steps).astype(int)
    for i, env in enumerate(envs):
        given = np.stack(env.history[-n_steps:]).astype(np.float32)
        np.testing.assert_array_equal(stored_masks[i], given)
        assert given[np.arange(n_steps), stored_actions[i]].all()
    assert buffer.observations.shape[-1] == layout_for(2, "features").size  # the feature observations

    # The trained policy puts no probability outside the mask, for the trained and the reloaded
    # model (on the feature observations the env gives), and acts legally on card observations
    # (what okgin_env.evaluate gives), also when one action alone is legal.
    observations = real_observations(40)
    obs = torch.as_tensor(np.stack([with_features(o["observation"], o["action_mask"]) for o in observations]))
    masks = np.stack([o["action_mask"] for o in observations]).astype(bool)
    for policy_model in (model, objects["reloaded"]):
        with torch.no_grad():
            probs = policy_model.policy.get_distribution(obs, action_masks=masks).distribution.probs.numpy()
        assert np.all(probs[~masks] < 1e-6)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
        policy = example.SB3Policy(policy_model, "features")
        for observation in observations:
            assert observation["action_mask"][policy.act(observation)] == 1
            only = np.zeros_like(observation["action_mask"])
            choice = int(np.flatnonzero(observation["action_mask"])[0])
            only[choice] = 1
            assert policy.act({"observation": observation["observation"], "action_mask": only}) == choice


def check_vs_simple(results: dict) -> None:
    """The mirrored evaluate figures against simple: counts add up, the intervals hold the rates."""
    for key, games in (("evaluate_vs_simple_rounds", "rounds"), ("evaluate_vs_simple_matches", "matches")):
        summary = results[key]
        assert summary["wins"] + summary["losses"] + summary["draws"] == summary[games] > 0
        low, high = summary["win_rate_decided_ci95"]
        assert low <= summary["win_rate_decided"] <= high
    rounds = results["evaluate_vs_simple_rounds"]
    low, high = rounds["win_rate_all_ci95"]
    assert low <= rounds["wins"] / rounds["rounds"] == rounds["win_rate_all"] <= high


def test_percard_network_lines_up_with_the_actions():
    """examples/_percard: card c's scores land on the actions DISCARD_BASE + c and KNOCK_BASE + c;
    ``as_model_input`` appends the features to card observations only."""
    pytest.importorskip("torch")
    import torch
    from okgin_env.features import with_features
    from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD

    percard = load_example("_percard")
    net = percard.PerCardNet("features", "logits", hidden=8)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
        net.card_head.bias.copy_(torch.tensor([1.0, 2.0]))  # discard, knock
        # Card c's discard score also gets c / 100 through its embedding: tells the cards apart.
        net.card_embedding[:, 0] = torch.arange(52) / 100
        net.card_net[0].weight[0, net.card_net[0].in_features - net.rest_net[0].out_features - 8] = 1.0
        net.card_net[2].weight[0, 0] = 1.0
        net.card_head.weight[0, 0] = 1.0
        net.summary_head[2].bias.copy_(torch.tensor([10.0, 20.0, 30.0]))
        logits = net(torch.zeros(layout_for(2, "features").size))
    assert logits.shape == (okgin_env.NUM_ACTIONS,)
    assert logits[[DRAW_STOCK, TAKE_DISCARD, PASS]].tolist() == [10.0, 20.0, 30.0]
    np.testing.assert_allclose(logits[DISCARD_BASE : DISCARD_BASE + 52].numpy(), 1 + np.arange(52) / 100, rtol=1e-6)
    np.testing.assert_allclose(logits[KNOCK_BASE : KNOCK_BASE + 52].numpy(), 2.0)
    assert percard.PerCardNet("cards", "value", hidden=8)(torch.zeros(3, layout_for(2, "cards").size)).shape == (3, 1)
    assert percard.make_network("mlp", "cards", "logits", 16)(torch.zeros(2, layout_for(2, "cards").size)).shape == (2, 107)
    with pytest.raises(ValueError, match="allowed: 'percard', 'mlp'"):
        percard.make_network("cnn", "features")
    with pytest.raises(ValueError, match="allowed: 'logits', 'value'"):
        percard.PerCardNet("features", "q")

    observation = real_observations(1)[0]
    featured = percard.as_model_input(observation, "features")
    np.testing.assert_array_equal(featured, with_features(observation["observation"], observation["action_mask"]))
    np.testing.assert_array_equal(percard.as_model_input({**observation, "observation": featured}, "features"), featured)
    np.testing.assert_array_equal(percard.as_model_input(observation, "cards"), observation["observation"])


def test_tianshou_multiagent(tmp_path):
    pytest.importorskip("tianshou")

    example = load_example("tianshou_multiagent")
    results = example.train(steps=640, n_envs=2, collect_steps=320, epochs=1, eval_rounds=4, eval_matches=2, audit=True, out=tmp_path)
    check_eval(results)
    check_vs_simple(results)
    assert results["observation"] == "features" and results["opponent_in_training"] == "simple"
    assert (tmp_path / "tianshou_ppo_learner.pt").is_file()
    objects = results["_objects"]
    learner = objects["learner"]
    emitted = set().union(*(env.emitted for env in objects["raw_envs"]))
    assert emitted

    # What the learner's last PPO update trained on (the on-policy trainer empties the buffer
    # afterwards): only the learner's own decisions; each (observation, mask) pair is one the env
    # emitted, and each action is inside its mask.
    data, chains = learner.last_batch, learner.last_chains
    assert len(data) > 50 and set(np.asarray(data.obs.agent_id)) == {"learner"}
    obs, masks, acts = np.asarray(data.obs.obs), np.asarray(data.obs.mask), np.asarray(data.act).astype(int)
    assert masks.dtype == bool and masks.shape[1] == okgin_env.NUM_ACTIONS
    assert obs.shape[1] == layout_for(2, "features").size
    assert masks[np.arange(len(acts)), acts].all()
    for o, m in zip(obs, masks):
        assert example.fingerprint(o, m) in emitted
    # Rewards reach the learner's decisions only where its round ended, in whole points / 25, and
    # a barely trained learner loses most rounds to simple (the bot really held the other seat).
    gain, ended = chains["gain"][chains["finished"]], chains["ended"][chains["finished"]]
    assert ended.any() and not gain[~ended].any()
    np.testing.assert_allclose(gain * 25, np.round(gain * 25), atol=1e-6)
    assert (gain[ended] < 0).sum() > 0.6 * ended.sum()

    # The learner's greedy action is always inside the mask (also when only one action is legal),
    # on card observations as okgin_env.evaluate gives them.
    policy = example.TianshouPolicy(learner.policy, "features")
    for observation in real_observations(40):
        assert observation["action_mask"][policy.act(observation)] == 1
        only = np.zeros_like(observation["action_mask"])
        choice = int(np.flatnonzero(observation["action_mask"])[-1])
        only[choice] = 1
        assert policy.act({"observation": observation["observation"], "action_mask": only}) == choice


def test_tianshou_learner_returns_span_the_opponents_moves():
    """Hand-made buffer rows (acting agent, the learner's reward, round over): each learner decision
    gets the rewards up to its next decision, the round's result even when it lands on the
    opponent's row, and decisions of a round the data stops inside are left out."""
    pytest.importorskip("tianshou")
    from tianshou.data import Batch, ReplayBuffer

    example = load_example("tianshou_multiagent")
    rows = [("learner", 0, 0), ("learner", 0, 0), ("opponent", 0, 0), ("opponent", -2, 1),  # lost on the opponent's knock
            ("opponent", 0, 0), ("learner", 0, 0), ("learner", 3, 1),  # won on its own knock
            ("learner", 0, 0), ("opponent", 0, 0)]  # the data stops inside this round
    buffer = ReplayBuffer(20)
    for agent, reward, over in rows:
        observation = Batch(agent_id=agent, obs=np.zeros(2, dtype=np.float32), mask=np.ones(3, dtype=bool))
        buffer.add(Batch(obs=observation, act=0, rew=float(reward), terminated=bool(over), truncated=False, obs_next=observation, info={}))
    indices = np.array([i for i, (agent, _, _) in enumerate(rows) if agent == "learner"])
    chains = example.learner_returns(np.array(["learner"] * len(indices)), indices, buffer)
    assert chains["gain"].tolist() == [0, -2, 0, 3, 0]
    assert chains["ended"].tolist() == [False, True, False, True, False]
    assert chains["successor"].tolist() == [1, -1, 3, -1, -1]
    assert chains["finished"].tolist() == [True, True, True, True, False]
    # GAE along the learner's own decisions (gamma 1, lambda 1: the round's result minus the value).
    values = np.array([0.5, -1.0, 1.0, 2.0, 0.0])
    advantages = example.gae_over_decisions(chains["gain"], chains["ended"], chains["successor"], values, indices, 1.0, 1.0)
    np.testing.assert_allclose(advantages[:4], [-2 - 0.5, -2 + 1.0, 3 - 1.0, 3 - 2.0])


def test_rllib_selfplay(tmp_path):
    pytest.importorskip("ray.rllib")
    pytest.importorskip("torch")
    import torch
    from okgin_env.features import with_features

    example = load_example("rllib_selfplay")
    results = example.train(
        iterations=1, num_env_runners=2, train_batch=200, minibatch=100, epochs=1, eval_rounds=4, eval_matches=2, out=tmp_path
    )
    check_eval(results)
    check_vs_simple(results)
    assert results["num_env_runners"] == 2
    assert results["observation"] == "features" and results["opponent_in_training"] == "simple" and results["shaping"] == 0
    # Every sampled agent step (the learner's and the bot module's) went through MaskAudit on the
    # env runners: none outside its mask.
    assert results["mask_audit_steps"] >= 0.9 * results["env_steps_sampled"] > 0
    assert results["mask_audit_illegal"] == 0

    # The reloaded module's action distribution gives (numerically) zero probability outside the mask.
    from ray.rllib.core.columns import Columns

    module = results["_objects"]["module"]
    observations = real_observations(40)
    batch = {
        Columns.OBS: {
            "observation": torch.as_tensor(np.stack([with_features(o["observation"], o["action_mask"]) for o in observations])),
            "action_mask": torch.as_tensor(np.stack([o["action_mask"] for o in observations])),
        }
    }
    masks = np.stack([o["action_mask"] for o in observations]).astype(bool)
    with torch.no_grad():
        for forward in (module.forward_inference, module.forward_exploration):
            logits = forward(dict(batch))[Columns.ACTION_DIST_INPUTS]
            probs = torch.softmax(logits, dim=-1).numpy()
            assert np.all(probs[~masks] < 1e-6)
    policy = example.RLlibPolicy(module, "features")
    for observation in observations:  # card observations, as okgin_env.evaluate gives them
        assert observation["action_mask"][policy.act(observation)] == 1


def test_rllib_policy_mapping_versus_simple():
    """In every episode one seat is the learned policy and the other the bot; the learner holds
    each seat in about half the episodes; the bot module plays simple's moves."""
    pytest.importorskip("ray.rllib")
    import torch
    from okgin_env.bots import make_bot
    from ray.rllib.core.columns import Columns

    example = load_example("rllib_selfplay")

    class Episode:
        def __init__(self, i: int):
            self.id_ = f"{i:032x}"

    seats = []
    for i in range(200):
        mapped = [example.map_versus_simple(agent, Episode(i)) for agent in ("player_0", "player_1")]
        assert sorted(mapped) == sorted([example.POLICY, example.BOT_POLICY])
        seats.append(mapped.index(example.POLICY))
    assert 60 < sum(seats) < 140
    assert example.map_self_play("player_1", Episode(0)) == example.POLICY

    observations = real_observations(20)
    bot_module = example.SimpleBotModule(
        observation_space=None, action_space=None, inference_only=True, model_config={"seed": 0}
    )
    batch = {Columns.OBS: {
        "observation": torch.as_tensor(np.stack([o["observation"] for o in observations])),
        "action_mask": torch.as_tensor(np.stack([o["action_mask"] for o in observations])),
    }}
    actions = bot_module.forward_inference(batch)[Columns.ACTIONS].tolist()
    simple = make_bot("simple", seed=0)
    assert actions == [simple.act(o) for o in observations]


def test_torchrl_ppo(tmp_path):
    pytest.importorskip("torchrl")
    import torch
    from okgin_env.features import with_features
    from tensordict import TensorDict
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    example = load_example("torchrl_ppo")
    frames = 1024
    results = example.train(
        frames=frames, n_envs=2, frames_per_batch=512, epochs=1, minibatch=128, eval_rounds=4, eval_matches=2,
        audit=True, out=tmp_path,
    )
    check_eval(results)
    assert results["observation"] == "features"
    assert (tmp_path / "torchrl_ppo_actor.pt").is_file()
    for key in ("evaluate_vs_simple_rounds", "evaluate_vs_simple_matches"):
        summary = results[key]
        games = summary["rounds"] if key.endswith("rounds") else summary["matches"]
        assert summary["wins"] + summary["losses"] + summary["draws"] == games > 0
    objects = results["_objects"]
    raw_envs, policy = objects["raw_envs"], objects["policy"]

    # Every env step went through both checks: the collection policy's and MaskAudit's in the env.
    assert results["env_steps_both_seats"] == policy.steps == sum(env.steps for env in raw_envs) == frames
    assert 0.3 * frames < results["mask_audit_learner_steps"] < 0.7 * frames
    emitted = set().union(*(env.emitted for env in raw_envs))

    # The last collected batch: at every step the acting seat's action is inside its mask, and
    # its (observation, mask) pair is one the env handed out.
    batch = objects["last"]["batch"]
    group = batch.get(example.GROUP)
    acting = group.get("mask")
    assert acting.sum(-1).eq(1).all()  # AEC: exactly one seat acts at each step
    steps = torch.nonzero(acting).tolist()
    assert len(steps) == 512
    for env_index, t, seat in steps:
        mask = group.get("action_mask")[env_index, t, seat].numpy()
        assert mask[int(group.get("action")[env_index, t, seat])]
        assert example.fingerprint(group.get(example.OBS_KEY)[env_index, t, seat].numpy(), mask) in emitted

    # What PPO trained on: only the learner's decisions, each inside its mask and as the env gave it;
    # +-1 / 0 rewards, and only on the decision that ends a round.
    data = objects["last"]["decisions"]
    masks, actions = data["action_mask"].numpy(), data["action"].numpy()
    assert len(data) > 50 and masks[np.arange(len(data)), actions].all()
    for o, m in zip(data[example.OBS_KEY].numpy(), masks):
        assert example.fingerprint(o, m) in emitted
    rewards, dones = data["next", "reward"][:, 0].numpy(), data["next", "done"][:, 0].numpy()
    assert dones.any() and dones[-1]
    assert results["reward"] == "points" and not rewards[~dones].any()
    np.testing.assert_allclose(rewards * 25, np.round(rewards * 25), atol=1e-4)  # whole points, scaled by 1/25
    # The opponent's seat really played simple (its moves replaced the actor's samples there):
    # a barely trained learner loses nearly every round to it, where two such learners would
    # mostly draw (neither knocks).
    assert (rewards[dones] < 0).sum() > 0.7 * dones.sum()

    # The trained and the reloaded actor give no probability outside the mask, and act legally
    # (also when one action alone is legal), on card observations as evaluate gives them.
    observations = real_observations(40)
    values = np.stack([with_features(o["observation"], o["action_mask"]) for o in observations])
    masks = np.stack([o["action_mask"] for o in observations]).astype(bool)
    for actor in (objects["actor"], objects["reloaded"]):
        td = TensorDict({example.OBS_KEY: torch.as_tensor(values), "action_mask": torch.as_tensor(masks)}, batch_size=[40])
        with torch.no_grad():
            probs = actor.get_dist(td).probs.numpy()
        assert np.all(probs[~masks] < 1e-6)
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            greedy = actor(td)["action"].tolist()
        trained = example.TorchRLPolicy(actor, "features")
        assert [trained.act(o) for o in observations] == greedy  # the actor's own deterministic action
        for observation in observations:
            assert observation["action_mask"][trained.act(observation)] == 1
            only = np.zeros_like(observation["action_mask"])
            choice = int(np.flatnonzero(observation["action_mask"])[0])
            only[choice] = 1
            assert trained.act({"observation": observation["observation"], "action_mask": only}) == choice


def test_torchrl_learner_decisions():
    """Hand-made steps of two envs (learner in seat 0 and 1): each learner decision gets the learner's
    rewards up to its next decision; rounds the learner never acted in, and the round still running
    at the end of the batch, are left out."""
    pytest.importorskip("torchrl")
    import torch
    from tensordict import TensorDict

    example = load_example("torchrl_ppo")
    group, n, t_len = example.GROUP, okgin_env.NUM_ACTIONS, 8
    # Per env: (acting seat, the learner's reward, round over) at each step.
    steps = [
        [(1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 0, 0), (1, -1, 1), (1, -1, 1), (0, 0, 0), (1, 0, 0)],
        [(1, 0, 0), (0, 0, 0), (1, 1, 1), (0, 0, 0), (1, 0, 0), (0, 0, 1), (0, 0, 0), (1, 0, 0)],
    ]
    learner_seats = [0, 1]
    acting = torch.zeros(2, t_len, 2, dtype=torch.bool)
    reward = torch.zeros(2, t_len, 2, 1)
    done = torch.zeros(2, t_len, 1, dtype=torch.bool)
    for e, env_steps in enumerate(steps):
        for t, (seat, r, over) in enumerate(env_steps):
            acting[e, t, seat] = True
            reward[e, t, learner_seats[e], 0] = r
            reward[e, t, 1 - learner_seats[e], 0] = -r
            done[e, t, 0] = bool(over)
    # Observation entry 0 names the step: 100 * env + 10 * t + seat.
    observation = torch.zeros(2, t_len, 2, 3)
    for e in range(2):
        for t in range(t_len):
            for seat in range(2):
                observation[e, t, seat, 0] = 100 * e + 10 * t + seat
    batch = TensorDict(
        {
            (group, "mask"): acting,
            (group, *example.OBS_KEY): observation,
            (group, "action_mask"): torch.ones(2, t_len, 2, n, dtype=torch.bool),
            (group, "action"): torch.arange(2 * t_len * 2).reshape(2, t_len, 2) % n,
            (group, "action_log_prob"): torch.zeros(2, t_len, 2),
            ("next", group, "reward"): reward,
            ("next", "done"): done,
        },
        batch_size=[2, t_len],
    )
    data = example.learner_decisions(batch, learner_seats)
    assert data[example.OBS_KEY][:, 0].tolist() == [10, 30, 101, 121, 141]
    assert data["next", "reward"][:, 0].tolist() == [0, -1, 0, 1, 0]
    assert data["next", "done"][:, 0].tolist() == [False, True, False, True, True]
    assert data["next", "terminated"][:, 0].tolist() == [False, True, False, True, True]
    # Not the end of a round: the next observation is the learner's next decision's.
    assert data[("next", *example.OBS_KEY)][:, 0].tolist()[0] == 30
    assert data[("next", *example.OBS_KEY)][:, 0].tolist()[2] == 121
    assert data["action"].tolist() == [(2 * t + s) % n for t, s in ((1, 0), (3, 0))] + [
        (2 * t_len * 2 // 2 + 2 * t + 1) % n for t in (0, 2, 4)
    ]
    assert "action_log_prob" in data.keys()
    assert example.learner_decisions(batch[:, :1], learner_seats) is None  # no round finished


def test_torchrl_uses_the_shared_per_card_network():
    """The TorchRL example's PerCardNet is examples/_percard's, whose action layout
    test_percard_network_lines_up_with_the_actions checks."""
    pytest.importorskip("torchrl")
    assert load_example("torchrl_ppo").PerCardNet is load_example("_percard").PerCardNet


def test_torchrl_bad_settings_exit_2(capsys):
    pytest.importorskip("torchrl")
    example = load_example("torchrl_ppo")
    for argv in (["--n-envs", "3"], ["--frames-per-batch", "100"], ["--frames", "10"], ["--eval-rounds", "0"]):
        with pytest.raises(SystemExit) as stop:
            example.main(argv)
        assert stop.value.code == 2
        assert "error:" in capsys.readouterr().err
    with pytest.raises(ValueError, match="allowed: cards, features"):
        example.check_settings("planes", 8, 4096, 8192)
