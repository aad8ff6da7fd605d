"""Suit-symmetric play (training.symmetry): renaming the suits of a real round renames the network's
inputs exactly as the renaming tables say, and the averaged policy is the same on both rounds."""

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from okgin_env.observation import PackedEncoder  # noqa: E402
from okgin_env.rules.cards import NUM_CARDS, from_mask, rank_of, suit_of, to_mask  # noqa: E402
from okgin_env.rules.config import make_config  # noqa: E402
from okgin_env.rules.round import Phase, RoundState  # noqa: E402
from training.model import PolicyValueNet, SuitEquivariantNet, make_network  # noqa: E402
from training.policy import CheckpointError, encode_states, load_policy, save_checkpoint  # noqa: E402
from training.symmetry import SuitSymmetricNet, renaming_indices, suit_renamings  # noqa: E402


def _rename_card(perm, card: int) -> int:
    return perm[suit_of(card)] * 13 + rank_of(card)


def _rename_mask(perm, mask: int) -> int:
    return to_mask([_rename_card(perm, c) for c in from_mask(mask)])


def _renamed(state: RoundState, perm) -> RoundState:
    """The same round with every card's suit renamed by ``perm``."""
    card, mask = (lambda c: _rename_card(perm, c)), (lambda m: _rename_mask(perm, m))
    return RoundState.from_parts(
        state.config, hands=[mask(h) for h in state.hands], stock=[card(c) for c in state.stock],
        discard_pile=[card(c) for c in state.discard_pile], upcard=card(state.upcard), dealer=state.dealer,
        current=state.current, phase=state.phase, knock_limit=state.knock_limit,
        taken_card=card(state.taken_card) if state.taken_card >= 0 else -1,
        known=[mask(m) for m in state.known], passed=[mask(m) for m in state.passed],
        offers_declined=state.offers_declined, must_draw_stock=state.must_draw_stock, discards=state.discards,
        reshuffles=state.reshuffles)


def _decisions(rules: str, count: int, seed: int, num_players: int | None = None) -> list[RoundState]:
    """Rounds in play after random legal moves: offers, draws, discards (knocks among the legal ones)."""
    config, rng, states = make_config(rules, num_players=num_players), random.Random(seed), []
    while len(states) < count:
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        state = RoundState(config, deck, dealer=rng.randrange(config.num_players),
                           rng=np.random.default_rng(rng.randrange(2**31)))
        for _ in range(rng.randrange(0, 30)):
            if state.phase is Phase.OVER:
                break
            state.apply(rng.choice(list(state.legal_actions())))
        if state.phase is not Phase.OVER:
            states.append(state)
    return states


def test_renamings_are_the_24_permutations_of_the_suits_and_the_6_that_keep_spades():
    every, keeping = suit_renamings(), suit_renamings(keep_spades=True)
    assert len(set(every)) == 24 and every[0] == (0, 1, 2, 3)
    assert len(set(keeping)) == 6 and all(perm[0] == 0 for perm in keeping) and set(keeping) < set(every)


@pytest.mark.parametrize("rules", ["standard", "classic"])
def test_renaming_a_round_renames_its_inputs_as_the_tables_say(rules):
    """The observation gathered by the table is the renamed round's observation bit for bit; each
    action's id maps to the renamed action, whose context and per-action features are the same."""
    config = make_config(rules)
    encoder = PackedEncoder(config.num_players, config.target_score)
    renamings = suit_renamings()
    gathers, id_maps = renaming_indices(config.num_players, renamings)
    for index, state in enumerate(_decisions(rules, 30, seed=3)):
        r = 1 + index % 23  # a renaming other than the identity
        scores = [[7, 31]]
        (obs, ctx, feats, ids, legal), actions = encode_states(encoder, [state], scores)
        (obs2, ctx2, feats2, ids2, legal2), actions2 = encode_states(encoder, [_renamed(state, renamings[r])], scores)
        assert torch.equal(obs[:, gathers[r]], obs2)
        assert torch.equal(ctx, ctx2)
        mapped = id_maps[r][ids[0, : len(actions[0])]].tolist()
        assert sorted(mapped) == actions2[0]
        for slot, action in enumerate(mapped):
            assert torch.equal(feats[0, slot], feats2[0, actions2[0].index(action)])


