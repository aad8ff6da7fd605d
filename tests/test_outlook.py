"""The opt-in next-draw outlook columns (``okgin_env.features.outlook_features``) and networks
built with them (``training``'s ``--outlook-features``).

The numbers are checked against an independent reference, the bots' own ``draw_outlook``
(``okgin_env.bots.reading``: a plain loop over the unseen cards with the exact solver), and the
vectorised solver against ``best_discard_deadwood_of_mask`` by brute force over many hands.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from okgin_env.bots.reading import draw_outlook, unseen_cards  # noqa: E402
from okgin_env.features import (  # noqa: E402
    NUM_ACTION_FEATURES,
    NUM_OUTLOOK_FEATURES,
    best_discard_deadwood_array,
    decision_features,
    decision_features_batch,
    outlook_features,
)
from okgin_env.observation import view  # noqa: E402
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD  # noqa: E402
from okgin_env.rules.melds import best_discard_deadwood_of_mask  # noqa: E402
from training.model import PolicyValueNet  # noqa: E402
from training.policy import CheckpointError, encode_batch, encode_decision, load_policy, save_checkpoint  # noqa: E402

from test_features import TABLES, mixed_decisions  # noqa: E402


def _meldy_hands(count: int, seed: int) -> list[int]:
    """Hands of 1-15 cards drawn from a few ranks, so that sets (of three and four, several ranks
    at once) and runs are common: every branch of the vectorised solver is reached."""
    rng = random.Random(seed)
    hands = []
    for _ in range(count):
        ranks = rng.sample(range(13), rng.choice([3, 4, 5, 13]))
        pool = [suit * 13 + rank for suit in range(4) for rank in ranks]
        hands.append(sum(1 << c for c in rng.sample(pool, min(rng.randint(1, 15), len(pool)))))
    return hands


def test_the_vectorised_best_discard_is_the_solver_on_every_hand():
    hands = _meldy_hands(30_000, seed=3)
    got = best_discard_deadwood_array(np.array(hands, dtype=np.int64))
    expected = [best_discard_deadwood_of_mask(h) for h in hands]
    assert got.tolist() == expected
    set_ranks = [h for h in hands if any(sum(h >> (s * 13 + r) & 1 for s in range(4)) >= 3 for r in range(13))]
    assert len(set_ranks) > 5_000  # the set branches were exercised, not only the table lookups


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_outlook_columns_are_the_aggressors_lookahead(table):
    """Stock draws (and upcard passes) look at the hand as it is, discards at the hand without the
    card; takes and knocks get zeros. Checked against ``draw_outlook`` row by row."""
    observations = mixed_decisions(*table, count=300)
    checked = {DRAW_STOCK: 0, PASS: 0, DISCARD_BASE: 0, KNOCK_BASE: 0, TAKE_DISCARD: 0}
    for observation in observations:
        v = view(observation)
        _, rows = decision_features(v, v.legal, outlook=True)
        _, plain = decision_features(v, v.legal)
        assert rows.shape[1] == NUM_ACTION_FEATURES + NUM_OUTLOOK_FEATURES
        assert np.array_equal(rows[:, :NUM_ACTION_FEATURES], plain)  # the 17 columns are unchanged
        unseen = [1 << c for c in range(52) if unseen_cards(v) >> c & 1]
        for j, action in enumerate(v.legal):
            extra = rows[j, NUM_ACTION_FEATURES:]
            if action in (DRAW_STOCK, PASS) or DISCARD_BASE <= action < KNOCK_BASE:
                hand = v.hand if action in (DRAW_STOCK, PASS) else v.hand & ~(1 << (action - DISCARD_BASE))
                knock_share, _, mean_after = draw_outlook(hand, unseen, v.knock_limit)
                gin_share = np.mean([best_discard_deadwood_of_mask(hand | bit) == 0 for bit in unseen])
                assert extra == pytest.approx([knock_share, gin_share, mean_after / 50.0], abs=1e-6)
                checked[DISCARD_BASE if action >= DISCARD_BASE else action] += 1
            else:
                assert not extra.any()
                checked[KNOCK_BASE if action >= KNOCK_BASE else action] += 1
    assert all(checked.values()), checked


def test_the_knock_limit_is_read_as_the_integer_it_is():
    """The frozen columns compare with the stored float (7 reads 6.99999988); the outlook must not:
    a hand that reaches exactly the limit can knock."""
    hands = np.array([0], dtype=np.int64)
    seven = 1 << 6  # the seven of spades alone: drawing any card then discarding it leaves 7
    got = outlook_features(np.array([seven]), np.array([1 << 51]), np.array([7]))  # unseen: KC only
    assert got.tolist() == [[1.0, 0.0, pytest.approx(7 / 50)]]
    assert outlook_features(hands, hands, hands).tolist() == [[0.0, 0.0, 0.0]]  # nothing unseen


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_batched_outlook_rows_equal_the_one_decision_rows(table):
    observations = mixed_decisions(*table, count=200)
    views = [view(o) for o in observations]
    actions = [v.legal for v in views]
    contexts, rows = decision_features_batch(views, actions, outlook=True)
    for k, (v, legal) in enumerate(zip(views, actions)):
        context, expected = decision_features(v, legal, outlook=True)
        assert np.array_equal(contexts[k], context) and np.array_equal(rows[k], expected), k
    tensors, _ = encode_batch(np.stack([o["observation"] for o in observations]),
                              np.stack([o["action_mask"] for o in observations]), table[1], outlook=True)
    for k, o in enumerate(observations):
        one = encode_decision(o["observation"], o["action_mask"], table[1], outlook=True)
        assert np.array_equal(tensors[2][k].numpy(), one[1]), k


def test_an_outlook_checkpoint_round_trips_and_plays(tmp_path):
    torch.manual_seed(0)
    model = PolicyValueNet(378, hidden=32, outlook=True)
    path = tmp_path / "outlook.pt"
    save_checkpoint(path, model, {"rules": "classic", "num_players": 2})
    policy = load_policy(path)
    assert policy.model.outlook and policy.model.num_action_features == NUM_ACTION_FEATURES + NUM_OUTLOOK_FEATURES
    for observation in mixed_decisions("classic", 2, count=40):
        assert observation["action_mask"][policy.act(observation)]
    # The flag must match the stored weights: a file that claims the other layout is refused.
    payload = torch.load(path, weights_only=True)
    payload["metadata"]["outlook_features"] = False
    torch.save(payload, tmp_path / "lying.pt")
    with pytest.raises(CheckpointError, match="scorer_action.weight has shape"):
        load_policy(tmp_path / "lying.pt")
    payload["metadata"]["outlook_features"] = "yes"
    torch.save(payload, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="outlook_features='yes'; expected true or false"):
        load_policy(tmp_path / "bad.pt")


def test_checkpoints_from_before_the_option_load_without_it():
    policy = load_policy("checkpoints/okgin_classic.pt")
    assert policy.model.outlook is False


@pytest.mark.parametrize("rules, num_players", [("classic", 2), ("penalty", 3)])
def test_an_outlook_policy_labels_with_its_own_inputs(tmp_path, rules, num_players):
    """Labelling encodes with the checkpoint's own inputs: the recorded action rows are wide, and
    the labels are those of the policy's own greedy play (the same job gives the same labels)."""
    from okgin_env.observation import layout_for
    from training.labelling import LABEL_KEYS, label_decisions

    torch.manual_seed(1)
    path = tmp_path / "outlook.pt"
    save_checkpoint(path, PolicyValueNet(layout_for(num_players).size, hidden=32, outlook=True),
                    {"rules": rules, "num_players": num_players})
    job = (str(path), rules, 5, 6)
    first, again = label_decisions(job), label_decisions(job, rollout_batch=3)
    assert first["feat"].shape[-1] == NUM_ACTION_FEATURES + NUM_OUTLOOK_FEATURES
    for key in LABEL_KEYS:
        np.testing.assert_array_equal(first[key], again[key], err_msg=key)
