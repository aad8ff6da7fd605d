"""The end of a round in a ``TensorEnv``: scoring, the match, rewards, final observations, the next deal.

The showdown after a knock (the knocker's best layout and the layoffs) is batched on the device
for two-player points scoring (``okgin_env.tensor.showdown``, exact against the rules core's
``knock_outcome``); other presets' knocks and the house rules' match bonuses are the rules core's
own (``rules.showdown.knock_outcome``, ``rules.match.match_bonus``), called on the host for the few
games they concern; everything else is batched on the device.
"""

from __future__ import annotations

import torch

from ..rules.actions import NUM_ACTIONS
from ..rules.match import match_bonus
from ..rules.showdown import knock_outcome
from .encode import encode_observations
from .showdown import knock_points
from .state import TensorState, card_masks


def end_rounds(env, state: TensorState, ended: torch.Tensor, knock: torch.Tensor, rewards: torch.Tensor, final: torch.Tensor):
    """Score the rounds that ended in ``ended`` (knocks by the rules core's showdown, walls as
    draws), update the matches, pay rewards, keep final observations and deal what follows."""
    n, p, dev = env.num_envs, env.num_players, env.device
    config = env.config
    points = torch.zeros(n, p, dtype=torch.int64, device=dev)
    winner = torch.full((n,), -1, dtype=torch.int64, device=dev)
    knocked = ended[knock[ended]]
    if knocked.numel():
        knocked_points, knocked_winner = showdowns(env, state, knocked)
        points[knocked] = knocked_points
        winner[knocked] = knocked_winner
    state.rounds_played[ended] += 1
    state.totals[ended] += points[ended]
    won = winner[ended]
    has_winner = won >= 0
    state.rounds_won[ended[has_winner], won[has_winner]] += 1
    if config.penalty_scoring:
        state.rounds_lost[ended] += (points[ended] > 0).long()
    next_dealer = torch.where(has_winner, won, state.dealer[ended])  # the winner deals next (after the final observations)
    totals = state.totals[ended]
    match_over = totals.max(1).values >= config.target_score
    if config.penalty_scoring:  # fewest penalty points, then fewest rounds lost, then the lower seat
        seats = torch.arange(p, device=dev)
        match_winner = ((totals * (1 << 24) + state.rounds_lost[ended]) * 8 + seats).argmin(1)
    else:
        match_winner = totals.argmax(1)  # the first of equal totals: the lower seat (rules.match)
    scores = state.totals.clone()
    # Rewards (okgin_env.episode.end_of_round).
    if env.reward_mode == "points":
        pts = points[ended].double()
        total = pts.sum(1, keepdim=True)
        if config.penalty_scoring:  # showdown.zero_sum_rewards
            rewards[ended] = ((total - pts) / (p - 1) - pts).float()
        else:
            rewards[ended] = (pts - (total - pts) / (p - 1)).float()
    terminated = torch.zeros(n, dtype=torch.bool, device=dev)
    truncated = torch.zeros_like(terminated)
    ended_terminated = match_over | (env.episode == "round")
    terminated[ended] = ended_terminated
    if env.max_rounds is not None:
        truncated[ended] = ~ended_terminated & (state.rounds_played[ended] >= env.max_rounds)
    if env.reward_mode == "win":
        who = won if env.episode == "round" else match_winner
        pays = ended_terminated & (who >= 0)
        signs = torch.where(torch.nn.functional.one_hot(who.clamp(min=0), p).bool(), 1.0, -1.0)
        rewards[ended] = torch.where(pays[:, None], signs, 0.0)
    if config.has_match_bonuses:
        pay_match_bonuses(env, state, ended[match_over], match_winner[match_over], rewards, scores)
    # Final observations of every seat where the episode ended (hands shown).
    done = ended[ended_terminated | truncated[ended]]
    if done.numel() and final is not None:  # (None: a step(observe=False))
        for seat in range(p):
            final[done, seat] = encode_observations(env, state, done, torch.full_like(done, seat), over=True,
                                             mask=torch.zeros(done.numel(), NUM_ACTIONS, dtype=torch.bool, device=dev))
    state.dealer[ended] = next_dealer
    if done.numel():
        # A new match: scores from zero, the first dealer drawn.
        state.totals[done] = 0
        state.rounds_won[done] = 0
        state.rounds_lost[done] = 0
        state.rounds_played[done] = 0
        state.dealer[done] = torch.randint(0, p, (done.numel(),), generator=state.generator, device=dev)
    env.deal(state, ended)
    return terminated, truncated, scores

#: On the CPU the batched showdown costs about 18 ms a call plus 0.16 ms a knock, the rules core
#: about 0.3 ms a knock (measured, one thread): a step with fewer knocks than this is scored on the host.
CPU_DEVICE_SHOWDOWNS = 128


def showdowns(env, state: TensorState, knocked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Points and winner of each knock in ``knocked``: the knocker's best layout after the
    defenders' layoffs. Two-player points scoring on the device (``okgin_env.tensor.showdown``)
    on a GPU, and on the CPU for steps with ``CPU_DEVICE_SHOWDOWNS`` knocks or more; other
    presets, smaller CPU steps and the rare hands with too many melds to lay out by the rules
    core's ``knock_outcome`` on the host. Both give the same points and winners."""
    config = env.config
    many = env.device.type != "cpu" or knocked.numel() >= CPU_DEVICE_SHOWDOWNS
    if env.num_players == 2 and not config.penalty_scoring and many:
        points, winners, on_host = knock_points(config, state.hands[knocked], state.current[knocked],
                                                state.knock_limit[knocked], state.upcard[knocked], env.meld_tables)
        host = on_host.nonzero().squeeze(1)
        if host.numel():
            points[host], winners[host] = host_showdowns(env, state, knocked[host])
        return points, winners
    return host_showdowns(env, state, knocked)


def host_showdowns(env, state: TensorState, knocked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``showdowns`` by the rules core's ``knock_outcome``, one knock at a time on the host."""
    masks = card_masks(state.hands[knocked]).tolist()  # (K, P) 52-bit masks, of the knocked games only
    knockers = state.current[knocked].tolist()
    limits = state.knock_limit[knocked].tolist()
    upcards = state.upcard[knocked].tolist()
    points, winners = [], []
    for hands, knocker, limit, upcard in zip(masks, knockers, limits, upcards):
        outcome = knock_outcome(env.config, hands, knocker, limit, upcard, -1)
        points.append(outcome.points)
        winners.append(outcome.winner)
    return (torch.tensor(points, dtype=torch.int64, device=env.device).view(-1, env.num_players),
            torch.tensor(winners, dtype=torch.int64, device=env.device))


def pay_match_bonuses(env, state: TensorState, over: torch.Tensor, winners: torch.Tensor, rewards: torch.Tensor, scores: torch.Tensor) -> None:
    """docs/rules.md §11 (rare: a match's end with a house rule on), by the rules core on the host."""
    for g, winner in zip(over.tolist(), winners.tolist()):
        bonus = match_bonus(env.config, state.totals[g].tolist(), state.rounds_won[g].tolist(), winner)
        scores[g] = torch.tensor(bonus.scores, dtype=torch.int64, device=env.device)
        if env.reward_mode == "points":
            rewards[g] += torch.tensor(bonus.rewards, dtype=torch.float64, device=env.device).float()


__all__ = ["end_rounds", "host_showdowns", "pay_match_bonuses", "showdowns"]