def test_the_symmetric_policy_plays_a_renamed_round_as_the_round():
    torch.manual_seed(0)
    config = make_config("standard")
    encoder = PackedEncoder(2, config.target_score)
    network = PolicyValueNet(encoder.size, hidden=32)
    symmetric = SuitSymmetricNet(network, 2).eval()
    gathers, id_maps = renaming_indices(2, symmetric.renamings)
    differs = 0
    for index, state in enumerate(_decisions("standard", 25, seed=5)):
        perm = symmetric.renamings[1 + index % 23]
        (inputs, actions), (inputs2, actions2) = (encode_states(encoder, [s], [[0, 0]]) for s in (state, _renamed(state, perm)))
        with torch.no_grad():
            log_probs, value = symmetric(*inputs)
            log_probs2, value2 = symmetric(*inputs2)
            plain, plain2 = network(*inputs)[0].log_softmax(-1), network(*inputs2)[0].log_softmax(-1)
        r = symmetric.renamings.index(perm)
        by_action = dict(zip(id_maps[r][inputs[3][0, : len(actions[0])]].tolist(), log_probs[0].tolist()))
        by_action2 = dict(zip(actions2[0], log_probs2[0].tolist()))
        assert by_action.keys() == by_action2.keys()
        assert all(abs(by_action[a] - by_action2[a]) < 1e-5 for a in by_action)
        assert abs(float(value) - float(value2)) < 1e-5
        assert abs(float(log_probs[0, : len(actions[0])].exp().sum()) - 1) < 1e-5
        plain_by = dict(zip(id_maps[r][inputs[3][0, : len(actions[0])]].tolist(), plain[0].tolist()))
        differs += any(abs(plain_by[a] - v) > 1e-4 for a, v in zip(actions2[0], plain2[0].tolist()))
    assert differs  # the plain network is not symmetric: the test would see a wrong average


def test_a_file_asks_for_symmetric_play_and_the_caller_may_override_it(tmp_path):
    torch.manual_seed(1)
    path = tmp_path / "hands.pt"
    save_checkpoint(path, PolicyValueNet(378, hidden=32), {"rules": "standard", "num_players": 2, "suit_symmetric": True})
    assert isinstance(load_policy(path, rules="standard").model, SuitSymmetricNet)
    assert isinstance(load_policy(path, rules="standard", suit_symmetric=False).model, PolicyValueNet)
    spade_table = make_config("standard", spade_double=True)
    assert len(load_policy(path, rules=spade_table).model.renamings) == 6  # a spade upcard doubles the round
    plain = tmp_path / "plain.pt"
    save_checkpoint(plain, PolicyValueNet(378, hidden=32), {"rules": "standard", "num_players": 2})
    assert isinstance(load_policy(plain, rules="standard").model, PolicyValueNet)
    assert isinstance(load_policy(plain, rules="standard", suit_symmetric=True).model, SuitSymmetricNet)
    with pytest.raises(ValueError, match="suit_symmetric must be True, False or None"):
        load_policy(plain, rules="standard", suit_symmetric="yes")
    bad = tmp_path / "bad.pt"
    save_checkpoint(bad, PolicyValueNet(378, hidden=32), {"rules": "standard", "num_players": 2, "suit_symmetric": 1})
    with pytest.raises(CheckpointError, match="suit_symmetric=1; expected true or false"):
        load_policy(bad, rules="standard")


def test_a_suit_symmetric_player_saves_as_its_network_and_the_flag(tmp_path):
    """``save_checkpoint`` of ``load_policy(..., suit_symmetric=True).model`` was an AttributeError
    (the wrapper has no ``observation_size``); it writes the network's weights and the flag."""
    from training.policy import load_checkpoint, save_checkpoint

    start = tmp_path / "plain.pt"
    save_checkpoint(start, PolicyValueNet(378, hidden=32), {"rules": "standard", "num_players": 2})
    player = load_policy(start, rules="standard", suit_symmetric=True)
    again = tmp_path / "again.pt"
    save_checkpoint(again, player.model, {"rules": "standard", "num_players": 2})
    before, after = load_checkpoint(start), load_checkpoint(again)
    assert after["metadata"] == {**before["metadata"], "suit_symmetric": True}
    assert all(torch.equal(after["model"][name], tensor) for name, tensor in before["model"].items())
    assert isinstance(load_policy(again, rules="standard").model, SuitSymmetricNet)


def test_the_shipped_hand_player_is_the_history_file_asking_for_symmetric_play():
    """docs/standard_policy.md: pretrained:standard-hands is run S's weights with suit_symmetric on."""
    from pathlib import Path

    from training.policy import load_checkpoint

    root = Path(__file__).resolve().parent.parent
    shipped = load_checkpoint(root / "checkpoints" / "okgin_standard_hands.pt", rules="standard")
    history = load_checkpoint(root / "checkpoints" / "history" / "okgin_standard_hand_player.pt", rules="standard")
    assert shipped["metadata"] == {**history["metadata"], "suit_symmetric": True}
    assert shipped["model"].keys() == history["model"].keys()
    assert all(torch.equal(shipped["model"][name], history["model"][name]) for name in history["model"])
    assert isinstance(load_policy("pretrained:standard-hands", rules="standard").model, SuitSymmetricNet)


