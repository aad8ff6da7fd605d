"""Checkpoint checks (issue 14 #2): every field is validated before a network is built, and
every problem is a ``CheckpointError`` that names the file; loading leaves torch's RNG alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from okgin_env.observation import layout_for  # noqa: E402
from okgin_env.rules.config import make_config  # noqa: E402
from training import load_policy as package_load_policy  # noqa: E402
from training import policy as policy_module  # noqa: E402
from training.policy import CheckpointError, load_checkpoint, load_policy  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "okgin_classic.pt"


@pytest.fixture(scope="module")
def shipped_payload() -> dict:
    return torch.load(SHIPPED, map_location="cpu", weights_only=True)


def write(tmp_path: Path, payload, name: str = "bad.pt") -> Path:
    path = tmp_path / name
    torch.save(payload, path)
    return path


def altered(payload: dict, **metadata) -> dict:
    """A copy of ``payload`` with metadata fields replaced (``None``: removed)."""
    meta = {k: v for k, v in payload["metadata"].items() if metadata.get(k, 0) is not None}
    meta.update({k: v for k, v in metadata.items() if v is not None})
    return {**payload, "metadata": meta}


@pytest.fixture
def no_network_built(monkeypatch):
    """Fail the test if a network is built (the checks must come first)."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("a network was built before the checkpoint was checked")

    monkeypatch.setattr(policy_module, "build_model", refuse)
    monkeypatch.setattr(policy_module, "PolicyValueNet", refuse)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"metadata": None}, "no metadata dict"),
        ({"metadata": "classic"}, "no metadata dict"),
        ({"model": [1, 2, 3]}, "'model' is a list"),
        ({"format": 2}, "not an okgin policy checkpoint"),
        ({"format": torch.tensor([1, 1])}, "not an okgin policy checkpoint"),
    ],
    ids=["no-metadata", "metadata-not-a-dict", "model-not-a-dict", "other-format", "format-a-tensor"],
)
def test_a_malformed_payload_is_refused(tmp_path, shipped_payload, no_network_built, change, message):
    payload = {**shipped_payload, **change}
    if change.get("metadata", 0) is None:
        del payload["metadata"]
    path = write(tmp_path, payload)
    with pytest.raises(CheckpointError, match=message) as error:
        load_policy(path)
    assert str(path) in str(error.value)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"num_players": None}, "metadata has no 'num_players'"),
        ({"observation_size": None}, "metadata has no 'observation_size'"),
        ({"rules": None}, "metadata has no 'rules'"),
        ({"hidden": None}, "metadata has no 'hidden'"),
        ({"num_players": "2"}, "num_players='2' is not an int"),
        ({"num_players": True}, "num_players=True is not an int"),
        ({"num_players": 5}, "num_players=5 is not allowed"),
        ({"rules": "bogus"}, "rules='bogus'; allowed"),
        ({"observation_size": 378.0}, "observation_size=378.0"),
        ({"observation_size": 100}, "observation_size=100"),
        ({"hidden": -3}, "hidden=-3; expected an int in 1..4096"),
        ({"hidden": 0}, "hidden=0"),
        ({"hidden": "192"}, "hidden='192'"),
        ({"hidden": 10**6}, "hidden=1000000"),
        ({"observation_version": "1"}, "observation layout version 1"),
        ({"observation_version": torch.tensor([1, 1])}, "observation layout version"),
        ({"rules": torch.tensor([1])}, "metadata rules=tensor"),
    ],
)
def test_bad_metadata_is_refused_before_anything_is_built(tmp_path, shipped_payload, no_network_built, fields, message):
    path = write(tmp_path, altered(shipped_payload, **fields))
    with pytest.raises(CheckpointError, match=message) as error:
        load_policy(path, rules=None)
    assert str(path) in str(error.value)


def test_a_three_player_tag_on_a_two_player_network_is_refused_at_load(tmp_path, shipped_payload, no_network_built):
    path = write(tmp_path, altered(shipped_payload, rules="penalty", num_players=3))
    with pytest.raises(CheckpointError, match=rf"observation_size=378, but the 3-player observation has {layout_for(3).size}"):
        load_policy(path, rules="penalty", num_players=3)


def test_sizes_that_do_not_match_the_stored_weights_are_refused_without_allocating(tmp_path, shipped_payload, no_network_built):
    path = write(tmp_path, altered(shipped_payload, hidden=4000))  # allowed width, but not what is stored
    with pytest.raises(CheckpointError, match=r"weight encoder.0.weight has shape \(192, 384\).*\(4000, 384\)"):
        load_policy(path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.pop("value_head.2.bias"), r"missing \['value_head.2.bias'\]"),
        (lambda m: m.__setitem__("extra.weight", torch.zeros(3)), r"unexpected \['extra.weight'\]"),
        (lambda m: m.__setitem__("encoder.0.bias", torch.zeros(191)), r"encoder.0.bias has shape \(191,\)"),
        (lambda m: m.__setitem__("encoder.0.bias", torch.zeros(192, dtype=torch.long)), "not a float32 tensor"),
        (lambda m: m.__setitem__("encoder.0.bias", [0.0] * 192), "not a float32 tensor"),
        (lambda m: m.__setitem__("encoder.0.bias", torch.zeros(192, dtype=torch.float16)), "not a float32 tensor"),
        (lambda m: m.__setitem__("encoder.0.weight", m["encoder.0.weight"].to_sparse()), "not a dense tensor on the CPU"),
        (lambda m: m.__setitem__("encoder.0.bias", torch.zeros(192, device="meta")), "not a dense tensor on the CPU"),
        (lambda m: m["scorer_context.weight"].__setitem__((3, 4), float("nan")), "scorer_context.weight holds NaN"),
        (lambda m: m["value_head.0.bias"].__setitem__(0, float("inf")), "value_head.0.bias holds NaN or infinite"),
    ],
    ids=["missing", "unexpected", "shape", "integer", "not-a-tensor", "float16", "sparse", "meta", "nan", "inf"],
)
def test_bad_weights_are_refused(tmp_path, shipped_payload, edit, message):
    model = {k: v.clone() for k, v in shipped_payload["model"].items()}
    edit(model)
    path = write(tmp_path, {**shipped_payload, "model": model})
    with pytest.raises(CheckpointError, match=message) as error:
        load_policy(path)
    assert str(path) in str(error.value)


