"""Issue 14, environment side: bounded episodes (max_rounds, truncation), a RulesConfig's player
count, seeded resets that replay, clear errors for bad input, defaults a learner can start from,
Gymnasium's env checker and finite observation bounds, and the README's reproducible first snippet.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test

import okgin_env
from okgin_env import BatchEnv, GymEnv, VectorGymEnv, make_config, raw_env
from okgin_env.bots import make_bot
from okgin_env.episode import DEFAULT_MAX_ROUNDS, max_round_points, observation_bounds
from okgin_env.bots import SimpleBot
from okgin_env.rules.actions import KNOCK_BASE, NUM_ACTIONS
from okgin_env.rules.config import RulesConfig

PRESETS = [
    {"rules": "classic", "num_players": 2},
    {"rules": "penalty", "num_players": 2},
    {"rules": "penalty", "num_players": 3},
    {"rules": "penalty", "num_players": 4},
]
PRESET_IDS = ["classic-2", "penalty-2", "penalty-3", "penalty-4"]


def never_knock(mask: np.ndarray) -> int:
    """The first legal action that is not a knock: every round ends as a draw."""
    legal = np.flatnonzero(mask)
    return int(legal[legal < KNOCK_BASE][0])


class NeverKnocks:
    def act(self, observation):
        return never_knock(observation["action_mask"])


# ----------------------------------------------------------------------------- #1 max_rounds and truncation


@pytest.mark.parametrize("preset", [PRESETS[0], PRESETS[2]], ids=["classic-2", "penalty-3"])
def test_a_match_nobody_wins_is_truncated_at_max_rounds_and_keeps_one_outcome(preset):
    env = okgin_env.env(**preset, max_rounds=3)
    env.reset(seed=4)
    raw = env.unwrapped
    ended = []
    for agent in env.agent_iter(max_iter=100_000):
        observation, _, terminated, truncated, _ = env.last()
        assert len(raw.match.outcomes) <= 1  # memory stays flat: only the last outcome is kept
        if terminated or truncated:
            assert truncated and not terminated
            ended.append(agent)
            env.step(None)
            continue
        env.step(never_knock(observation["action_mask"]))
        if any(raw.truncations.values()):
            assert all(raw.truncations.values()) and not any(raw.terminations.values())
            assert raw.match.rounds_played == 3 and not raw.match.is_over
    assert sorted(ended) == raw.possible_agents and env.agents == []  # each stepped with None, then removed


def test_the_default_max_rounds_bounds_a_never_knocking_match():
    assert DEFAULT_MAX_ROUNDS == 200
    env = raw_env()
    assert env.max_rounds == DEFAULT_MAX_ROUNDS
    env.reset(seed=1)
    steps = 0
    while not any(env.truncations.values()):
        assert not any(env.terminations.values()) and len(env.match.outcomes) <= 1
        env.step(never_knock(env.observe(env.agent_selection)["action_mask"]))
        steps += 1
        assert steps < 100_000
    assert env.match.rounds_played == DEFAULT_MAX_ROUNDS


def test_max_rounds_none_is_unbounded_and_sensible_play_never_reaches_the_default():
    env = raw_env(max_rounds=None)
    env.reset(seed=2)
    while env.match.rounds_played < 5:
        env.step(never_knock(env.observe(env.agent_selection)["action_mask"]))
    assert not any(env.truncations.values())
    # simple against simple: a hundred seeded matches end by the rules, far below the cap.
    from gymnasium.utils import seeding

    from okgin_env.match_loop import play_match

    config = make_config("classic")
    rounds = []
    for seed in range(100):
        result = play_match(config, [make_bot("simple", seed=2 * seed), make_bot("simple", seed=2 * seed + 1)],
                            seeding.np_random(seed)[0], max_rounds=DEFAULT_MAX_ROUNDS)
        assert not result.truncated
        rounds.append(result.rounds)
    assert max(rounds) * 5 < DEFAULT_MAX_ROUNDS


def test_the_batch_reports_truncation_in_infos_and_resets_the_game():
    batch = BatchEnv(3, max_rounds=2)
    result = batch.reset(seed=0)
    truncated = np.zeros(3, dtype=bool)
    for _ in range(5000):
        result = batch.step(np.array([never_knock(m) for m in result.action_masks]))
        assert all(len(m.outcomes) == 0 for m in batch.matches)
        if result.dones.any():
            assert "truncated" in result.infos and np.array_equal(result.infos["truncated"], result.dones)
            assert np.array_equal(result.infos["_truncated"], result.dones)
            assert result.infos["_final_obs"][result.dones].all()
            truncated |= result.dones
            for g in np.flatnonzero(result.dones):
                assert batch.matches[g].rounds_played == 0  # a new match
        else:
            assert "truncated" not in result.infos
        if truncated.all():
            break
    assert truncated.all()
    # BatchStep keeps its six fields in their order.
    assert result._fields == ("seats", "observations", "action_masks", "rewards", "dones", "infos")


def test_the_single_agent_envs_return_truncated_not_terminated():
    gym = GymEnv(opponents=NeverKnocks(), max_rounds=2)
    _, info = gym.reset(seed=3)
    for _ in range(5000):
        _, _, terminated, truncated, info = gym.step(never_knock(info["action_mask"]))
        if terminated or truncated:
            break
    assert truncated is True and terminated is False
    assert gym.aec.match.rounds_played == 2
    with pytest.raises(RuntimeError, match="episode is over"):
        gym.step(0)

    vector = VectorGymEnv(2, opponents=NeverKnocks(), max_rounds=2)
    _, infos = vector.reset(seed=3)
    seen = np.zeros(2, dtype=bool)
    for _ in range(5000):
        _, _, terminations, truncations, infos = vector.step(np.array([never_knock(m) for m in infos["action_mask"]]))
        assert not terminations.any()
        assert truncations.dtype == bool
        if truncations.any():
            assert infos["_final_obs"][truncations].all()
        seen |= truncations
        if seen.all():
            break
    assert seen.all()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
@pytest.mark.parametrize(
    "make",
    [raw_env, okgin_env.env, lambda **o: BatchEnv(2, **o), lambda **o: VectorGymEnv(2, **o), GymEnv],
    ids=["raw_env", "env", "BatchEnv", "VectorGymEnv", "GymEnv"],
)
def test_bad_max_rounds_is_refused(make, bad):
    with pytest.raises(ValueError, match="max_rounds must be None"):
        make(max_rounds=bad)


def test_pettingzoo_api_test_passes_with_truncated_matches():
    api_test(okgin_env.env(max_rounds=1, target_score=1000), num_cycles=400)


# ----------------------------------------------------------------------------- #8 a RulesConfig keeps its player count


@pytest.mark.parametrize(
    "players_of",
    [
        lambda **o: raw_env(**o).config.num_players,
        lambda **o: okgin_env.env(**o).unwrapped.config.num_players,
        lambda **o: BatchEnv(2, **o).num_players,
        lambda **o: VectorGymEnv(2, **o).num_players,
        lambda **o: GymEnv(**o).aec.config.num_players,
    ],
    ids=["raw_env", "env", "BatchEnv", "VectorGymEnv", "GymEnv"],
)
def test_a_rules_config_keeps_its_player_count(players_of):
    three = make_config("penalty", num_players=3)
    assert players_of(rules=three) == 3
    assert players_of(rules=three, num_players=4) == 4  # an explicit count still overrides
    assert players_of(rules="penalty") == 2  # the preset's default


def test_evaluate_takes_a_rules_config_and_its_player_count():
    from okgin_env.evaluate import evaluate

    quick = {"matches": 2, "episode": "round", "progress": False}
    three = RulesConfig(rules="penalty", num_players=3)
    assert evaluate(["simple", "random"], rules=three, **quick).settings["rules"]["num_players"] == 3
    assert evaluate(["simple", "random"], rules=three, num_players=4, **quick).settings["rules"]["num_players"] == 4
    with pytest.raises(ValueError):
        evaluate(["simple", "random"], rules=RulesConfig(rules="classic"), num_players=3, **quick)


# ----------------------------------------------------------------------------- #9 seeded resets replay


def test_a_seeded_reset_of_the_vector_env_replays_the_seat_alternation():
    env = VectorGymEnv(4, learner_seat="alternate", episode="round")
    first, _ = env.reset(seed=77)
    seats = env.learner_seats
    rng = np.random.default_rng(0)
    for _ in range(60):  # some episodes end, so the alternation moves on
        _, _, _, _, infos = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()]))
    assert not np.array_equal(env.learner_seats, seats)
    second, _ = env.reset(seed=77)
    assert np.array_equal(env.learner_seats, seats) and np.array_equal(first, second)
    assert seats.tolist() == [0, 0, 0, 0]


def test_a_seeded_reset_of_the_gym_env_replays_the_seat_alternation():
    env = GymEnv(learner_seat="alternate", episode="round", rules="penalty", num_players=3)
    first, _ = env.reset(seed=77)
    assert env.learner_seat == 0
    env.reset()
    assert env.learner_seat == 1  # unseeded resets alternate
    second, _ = env.reset(seed=77)
    assert env.learner_seat == 0 and np.array_equal(first, second)


# ----------------------------------------------------------------------------- #10 clear errors


def _resettable():
    return [
        ("raw_env", raw_env()),
        ("env", okgin_env.env()),
        ("BatchEnv", BatchEnv(2)),
        ("GymEnv", GymEnv()),
        ("VectorGymEnv", VectorGymEnv(2)),
    ]


def _reset(env, **kwargs):
    if isinstance(env, (GymEnv, VectorGymEnv)):
        return env.reset(**kwargs)
    return env.reset(seed=kwargs.get("seed"), options=kwargs.get("options"))


@pytest.mark.parametrize("options", [["deck"], "deck", 3])
def test_reset_options_must_be_a_dict(options):
    for name, env in _resettable():
        with pytest.raises(ValueError, match="options must be a dict"):
            _reset(env, seed=0, options=options)


@pytest.mark.parametrize("seed", [True, np.True_, -1, 2.0, "3", np.float64(3)])
def test_every_env_refuses_the_same_bad_seeds(seed):
    for name, env in _resettable():
        with pytest.raises(ValueError, match="is not allowed; expected a non-negative int"):
            _reset(env, seed=seed)


def test_every_env_takes_python_and_numpy_int_seeds_alike():
    for seed in (np.int64(3), np.uint8(3), np.int32(3)):
        for (name, env), (_, reference) in zip(_resettable(), _resettable()):
            _reset(env, seed=seed)
            _reset(reference, seed=3)
            if isinstance(env, BatchEnv):
                assert np.array_equal(env.observations, reference.observations), name
            elif isinstance(env, (GymEnv, VectorGymEnv)):
                assert np.array_equal(env.action_masks(), reference.action_masks()), name
            else:
                assert env.unwrapped.round_state.hands == reference.unwrapped.round_state.hands, name


def test_a_failed_gym_reset_changes_nothing():
    env = GymEnv(learner_seat="alternate")
    observation, _ = env.reset(seed=5)
    seat, episodes = env.learner_seat, env._episodes
    for bad in ({"seed": True}, {"options": ["deck"]}, {"options": {"dealer": 7}}):
        with pytest.raises(ValueError):
            env.reset(**bad)
        assert (env.learner_seat, env._episodes) == (seat, episodes)
        assert np.array_equal(env.aec.observe(env.learner)["observation"], observation)


def test_batch_reset_broadcasts_one_dealer_and_refuses_a_single_deck_clearly():
    batch = BatchEnv(3)
    batch.reset(seed=0, options={"dealer": 1})
    assert [m.round.dealer for m in batch.matches] == [1, 1, 1]
    batch.reset(seed=0, options={"dealer": np.int64(0)})
    assert [m.round.dealer for m in batch.matches] == [0, 0, 0]
    before = batch.observations
    with pytest.raises(ValueError, match=r"options\['dealer'\]"):
        batch.reset(seed=1, options={"dealer": 5})
    with pytest.raises(ValueError, match=r"options\['dealer'\] must be one seat for every game"):
        batch.reset(seed=1, options={"dealer": "0"})
    with pytest.raises(ValueError, match=r"options\['deck'\] must hold one deck \(or None\) per game"):
        batch.reset(seed=1, options={"deck": 7})
    with pytest.raises(ValueError, match=r"options\['deck'\] must hold one deck \(or None\) per game"):
        batch.reset(seed=1, options={"deck": list(range(52))})
    assert np.array_equal(batch.observations, before)


def test_using_the_aec_env_before_a_successful_reset_is_a_clear_error():
    env = raw_env()
    for use in (lambda: env.step(0), lambda: env.last(), lambda: env.observe("player_0")):
        with pytest.raises(RuntimeError, match=r"call reset\(\)"):
            use()
    # (Before any reset, the wrapped env's order-enforcing wrapper answers with PettingZoo's own message.)
    wrapped = okgin_env.env()
    with pytest.raises(ValueError):
        wrapped.reset(options={"dealer": 9})  # the first reset fails: the env is still not reset
    for use in (lambda: wrapped.step(0), lambda: wrapped.last()):
        with pytest.raises(RuntimeError, match=r"call reset\(\)"):
            use()
    wrapped.reset(seed=0)  # and a good reset then works
    assert wrapped.last()[0]["action_mask"].any()
    assert not hasattr(raw_env(), "agents")  # still an AttributeError for hasattr, as PettingZoo expects


def test_gym_env_step_before_reset_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        GymEnv().step(0)


def test_policies_refuse_an_observation_of_an_agent_not_to_act():
    env = raw_env()
    env.reset(seed=0)
    waiting = next(agent for agent in env.agents if agent != env.agent_selection)
    observation = env.observe(waiting)
    for name in ("random", "simple", "search"):
        with pytest.raises(ValueError, match="no legal action: this observation is not for the agent to act"):
            make_bot(name, seed=0).act(observation)


@pytest.mark.parametrize("action", [NUM_ACTIONS, None, -1, True, 1.5, "3"])
def test_terminate_mode_refuses_what_is_no_action_id_and_changes_nothing(action):
    env = okgin_env.env(illegal_action="terminate")
    env.reset(seed=0)
    before = (env.agent_selection, env.unwrapped.round_state.hands, dict(env.terminations))
    with pytest.raises(ValueError, match=r"action must be an action id \(an int in 0..106\)"):
        env.step(action)
    assert (env.agent_selection, env.unwrapped.round_state.hands, dict(env.terminations)) == before
    assert not any(env.terminations.values())

    gym = GymEnv(illegal_action="terminate")
    _, info = gym.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an action id"):
        gym.step(action)
    gym.step(int(np.flatnonzero(info["action_mask"])[0]))  # the episode goes on


def test_raw_env_takes_illegal_action_raise_and_points_to_env_for_terminate():
    assert raw_env(illegal_action="raise").config.num_players == 2
    with pytest.raises(ValueError, match=r"okgin_env.env\(illegal_action='terminate'\)"):
        raw_env(illegal_action="terminate")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: GymEnv(opponents=3), "cannot make a player from 3"),
        (lambda: GymEnv(learner_seat=True), "learner_seat=True"),
        (lambda: GymEnv(learner_seat=np.True_), "learner_seat"),
        (lambda: VectorGymEnv(2, learner_seat=True), "learner_seat=True"),
        (lambda: BatchEnv(2, keep_outcomes="no"), "keep_outcomes must be True or False"),
        (lambda: BatchEnv(2, copy=1), "copy must be True or False"),
        (lambda: VectorGymEnv(2, render_mode="bogus"), "render_mode='bogus'"),
        (lambda: VectorGymEnv(2, opponents="search", rollouts=1.5), "unknown option"),
        (lambda: make_bot("search", rollouts=1.5), "rollouts=1.5"),
    ],
)
def test_bad_constructor_arguments_are_refused_at_once(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ----------------------------------------------------------------------------- #11 defaults a learner can start from


def test_gymnasium_make_gives_the_documented_defaults():
    env = gymnasium.make("OklahomaGin-v0").unwrapped
    assert env.illegal_action == "terminate"
    assert isinstance(env._opponent_for(1), SimpleBot)
    assert (env.aec.episode, env.aec.reward_mode, env.aec.max_rounds) == ("match", "points", DEFAULT_MAX_ROUNDS)
    vector = VectorGymEnv(2)  # the same defaults
    assert isinstance(vector.opponent, SimpleBot)
    assert (vector.batch.episode, vector.batch.reward_mode, vector.batch.max_rounds) == ("match", "points", DEFAULT_MAX_ROUNDS)


def test_a_random_learner_s_episodes_are_short_with_the_defaults():
    env = gymnasium.make("OklahomaGin-v0")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    for _ in range(30):
        for steps in range(1, 1001):
            _, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            if terminated or truncated:
                break
        assert terminated, steps  # the match ended by the rules, within 1,000 learner steps
        _, info = env.reset()


# ----------------------------------------------------------------------------- #12 check_env and finite bounds


def _warnings_of(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught]


def test_check_env_passes_on_gymnasium_make_without_a_warning_of_its_own(capsys):
    found = _warnings_of(lambda: check_env(gymnasium.make("OklahomaGin-v0")))
    # Only the checker's note that gymnasium.make wraps the env (its standard wrappers) remains.
    assert [w for w in found if "different from the unwrapped version" not in w] == []
    assert _warnings_of(lambda: check_env(gymnasium.make("OklahomaGin-v0").unwrapped)) == []


@pytest.mark.parametrize("options", [{}, {"rules": "penalty", "num_players": 4}, {"episode": "round"}])
def test_check_env_passes_on_the_default_gym_env_without_warnings(options):
    assert _warnings_of(lambda: check_env(GymEnv(**options), skip_render_check=True)) == []


def _spaces():
    yield raw_env().observation_space("player_0")["observation"]
    yield GymEnv().observation_space
    yield BatchEnv(2).observation_space
    yield VectorGymEnv(2).single_observation_space


def test_every_observation_space_is_finite_with_the_layout_s_bounds():
    config = make_config("classic")
    low, high = observation_bounds(config)
    for space in _spaces():
        assert np.isfinite(space.low).all() and np.isfinite(space.high).all()
        assert np.array_equal(space.low, low) and np.array_equal(space.high, high)
        assert (space.high > space.low).all()  # no entry whose low equals its high (Gymnasium warns)
    slices = okgin_env.observation.layout_for(2).slices
    assert high[slices["scores"]].tolist() == pytest.approx([(100 + max_round_points(config)) / 100] * 2)
    assert high[slices["knock_limit"]][0] == 1 and high[slices["stock_size"]][0] == 1
    assert high[slices["target_score"]][0] == 1 and high[slices["reshuffles"]][0] == 1
    penalty = observation_bounds(make_config("penalty", num_players=3, max_reshuffles=5, target_score=40))[1]
    assert penalty[okgin_env.observation.layout_for(3).slices["reshuffles"]][0] == 5


@pytest.mark.parametrize("preset", PRESETS, ids=PRESET_IDS)
@pytest.mark.parametrize("rule_options", [{}, {"target_score": 10, "spade_double": True, "gin_bonus": 50}])
def test_observations_stay_inside_the_space(preset, rule_options):
    options = {**preset, **rule_options}
    config = make_config(**options)
    bound = max_round_points(config)
    batch = BatchEnv(8, **options, max_rounds=30)
    space = batch.observation_space
    rng = np.random.default_rng(1)
    result = batch.reset(seed=9)
    most_points = 0
    for t in range(1500):
        assert all(observation in space for observation in result.observations), t
        smart = t % 2 == 0  # half the decisions knock as soon as they may: real scores, gins, undercuts
        actions = []
        for mask in result.action_masks:
            legal = np.flatnonzero(mask)
            knocks = legal[legal >= KNOCK_BASE]
            actions.append(int(knocks[0]) if smart and knocks.size else int(rng.choice(legal)))
        result = batch.step(np.array(actions))
        for j in np.flatnonzero(result.infos.get("_final_obs", [])):
            assert all(final in space for final in result.infos["final_obs"][j])
        for j in np.flatnonzero(result.infos.get("_round_outcome", [])):
            most_points = max(most_points, *result.infos["round_outcome"][j]["points"])
    assert 0 < most_points <= bound
    # The AEC env with simple bots, every agent's observation (the final ones included).
    env = raw_env(**options)
    env.reset(seed=3)
    bots = [make_bot("simple", seed=s) for s in range(config.num_players)]
    env_space = env.observation_space("player_0")
    for _ in range(20_000):
        for agent in env.agents:
            assert env.observe(agent) in env_space
        if any(env.terminations.values()) or any(env.truncations.values()):
            break
        env.step(bots[env.agent_name_mapping[env.agent_selection]].act(env.observe(env.agent_selection)))


# ----------------------------------------------------------------------------- #14 the README's first snippet

#: The README's first example: bots built once and seeded, so reset(seed=42) replays; prints the final scores.
def readme_first_snippet() -> str:
    """The README's first ``python`` code block (the quick-start game)."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


