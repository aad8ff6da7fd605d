"""The chance to win the match from a score line: what a round is worth when the match is the goal.

A label of round points (``training.improve``'s default) values a point the same at 0 and at
95: yet a player 10 points from the penalty limit, or a leader who can end the match by
knocking now, should play differently. ``MatchOdds`` turns the score line after a round into
the learner's chance to win the match, so that ``training.improve --fit-target match`` can fit
the labels' rounds by what they do to that chance.

How: the rounds the labelling matches really played (each one's points, the learner first and
the other seats after it in turn order) are a sample of what a round does at this table with
this policy. ``MatchOdds.fit`` plays many matches by drawing rounds from that sample
independently (a round's points do not depend on the score line: the policy plays each round
the same way whatever the scores, which is what this model assumes and a match-aware policy
would change), half of them from the start and half from random score lines, records every
score line reached with whether the learner went on to win, and fits a small network to those
outcomes. A score line where the match is over is scored by the rules instead
(``final_share``): 1 for the learner's win, 0 for a loss, a share for a tie the model cannot
break. The network reads the learner's score and the others' sorted, not by seat: the simulated
rounds keep their seat order (the player after the learner, and so on), so the network's chance
is the average over which opponent holds which score, an approximation that keeps one network
for every seat order.
"""

from __future__ import annotations

import numpy as np
import torch

from okgin_env.rules.config import RulesConfig

FIT_TARGETS = ("label", "match")  # training.improve --fit-target (and training.pipeline's)
#: Simulated matches per fit, and the longest a simulated match may run (rounds).
SIMULATED_MATCHES = 100_000
MAX_SIMULATED_ROUNDS = 100


def final_share(totals: np.ndarray, penalty_scoring: bool) -> np.ndarray:
    """``(M,)``: the learner's (column 0) share of the win of each finished match ``totals`` (M, N).

    Penalty scoring: the fewest points win; classic: the most (one player scores a round, so the
    one who reached the target). A tie for the win gives each tied player an equal share (the
    rules break it by rounds lost and seat, which a score line does not tell)."""
    best = totals.min(axis=1, keepdims=True) if penalty_scoring else totals.max(axis=1, keepdims=True)
    tied = totals == best
    return tied[:, 0] / tied.sum(axis=1)


def _inputs(scores: np.ndarray, target: int) -> torch.Tensor:
    """The network's inputs for score lines ``(M, N)``: the learner's score, then the others' sorted."""
    ordered = np.concatenate([scores[:, :1], np.sort(scores[:, 1:], axis=1)], axis=1)
    return torch.from_numpy((ordered / target).astype(np.float32))


class MatchOdds:
    """The learner's chance to win the match, given the score line at a round's start."""

    def __init__(self, config: RulesConfig, network: torch.nn.Module):
        self.config, self.network = config, network

    @classmethod
    def fit(cls, config: RulesConfig, rounds: np.ndarray, seed: int, matches: int = SIMULATED_MATCHES,
            updates: int = 3000) -> "MatchOdds":
        """Fit from ``rounds`` (R, N): each round's points, the learner first (see the module docstring)."""
        rounds = np.asarray(rounds, dtype=np.int64)
        n = config.num_players
        if rounds.ndim != 2 or rounds.shape[1] != n:
            raise ValueError(f"rounds must be (rounds, {n}) points for a {n}-player table, got shape {rounds.shape}")
        scoring = rounds[(rounds != 0).any(axis=1)]  # a drawn round leaves the score line as it was
        if len(scoring) == 0:
            raise ValueError("no round in the sample scored any points: nothing to simulate matches from")
        rng = np.random.default_rng(seed)
        target, penalty = config.target_score, config.penalty_scoring
        # Half the matches start at 0 (the score lines real matches reach), half at random score
        # lines, so that the network also sees the lines a match seldom reaches.
        totals = np.zeros((matches, n), dtype=np.int64)
        totals[matches // 2:] = rng.integers(target, size=(matches - matches // 2, n))
        seen, won = [], np.zeros(matches)
        index = np.arange(matches)
        active = np.ones(matches, dtype=bool)
        for _ in range(MAX_SIMULATED_ROUNDS):
            live = index[active]
            if len(live) == 0:
                break
            seen.append((live, totals[live].copy()))
            totals[live] += scoring[rng.integers(len(scoring), size=len(live))]
            over = live[totals[live].max(axis=1) >= target]
            won[over] = final_share(totals[over], penalty)
            active[over] = False
        # A match still running after MAX_SIMULATED_ROUNDS (none at realistic tables) has no
        # result: its score lines are left out.
        finished = [(ids[~active[ids]], lines[~active[ids]]) for ids, lines in seen]
        x = torch.cat([_inputs(lines, target) for _, lines in finished])
        y = torch.from_numpy(np.concatenate([won[ids] for ids, _ in finished]).astype(np.float32))
        with torch.random.fork_rng():  # (the caller's torch generator is left as it was)
            torch.manual_seed(seed)
            network = torch.nn.Sequential(torch.nn.Linear(n, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                          torch.nn.Tanh(), torch.nn.Linear(64, 1))
        optimizer = torch.optim.Adam(network.parameters(), lr=3e-3)
        generator = torch.Generator().manual_seed(seed)
        for step in range(updates):
            if step == updates * 2 // 3:
                for group in optimizer.param_groups:
                    group["lr"] = 3e-4
            batch = torch.randint(len(x), (4096,), generator=generator)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(network(x[batch]).squeeze(-1), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return cls(config, network.eval())

    def win_chance(self, scores: np.ndarray) -> np.ndarray:
        """``(...,)`` chances in [0, 1] for score lines ``(..., N)`` (the learner first): the rules'
        result where the match is over (someone at or past the target), the network's elsewhere."""
        scores = np.asarray(scores, dtype=np.int64)
        flat = scores.reshape(-1, scores.shape[-1])
        chance = np.empty(len(flat))
        over = flat.max(axis=1) >= self.config.target_score
        chance[over] = final_share(flat[over], self.config.penalty_scoring)
        if (~over).any():
            with torch.no_grad():
                logits = self.network(_inputs(flat[~over], self.config.target_score)).squeeze(-1)
                chance[~over] = torch.sigmoid(logits).numpy()
        return chance.reshape(scores.shape[:-1])