class _RunsCode:
    """Pickles as a call to print: a file that would run code when read."""

    def __reduce__(self):
        return (print, ("this ran",))


def test_a_file_that_holds_code_is_refused_in_one_line_without_advice_to_run_it(tmp_path, capsys):
    """Issue 52, 14: torch's 6-line refusal passed on its advice to load with weights_only=False."""
    path = write(tmp_path, {"format": 1, "model": _RunsCode()}, "code.pt")
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    message = str(error.value)
    assert message == f"checkpoint {path} holds code (print), not only weights, and is refused: reading it would run that code"
    assert capsys.readouterr().out == ""  # nothing ran
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"garbage data")
    with pytest.raises(CheckpointError, match=r"junk.pt cannot be read \(corrupt or not a torch file\)") as error:
        load_checkpoint(junk)
    assert "\n" not in str(error.value) and "weights_only" not in str(error.value)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"empty.pt cannot be read \(corrupt or not a torch file\): the file "
                                              r"ends before its data \(EOFError\)$"):
        load_checkpoint(empty)  # (the reason was empty)


def test_a_penalty_checkpoint_does_not_load_for_classic_play(tmp_path, shipped_payload):
    path = write(tmp_path, altered(shipped_payload, rules="penalty"), "penalty_2p.pt")
    with pytest.raises(CheckpointError, match=r"penalty_2p.pt was trained for rules='penalty', not 'classic'"):
        load_policy(path)  # the default: classic, as okgin_env.env() plays
    with pytest.raises(CheckpointError, match="rules='penalty', not 'classic'"):
        package_load_policy(path, rules=make_config("classic"))
    assert load_policy(path, rules="penalty").num_players == 2
    assert package_load_policy(path, rules=make_config("penalty")).num_players == 2
    assert load_policy(path, rules=None).num_players == 2  # None: the file's own rules


def test_the_player_count_is_checked_against_the_rules_played(tmp_path, shipped_payload):
    path = write(tmp_path, altered(shipped_payload, rules="penalty"), "penalty_2p.pt")
    with pytest.raises(CheckpointError, match="penalty_2p.pt was trained for num_players=2, not 3"):
        load_policy(path, rules="penalty", num_players=3)
    with pytest.raises(CheckpointError, match="trained for num_players=2, not 3"):
        load_policy(path, rules=make_config("penalty", num_players=3))
    with pytest.raises(CheckpointError, match="trained for num_players=2, not 4"):
        load_checkpoint(SHIPPED, num_players=4)
    with pytest.raises(ValueError, match="rules='bogus' is not a preset"):
        load_policy(SHIPPED, rules="bogus")


def test_loading_a_policy_does_not_advance_torchs_random_generator():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    load_policy(SHIPPED)
    package_load_policy(SHIPPED)
    assert torch.equal(before, torch.random.get_rng_state())


def test_the_package_loader_takes_every_argument_of_the_policy_loader():
    """``okgin_training.load_policy`` (the documented entry) had no ``suit_symmetric``: a TypeError
    where the model cards show it. Its parameters are the module function's, default for default."""
    import inspect

    from training.symmetry import SuitSymmetricNet

    package, module = inspect.signature(package_load_policy), inspect.signature(load_policy)
    assert [(p.name, p.kind, p.default) for p in package.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in module.parameters.values()]
    assert isinstance(package_load_policy(SHIPPED, suit_symmetric=True).model, SuitSymmetricNet)


def test_a_loaded_policy_refuses_an_observation_without_a_legal_action():
    policy = load_policy(SHIPPED)
    observation = np.zeros(layout_for(2).size, dtype=np.float32)
    with pytest.raises(ValueError, match="no legal action: this observation is not for the agent to act"):
        policy.act({"observation": observation, "action_mask": np.zeros(107, dtype=np.int8)})
    with pytest.raises(ValueError, match=r"must have shape \(107,\)"):
        policy.act({"observation": observation, "action_mask": np.ones(10, dtype=np.int8)})


def test_importing_training_registers_its_loader_with_okgin_env():
    evaluate = pytest.importorskip("okgin_env.evaluate")
    if not hasattr(evaluate, "register_policy_loader"):
        pytest.skip("this okgin_env has no policy loader registry")
    # A fresh interpreter: in this one, an earlier test may have imported the installed
    # okgin_training, whose own registration would then be the one in place.
    check = ("import training; from okgin_env.policy_loaders import registered_loaders; "
             "assert registered_loaders()['.pt'] is training.load_policy, registered_loaders()")
    done = subprocess.run([sys.executable, "-c", check], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_bad_thread_count_is_named_before_the_file_is_read():
    """Probe 6: threads=0 was torch's RuntimeError, after the whole file was loaded."""
    from training import load_policy

    for threads in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r"threads=.*; allowed: None \(torch's own setting\) or a positive int"):
            load_policy("pretrained:classic", threads=threads)
