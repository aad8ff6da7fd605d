"""Batched decision labelling (training.labelling) gives exactly the unbatched path's labels."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from training.improve import label_decisions  # noqa: E402
from training.labelling import LABEL_KEYS, label_decisions_batched  # noqa: E402

CLASSIC = "checkpoints/okgin_classic.pt"


@pytest.mark.parametrize("checkpoint, rules, seed", [
    (CLASSIC, "classic", 5),
    (CLASSIC, "classic", 6),
    ("checkpoints/okgin_classic_ppo.pt", "classic", 7),
    ("checkpoints/okgin_penalty_3p.pt", "penalty", 8),  # stock reshuffles: each rollout its own generator
    ("checkpoints/okgin_penalty_4p.pt", "penalty", 9),
])
@pytest.mark.parametrize("rollout_batch", [1, 1024])
def test_batched_labels_are_identical_to_the_single_rollout_labels(checkpoint, rules, seed, rollout_batch):
    job = (checkpoint, rules, seed, 12)
    single = label_decisions(job)
    batched = label_decisions_batched(job, rollout_batch=rollout_batch)
    assert sorted(batched) == sorted(LABEL_KEYS) == sorted(single)
    for key in LABEL_KEYS:
        assert batched[key].dtype == single[key].dtype and batched[key].shape == single[key].shape, key
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    # The labels are real round points of real rollouts: they vary across a decision's actions.
    assert batched["q"].shape[0] == 12
    legal = batched["legal"]
    spread = np.where(legal, batched["q"], -np.inf).max(1) - np.where(legal, batched["q"], np.inf).min(1)
    assert np.any(spread > 0)


@pytest.mark.parametrize("num_players", [3, 4])
def test_a_penalty_policy_labels_tables_of_its_own_player_count(num_players):
    labels = label_decisions_batched((f"checkpoints/okgin_penalty_{num_players}p.pt", "penalty", 4, 3))
    from okgin_env.observation import layout_for

    assert labels["obs"].shape == (3, layout_for(num_players).size)


def test_another_seed_gives_other_labels():
    a = label_decisions_batched((CLASSIC, "classic", 5, 6))
    b = label_decisions_batched((CLASSIC, "classic", 8, 6))
    assert not np.array_equal(a["obs"], b["obs"])


def test_rollout_batch_must_be_positive():
    with pytest.raises(ValueError, match="rollout_batch must be at least 1"):
        label_decisions_batched((CLASSIC, "classic", 5, 2), rollout_batch=0)


def test_improve_resumes_labelling_from_the_chunks_written_before(tmp_path):
    from training.improve import main as improve_main

    common = ["--init-from", CLASSIC, "--decisions", "12", "--chunk", "4", "--workers", "1", "--epochs", "1",
              "--eval-matches", "0", "--no-progress", "--seed", "3"]
    first, second = tmp_path / "first", tmp_path / "second"
    improve_main([*common, "--run-dir", str(first)])
    improve_main([*common, "--run-dir", str(second), "--labelling", "single"])
    chunks = sorted(p.name for p in first.glob("labels_*.npz"))
    assert chunks == ["labels_0000.npz", "labels_0001.npz", "labels_0002.npz"]
    for name in chunks:  # batched and single labelling wrote the same labels
        with np.load(first / name) as a, np.load(second / name) as b:
            for key in LABEL_KEYS:
                np.testing.assert_array_equal(a[key], b[key])
    # An interrupted run: one chunk missing and one kept but stale-looking by time stamp only.
    kept = (first / "labels_0000.npz").stat().st_mtime_ns
    (first / "labels_0001.npz").unlink()
    improve_main([*common, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept  # not labelled again
    with np.load(first / "labels_0001.npz") as a, np.load(second / "labels_0001.npz") as b:
        np.testing.assert_array_equal(a["q"], b["q"])  # the missing chunk, labelled again, is the same
    # The same checkpoint from another path (a copy, a clone) resumes too: the manifest records its bytes' hash,
    # and a manifest of the older kind, which recorded the path, is recognised by the file's bytes.
    import json
    import shutil

    copy = tmp_path / "copy.pt"
    shutil.copyfile(CLASSIC, copy)
    moved = [*common[:1], str(copy), *common[2:]]
    improve_main([*moved, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    manifest = json.loads((first / "labels.json").read_text())
    assert manifest["init_from"].startswith("sha256:")
    (first / "labels.json").write_text(json.dumps({**manifest, "init_from": str(copy)}))
    improve_main([*common, "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns == kept
    # Other arguments: the old chunks are not the labels asked for and are labelled afresh.
    improve_main([*common[:-1], "4", "--run-dir", str(first), "--resume"])
    assert (first / "labels_0000.npz").stat().st_mtime_ns != kept
    assert not list(first.glob("partial_*"))


def test_a_job_may_carry_the_checkpoint_bytes_instead_of_its_path():
    """What a Ray job sends to a node that does not have the file: the same labels."""
    from pathlib import Path

    from training.improve import label_decisions

    data = Path(CLASSIC).read_bytes()
    by_path = label_decisions_batched((CLASSIC, "classic", 5, 4))
    for labels in (label_decisions_batched((data, "classic", 5, 4)), label_decisions((data, "classic", 5, 4))):
        for key in LABEL_KEYS:
            np.testing.assert_array_equal(labels[key], by_path[key])


def test_improve_cli_exits_2_with_a_message(tmp_path, capsys):
    from training.improve import cli

    assert cli(["--init-from", str(tmp_path / "missing.pt"), "--run-dir", str(tmp_path / "r")]) == 2
    assert "missing.pt" in capsys.readouterr().err
    assert cli(["--decisions", "0", "--run-dir", str(tmp_path / "r")]) == 2