README_SNIPPET = readme_first_snippet()


def test_the_readme_snippet_reproduces_and_prints_the_final_scores():
    runs = [
        subprocess.run([sys.executable, "-c", README_SNIPPET], capture_output=True, text=True, timeout=120, check=True).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert f"It prints `{runs[0].strip()}`" in readme  # the result the README shows is the real one
    scores = eval(runs[0])  # noqa: S307 - our own printed dict
    assert set(scores) == {"player_0", "player_1"} and max(scores.values()) >= 100


# ----------------------------------------------------------------------------- issue 52: stopping training

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_POLICY = ROOT / "checkpoints" / "okgin_classic.pt"


def _spawned_children(pid: int) -> list[int]:
    """The ``multiprocessing`` spawn workers whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found


def _started(*arguments: str, until: Path | None = None) -> subprocess.Popen:
    """``python ARGUMENTS`` from the repository root in a process group of its own; with ``until``,
    once that file exists (or the process ended, or after 5 minutes)."""
    process = subprocess.Popen([sys.executable, *arguments], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    deadline = time.time() + 300
    while until is not None and not until.exists() and time.time() < deadline and process.poll() is None:
        time.sleep(0.1)
    return process


def _ended(process: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """The process's ``(stdout, stderr)``; fails the test if it is still running after ``timeout``
    seconds (a hang), killing its process group."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"still running after {timeout} s (hung):\n{out}\n{err}")


def _python(code: str, timeout: float) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter (one torch thread); fails the test if it hangs (``_ended``)."""
    process = _started("-c", "import torch; torch.set_num_threads(1)\n" + code)
    out, err = _ended(process, timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find the evaluation process")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_closing_the_evaluator_never_hangs_when_its_idle_process_was_killed(tmp_path, signum):
    """Issue 52 #1: SIGTERM to the process group (timeout, scancel, systemd), the OOM killer or
    kill -9 of the idle evaluation process; the trainer's close returns at once."""
    candidate = tmp_path / "candidate.pt"
    candidate.write_bytes(SHIPPED_POLICY.read_bytes())
    done = _python(f"""
import os, signal, time
from pathlib import Path
from okgin_env.rules.config import make_config
from tests.test_reliability import _spawned_children
from training.run import Evaluator
evaluator = Evaluator(2, 1, make_config("classic"), 2)
evaluator.submit(Path({str(candidate)!r}), 0)
assert evaluator.collect(wait=True) is not None  # now the process waits for the next job
for pid in _spawned_children(os.getpid()):
    os.kill(pid, {int(signum)})
time.sleep(1)
started = time.time()
evaluator.close()
print(f"closed in {{time.time() - started:.1f}} s")
""", timeout=90)
    assert done.returncode == 0 and "closed in" in done.stdout, done.stderr
    assert float(done.stdout.split()[2]) < 10


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find the evaluation process")
def test_an_evaluation_whose_process_dies_is_dropped_and_the_next_one_runs(tmp_path, capsys):
    """Issue 52 #1: the evaluation process killed during a job: collect(wait=True) returns
    (nothing, with a warning) instead of waiting for a result that never comes."""
    import torch

    from okgin_env.rules.config import make_config
    from training.run import Evaluator

    torch.set_num_threads(1)
    evaluator = Evaluator(2, 1, make_config("classic"), 2)
    try:
        candidate = tmp_path / "candidate_1.pt"
        candidate.write_bytes(SHIPPED_POLICY.read_bytes())
        evaluator.job = (100_000, 1, make_config("classic"), 2)  # long enough to be killed during it
        evaluator.submit(candidate, 10)
        time.sleep(1)
        for pid in _spawned_children(os.getpid()):
            os.kill(pid, signal.SIGKILL)
        started = time.time()
        assert evaluator.collect(wait=True, give_up=lambda: time.time() - started > 60) is None
        assert time.time() - started < 30 and not evaluator.busy
        assert "the evaluation process ended" in capsys.readouterr().err
        evaluator.job = (2, 1, make_config("classic"), 2)
        second = tmp_path / "candidate_2.pt"
        second.write_bytes(SHIPPED_POLICY.read_bytes())
        evaluator.submit(second, 20)
        result, path, decisions = evaluator.collect(wait=True)
        assert path == second and decisions == 20 and result["matches_vs_simple"] == 2
    finally:
        evaluator.close()


@pytest.mark.long
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_sigterm_to_the_process_group_stops_training_and_saves_its_state(tmp_path):
    """Issue 52 #1: ``kill -TERM -- -PGID`` (what timeout, scancel and systemd send) while the
    evaluation process waits for work: exit 143 within seconds, summary written, resume printed."""
    run_dir = tmp_path / "run"
    # Once the first evaluation is done, its process waits for the next one.
    process = _started("-m", "training.train", "--total-decisions", "10000000", "--num-tables", "4", "--bc-updates",
                       "1", "--eval-every", "1000000", "--eval-matches", "2", "--run-dir", str(run_dir),
                       until=run_dir / "best.pt")
    os.killpg(process.pid, signal.SIGTERM)
    _, err = _ended(process, 60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "--resume" in err
    assert json.loads((run_dir / "summary.json").read_text())["stopped_by"] == "SIGTERM"


def _stopped_training(signal_name: str):
    """A stand-in for ``training.train.run`` that was stopped by ``signal_name`` after 3 updates."""

    def train(config, run_dir, *, resume, progress_bar, command):
        return {"stopped_by": signal_name, "decisions": 768, "updates": 3, "elapsed_s": 2.0}

    return train


def _no_measurement(*_args, **_kwargs):
    raise AssertionError("a stopped training must not be measured")


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_exploit_stopped_in_its_training_measures_nothing_and_exits_with_the_signal(tmp_path, monkeypatch,
                                                                                    signal_name):
    """Issue 52 #3: Ctrl-C or SIGTERM during okgin-exploit's training stops the command (no
    measurement of the partly trained response, no exploit.json, exit 128 + the signal)."""
    pytest.importorskip("torch")
    import training.exploit as exploit

    monkeypatch.setattr(exploit, "train", _stopped_training(signal_name))
    monkeypatch.setattr(exploit, "evaluate", _no_measurement)
    assert exploit.cli(["--policy", "simple", "--run-dir", str(tmp_path / "ex")]) == \
        128 + signal.Signals[signal_name].value
    assert not (tmp_path / "ex" / "exploit.json").exists()


def test_exploit_stopped_in_its_measurement_says_how_to_continue(tmp_path, monkeypatch, capsys):
    """Issue 52 #3: a signal during the measurement drops it: no exploit.json, the resume command."""
    pytest.importorskip("torch")
    import training.exploit as exploit

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(exploit, "train", lambda *args, **kwargs: {**_stopped_training("")(*args, **kwargs),
                                                                     "stopped_by": None})
    monkeypatch.setattr(exploit, "evaluate", interrupted)
    argv = ["--policy", "simple", "--run-dir", str(tmp_path / "ex")]
    assert exploit.cli(argv) == 128 + signal.SIGINT
    err = capsys.readouterr().err
    assert "stopped by SIGINT; continue with: " in err and f"--run-dir {tmp_path / 'ex'} --resume" in err
    assert "Traceback" not in err and not (tmp_path / "ex" / "exploit.json").exists()


@pytest.mark.long
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_sigterm_during_exploit_training_stops_it_with_143_and_the_resume_command(tmp_path):
    """Issue 52 #1 and #3: okgin-exploit's training stopped by SIGTERM to its process group: exit
    143 within seconds, the best response's last.pt kept, no measurement, how to continue."""
    run_dir = tmp_path / "ex"
    process = _started("-m", "training.exploit", "--policy", "simple", "--decisions", "10000000", "--num-tables", "4",
                       "--matches", "2", "--run-dir", str(run_dir),
                       until=run_dir / "best_response" / "last.pt")
    os.killpg(process.pid, signal.SIGTERM)
    _, err = _ended(process, 60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "best_response/last.pt holds update" in err and "nothing saved" not in err
    assert "python -m training.exploit --policy simple --decisions 10000000" in err and "--resume" in err
    assert not (run_dir / "exploit.json").exists()


def test_a_copied_run_folder_resumes_with_its_paths_relative_to_it(tmp_path, monkeypatch):
    """Issue 52 #16: a manifest's paths into its run folder (a sibling's labels) compare relative
    to it, so the folder copied with its siblings resumes; a path to another place is refused."""
    import shutil

    pytest.importorskip("torch")
    from training.improve import ImproveConfig
    from training.manifest import check_manifest, write_manifest

    def config(root: Path, extra: str = "improve1") -> ImproveConfig:
        return ImproveConfig(init_from="sha256:0", extra_labels=f"{root / extra},{tmp_path / 'kept'}")

    monkeypatch.chdir(tmp_path)
    (tmp_path / "old" / "improve2").mkdir(parents=True)
    write_manifest(Path("old") / "improve2", config(Path("old")))  # relative paths, from tmp_path
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    monkeypatch.chdir(tmp_path / "new")  # another working folder too
    check_manifest(tmp_path / "new" / "improve2", config(tmp_path / "new"))
    check_manifest(tmp_path / "old" / "improve2", config(Path("..") / "old"))
    with pytest.raises(ValueError, match="extra_labels"):
        check_manifest(tmp_path / "new" / "improve2", config(tmp_path / "new", extra="improve3"))
    check_manifest(tmp_path / "new" / "improve2", config(tmp_path / "old"))  # the same files
    with pytest.raises(ValueError, match="extra_labels"):
        check_manifest(tmp_path / "new" / "improve2", config(tmp_path / "other"))


def test_a_run_recorded_before_a_setting_existed_resumes_with_it_at_its_default(tmp_path):
    """A setting added later (``ImproveConfig.teacher``, 2026-12-06; a nested FitSettings field)
    is missing from an older run's manifest: it counts as recorded at its default, so the run
    resumes with the default and is refused with another value, naming the setting."""
    pytest.importorskip("torch")
    from training.improve import FitSettings, ImproveConfig
    from training.manifest import MANIFEST, check_manifest, write_manifest

    write_manifest(tmp_path, ImproveConfig(init_from="sha256:0"))
    record = json.loads((tmp_path / MANIFEST).read_text())
    del record["config"]["teacher"], record["config"]["fit"]["epochs"]
    (tmp_path / MANIFEST).write_text(json.dumps(record))
    check_manifest(tmp_path, ImproveConfig(init_from="sha256:0"))
    with pytest.raises(ValueError, match=r"teacher: '' -> 'simple'"):
        check_manifest(tmp_path, ImproveConfig(init_from="sha256:0", teacher="simple"))
    with pytest.raises(ValueError, match=r"fit.epochs: 4 -> 5"):
        check_manifest(tmp_path, ImproveConfig(init_from="sha256:0", fit=FitSettings(epochs=5)))