@pytest.mark.parametrize(("name", "rules", "num_players", "weights_sha256"), [
    ("classic", "classic", 2, "bb253ebfb878b76d6aaf8d1c974638426fbe8e91d48ec69befae272b3cf45e44"),
    ("standard", "standard", 2, "05b5436655603d18691685d385325c0af7d095b204a23a574faeda67985f3f0e"),
    ("penalty_3p", "penalty", 3, "585b7e2693a0d2acb1032edb357f2588c0010b623edc450812345e63386f2f0a"),
    ("penalty_4p", "penalty", 4, "9fc9baf2ac7e7cd2b7cc3d08265bf37b761fda26a57f41d2f73ec51e42accd82"),
])
def test_the_shipped_match_players_are_their_networks_asking_for_symmetric_play(name, rules, num_players,
                                                                                 weights_sha256):
    """The model cards: since 2026-12-07 the classic, standard and penalty files play averaged over
    the suits; their weights are the ones measured before (the hash of each file's tensors as it was
    until then; the golden policy decisions check the classic network's outputs too)."""
    import hashlib
    from pathlib import Path

    from training.policy import load_checkpoint

    shipped = load_checkpoint(Path(__file__).resolve().parent.parent / "checkpoints" / f"okgin_{name}.pt", rules=rules,
                              num_players=num_players)
    digest = hashlib.sha256()
    for tensor_name in sorted(shipped["model"]):
        digest.update(tensor_name.encode())
        digest.update(shipped["model"][tensor_name].numpy().tobytes())
    assert digest.hexdigest() == weights_sha256
    assert shipped["metadata"]["suit_symmetric"] is True and "network" not in shipped["metadata"]
    spec = f"pretrained:{name.replace('_', '-')}"
    assert isinstance(load_policy(spec, rules=rules, num_players=num_players).model, SuitSymmetricNet)
    assert isinstance(load_policy(spec, rules=rules, num_players=num_players, suit_symmetric=False).model,
                      PolicyValueNet)


@pytest.mark.parametrize(("rules", "num_players"), [("standard", 2), ("penalty", 3), ("penalty", 4)])
def test_the_suit_equivariant_network_plays_a_renamed_round_as_the_round(rules, num_players):
    """``SuitEquivariantNet`` needs no averaging: its log-probabilities and value of a round and of the
    round with its suits renamed are the same, action for renamed action; so the 24-renaming
    average of it is itself."""
    torch.manual_seed(2)
    config = make_config(rules, num_players=num_players)
    encoder = PackedEncoder(num_players, config.target_score)
    network = SuitEquivariantNet(encoder.size, hidden=48).eval()
    averaged = SuitSymmetricNet(network, num_players).eval()
    renamings = suit_renamings()
    _, id_maps = renaming_indices(num_players, renamings)
    scores = [[3 * seat for seat in range(num_players)]]
    for index, state in enumerate(_decisions(rules, 20, seed=11, num_players=num_players)):
        r = 1 + index % 23
        (inputs, actions), (inputs2, actions2) = (encode_states(encoder, [s], scores)
                                                  for s in (state, _renamed(state, renamings[r])))
        with torch.no_grad():
            logits, value = network(*inputs)
            logits2, value2 = network(*inputs2)
            log_probs, averaged_value = averaged(*inputs)
        count = len(actions[0])
        by_action = dict(zip(id_maps[r][inputs[3][0, :count]].tolist(), logits[0, :count].tolist()))
        assert by_action.keys() == set(actions2[0])
        assert all(abs(by_action[a] - v) < 1e-4 for a, v in zip(actions2[0], logits2[0].tolist()))
        assert abs(float(value) - float(value2)) < 1e-5 and abs(float(value) - float(averaged_value)) < 1e-5
        assert torch.allclose(log_probs[0, :count], logits[0, :count].log_softmax(-1), atol=1e-5)


def test_a_suit_equivariant_file_records_its_network_and_loads_as_it(tmp_path):
    torch.manual_seed(3)
    network = make_network("suits", 378, hidden=40)
    path = tmp_path / "suits.pt"
    save_checkpoint(path, network, {"rules": "standard", "num_players": 2})
    payload = torch.load(path, weights_only=True)
    assert payload["metadata"]["network"] == "suits"
    policy = load_policy(path, rules="standard")
    assert isinstance(policy.model, SuitEquivariantNet)
    encoder = PackedEncoder(2, 100)
    inputs, _ = encode_states(encoder, _decisions("standard", 4, seed=1), [[0, 0]] * 4)
    with torch.no_grad():
        assert torch.equal(policy.model(*inputs)[0], network.eval()(*inputs)[0])
    # The older files' metadata has no "network" (an mlp); their bytes do not change.
    save_checkpoint(tmp_path / "mlp.pt", PolicyValueNet(378, hidden=40), {"rules": "standard", "num_players": 2})
    assert "network" not in torch.load(tmp_path / "mlp.pt", weights_only=True)["metadata"]
    payload["metadata"]["network"] = "convolutional"
    torch.save(payload, tmp_path / "unknown.pt")
    with pytest.raises(CheckpointError, match="network='convolutional'; allowed: 'mlp', 'suits'"):
        load_policy(tmp_path / "unknown.pt", rules="standard")
    payload["metadata"]["network"] = "mlp"  # the metadata says mlp, the weights are the other network's
    torch.save(payload, tmp_path / "mismatch.pt")
    with pytest.raises(CheckpointError, match="does not match the network"):
        load_policy(tmp_path / "mismatch.pt", rules="standard")
    with pytest.raises(ValueError, match="network='cnn'; allowed"):
        make_network("cnn", 378)
