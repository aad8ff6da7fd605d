"""training.soup: the weight average of policy files of one table and one network."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from training.policy import load_checkpoint, write_checkpoint  # noqa: E402
from training.soup import average_checkpoints, cli  # noqa: E402

PENALTY_3P = "checkpoints/okgin_penalty_3p.pt"


def test_the_average_is_the_mean_of_every_tensor_and_plays(tmp_path):
    import numpy as np

    from okgin_env import make_config
    from okgin_env.match_loop import play_match
    from training import load_policy

    start = load_checkpoint(PENALTY_3P)
    moved = {name: tensor + 0.5 if tensor.is_floating_point() else tensor for name, tensor in start["model"].items()}
    other = tmp_path / "moved.pt"
    write_checkpoint(other, {**start, "model": moved})
    out = tmp_path / "soup.pt"
    assert cli(["--out", str(out), PENALTY_3P, str(other)]) == 0
    soup = load_checkpoint(out, rules="penalty", num_players=3)
    for name, tensor in start["model"].items():
        torch.testing.assert_close(soup["model"][name], tensor + 0.25 if tensor.is_floating_point() else tensor)
    assert [source["path"] for source in soup["metadata"]["averaged_from"]] == [PENALTY_3P, str(other)]
    assert all(len(source["sha256"]) == 64 for source in soup["metadata"]["averaged_from"])
    # The output may be one of the inputs (all are read before it is written).
    assert cli(["--out", str(other), PENALTY_3P, str(other)]) == 0
    torch.testing.assert_close(load_checkpoint(other)["model"], soup["model"])
    # A file given twice (by another path, or a copy) would weigh twice in the uniform average: refused.
    copy = tmp_path / "copy.pt"
    copy.write_bytes(open(PENALTY_3P, "rb").read())
    with pytest.raises(ValueError, match=f"{copy} holds the same bytes as {PENALTY_3P}: give each policy file once"):
        average_checkpoints([PENALTY_3P, str(other), str(copy)])
    config = make_config("penalty", num_players=3)
    policy = load_policy(str(out), rules="penalty", num_players=3)
    game = play_match(config, [policy, policy, policy], np.random.default_rng(3), max_rounds=3)
    assert game.rounds >= 1


def test_files_of_other_tables_or_networks_are_refused(tmp_path, capsys):
    out = tmp_path / "soup.pt"
    assert cli(["--out", str(out), PENALTY_3P, "checkpoints/okgin_classic.pt"]) == 2
    assert "only files of one table and one network" in capsys.readouterr().err and not out.exists()
    assert cli(["--out", str(out), PENALTY_3P]) == 2
    assert "at least two policy files" in capsys.readouterr().err and not out.exists()
    assert cli(["--out", str(tmp_path / "soup.txt"), PENALTY_3P, PENALTY_3P]) == 2
    assert "ends in .pt" in capsys.readouterr().err
    assert cli(["--out", str(out), PENALTY_3P, str(tmp_path / "missing.pt")]) == 2
    assert "does not exist" in capsys.readouterr().err and not out.exists()
    start = load_checkpoint(PENALTY_3P)
    name = next(iter(start["model"]))
    cut = tmp_path / "cut.pt"
    write_checkpoint(cut, {**start, "model": {k: v for k, v in start["model"].items() if k != name}})
    with pytest.raises(ValueError, match="does not match the network"):
        average_checkpoints([PENALTY_3P, cut])  # (load_checkpoint refuses it)
    wide = tmp_path / "float64.pt"
    write_checkpoint(wide, {**start, "model": {k: v.double() for k, v in start["model"].items()}})
    assert cli(["--out", str(out), PENALTY_3P, str(wide)]) == 2
    assert "is not a float32 tensor" in capsys.readouterr().err and not out.exists()  # (load_checkpoint refuses it)


def test_files_of_the_two_networks_are_refused_by_name(tmp_path, capsys):
    """An mlp file beside a suit-equivariant one of the same table was a KeyError traceback: their
    tensors have other names. The metadata's ``network`` (absent: mlp) must agree."""
    from training.model import SuitEquivariantNet
    from training.policy import save_checkpoint

    start = load_checkpoint(PENALTY_3P)
    meta = {key: start["metadata"][key] for key in ("rules", "num_players", "observation_size", "hidden", "outlook_features")}
    suits = tmp_path / "suits.pt"
    network = SuitEquivariantNet(meta["observation_size"], hidden=meta["hidden"], outlook=meta["outlook_features"])
    save_checkpoint(suits, network, meta)
    assert load_checkpoint(suits)["metadata"]["network"] == "suits"
    out = tmp_path / "soup.pt"
    for inputs in ([PENALTY_3P, str(suits)], [str(suits), PENALTY_3P]):
        assert cli(["--out", str(out), *inputs]) == 2
        error = capsys.readouterr().err
        assert "network" in error and "only files of one table and one network" in error and not out.exists()
    suits_2 = tmp_path / "suits_2.pt"
    save_checkpoint(suits_2, SuitEquivariantNet(meta["observation_size"], hidden=meta["hidden"],
                                                outlook=meta["outlook_features"]), meta)
    assert cli(["--out", str(out), str(suits), str(suits_2)]) == 0


def test_the_shipped_3_player_file_is_the_average_of_the_shipped_files_it_names():
    """``okgin_penalty_3p.pt`` lists its inputs (``averaged_from``): they are kept, have the bytes
    recorded, and their average is its weights, tensor for tensor."""
    import hashlib
    from pathlib import Path

    shipped = load_checkpoint(PENALTY_3P, rules="penalty", num_players=3)
    sources = shipped["metadata"]["averaged_from"]
    assert len(sources) == 4
    # The file records its inputs' paths of the time (checkpoints/...); they now lie in checkpoints/history/.
    paths = [Path("checkpoints/history") / Path(source["path"]).name for source in sources]
    for path, source in zip(paths, sources):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == source["sha256"], path
    average = average_checkpoints(paths)
    for name, tensor in shipped["model"].items():
        assert torch.equal(average["model"][name], tensor), name


def test_files_of_one_network_compare_through_the_loaders_defaults(tmp_path):
    """Issue 52, 8: okgin_classic_step2.pt has no outlook_features (made before the option), which
    load_checkpoint reads as False; the soup refused it beside okgin_classic.pt ("None ... False")."""
    out = tmp_path / "soup.pt"
    assert cli(["--out", str(out), "checkpoints/okgin_classic.pt", "checkpoints/history/okgin_classic_step2.pt"]) == 0
    assert load_checkpoint(out, rules="classic", num_players=2)["metadata"]["outlook_features"] is False


def test_an_out_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, capsys):
    """Issue 52, 9: a folder named x.pt, a path through a file, a link to nothing or a place that
    cannot be written was a traceback (exit 1)."""
    (tmp_path / "folder.pt").mkdir()
    (tmp_path / "file").write_text("")
    (tmp_path / "dangling.pt").symlink_to(tmp_path / "nowhere" / "x.pt")
    start = load_checkpoint(PENALTY_3P)
    other = tmp_path / "moved.pt"
    write_checkpoint(other, {**start, "model": {name: tensor + 0.5 if tensor.is_floating_point() else tensor
                                                for name, tensor in start["model"].items()}})
    for out, message in ((tmp_path / "folder.pt", "is a folder"), (tmp_path / "file" / "x.pt", "is not a folder"),
                         (tmp_path / "dangling.pt", "is a link to nothing"), ("/proc/okgin_soup.pt", "cannot write")):
        assert cli(["--out", str(out), PENALTY_3P, str(other)]) == 2, out
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "nowhere").exists()
