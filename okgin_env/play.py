"""Play Oklahoma Gin in the terminal against a bot or a trained checkpoint.

    python -m okgin_env.play --opponent simple            # or: okgin-play --opponent search
    python -m okgin_env.play --opponent pretrained:classic --seed 7 --episode round
    okgin-play --opponent simple --record my_games.jsonl  # the game as an okgin_env.records line

(The command line itself is ``okgin_env.play_cli``.)

Each turn shows your hand sorted with its melds grouped (``[3H 4H 5H] [7S 7D 7C] | KS 2D``),
the discard top, the knock limit, the stock size and the scores, then asks for a move:

| input | move |
|---|---|
| ``d``, ``draw``, ``s``, ``stock`` | draw the top card of the stock |
| ``t``, ``take`` | take the top card of the discard pile (or the upcard when it is offered) |
| ``p``, ``pass`` | pass on the upcard |
| ``TD``, ``discard TD`` | discard a card (rank ``A 2-9 T J Q K``, ``10`` also works; suit ``S H D C``) |
| ``k TD``, ``knock TD`` | knock, discarding TD face down (gin when the rest has no deadwood) |
| ``g TD``, ``gin TD`` | knock for gin (refused when the rest has deadwood) |
| a sentence | ``draw from the stock``, ``knock with 2C``: read as ``okgin_env.text.parse`` reads replies |
| ``?``, ``help`` | the moves and the rules in brief |
| ``q``, ``quit`` | leave the game |

An illegal move is refused with the reason, and the question asked again. The opponents' moves
are shown as they happen (only what the table sees: a card drawn from the stock stays hidden),
and at the end of each round the showdown: melds, layoffs, deadwood, points and the match score.

``--record PATH`` writes the game as a game record (``okgin_env.records``) on every way out:
at its end, when you leave it (``q``, end of input, Ctrl-C or SIGTERM: ``"finished": false``)
and when a move fails. The file is replaced at once, so a failed write (a full disk) leaves it as
it was; the failure is named in one line and the exit status is 2. Exit status otherwise: 0 for
a game played to its end or left with ``q`` (or the end of input), 130 after Ctrl-C, 143 after
SIGTERM, 2 for bad options
or a policy that fails during the game (one line; an unexpected error is raised once the record
is written).

``play(...)`` takes ``input_fn`` and ``print_fn`` (default: ``input`` and ``print``) so that tests
can script a game.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from .env import check_action_id, raw_env
from .players import check_player, make_player, player_label
from .echo import failure, shown
from .rules.config import RulesConfig, check_seed
from .rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from .rules.cards import NUM_RANKS, card_str
from .rules.melds import best_melds, deadwood
from .rules.round import Phase, RoundState
from .rules.showdown import RoundOutcome
from .text import hand_order, hand_text, parse, sort_key
from .text.describe import game_name, knock_limit_rule
from .text import read_move as parse_move  # one reader of move words for the terminal and okgin_env.text

HELP = """\
Moves:
  d / draw / s / stock   draw the top card of the stock
  t / take               take the top card of the discard pile (or the offered upcard)
  p / pass               pass on the offered upcard
  TD / discard TD        discard a card: rank A 2-9 T J Q K (or 10), suit S H D C
  k TD / knock TD        knock, discarding TD face down (gin if the rest has no deadwood)
  g TD / gin TD          knock for gin (refused if the rest has deadwood)
  or a sentence, such as "draw from the stock" or "knock with 2C"
  ? / help               this help;   q / quit   leave the game"""


def help_text(config: RulesConfig) -> str:
    """``HELP`` and the rules in brief, as ``config`` sets them (the knock limit, the taken card, scoring)."""
    taken = ("You may discard the card you just took from the pile." if config.allow_discard_taken
             else "You may not discard the card you just took from the pile.")
    if config.penalty_scoring:
        scoring = (f"Penalty points, lower is better: gin charges each other player their deadwood + "
                   f"{config.gin_bonus}; a knock charges each their deadwood minus the knocker's; a player with "
                   f"strictly less deadwood than the knocker undercuts, and the knocker pays {config.undercut_bonus} more.")
    else:
        scoring = ("Knocker's deadwood below the defender's wins the difference; otherwise the defender "
                   f"undercuts (+{config.undercut_bonus} bonus); gin scores {config.gin_bonus} + the defender's deadwood.")
    rules = (f"Rules in brief ({game_name(config)}): melds are sets (3-4 of a rank) and runs (3+ in a suit, "
             "Ace low). After you take a card you may knock instead of discarding if your deadwood (unmelded "
             f"points: A=1, face cards 10) is at most the knock limit: {knock_limit_rule(config)}. {taken} {scoring}")
    return HELP + "\n" + textwrap.fill(rules, width=96)


class QuitGame(Exception):
    """The player asked to leave."""


class Game:
    """One terminal game: the human plays seat ``seat``, policies play the other seats."""

    def __init__(
        self,
        opponent: Any = "simple",
        seed: int | None = None,
        rules: str = "classic",
        episode: str = "match",
        num_players: int = 2,
        seat: int = 0,
        input_fn: Callable[[str], str] | None = None,
        print_fn: Callable[..., None] | None = None,
        deck: Sequence[int | str] | None = None,
        dealer: int | None = None,
        **rule_options: Any,
    ):
        self.env = raw_env(rules=rules, num_players=num_players, episode=episode, **rule_options)
        n = self.env.config.num_players
        if not 0 <= seat < n:
            raise ValueError(f"seat must be in 0..{n - 1}, got {seat}")
        seed = check_seed(seed)  # the envs' seed rule
        check_player(opponent, self.env.config)
        self.seat = seat
        self.seed = seed
        self.reset_options = {k: v for k, v in (("deck", deck), ("dealer", dealer)) if v is not None}
        # Looked up when called (not bound at import), so that a patched builtins.input is used.
        self.input_fn = input_fn or (lambda prompt: input(prompt))
        self.print = print_fn or (lambda *parts: print(*parts))
        self.human = self.env.possible_agents[seat]
        self.policies = {
            agent: make_player(opponent, seed=None if seed is None else seed * 10 + i, rules=self.env.config)
            for i, agent in enumerate(self.env.possible_agents)
            if agent != self.human
        }
        self.round_number = 0
        self.opponent = opponent
        self.round_states: list[RoundState] = []  # every round dealt, for the game record

    # ------------------------------------------------------------------ names
    def name(self, seat: int) -> str:
        return "you" if seat == self.seat else f"player_{seat}"

    def title(self, seat: int) -> str:
        return "You" if seat == self.seat else f"player_{seat}"

    # ------------------------------------------------------------------ the loop
    def opponent_move(self, agent: str) -> int:
        """The move of ``agent``'s policy, checked before it is announced: a legal action id, as
        ``env.step`` takes it (an int, not a bool, float or text); a ValueError naming it otherwise."""
        observation = self.env.observe(agent)
        try:
            chosen = self.policies[agent].act(observation)
        except Exception as error:  # the policy's own failure (a user's agent, say): one line, the first of its message
            raise ValueError(f"the opponent {agent} failed to move: {failure(error)}") from None
        try:
            chosen = check_action_id(chosen)  # (the env's own check of an action id)
            legal = bool(observation["action_mask"][chosen])
        except ValueError:
            legal = False
        if not legal:
            raise ValueError(f"the opponent {agent} played {shown(chosen)}, which is not a legal action id now "
                             f"(legal: {[int(a) for a in observation['action_mask'].nonzero()[0]]})")
        return int(chosen)

    def run(self) -> dict[str, Any]:
        env = self.env
        env.reset(seed=self.seed, options=self.reset_options)
        self.start_round()
        try:
            while not self.episode_over():
                agent = env.agent_selection
                state = env.round_state
                if agent == self.human:
                    action = self.ask(state)
                    if action == TAKE_DISCARD:
                        self.print(self.describe(state, self.seat, action))
                else:
                    action = self.opponent_move(agent)
                    self.print(self.describe(state, state.current, action))
                before = env.last_round_outcome
                hand_before = state.hands[self.seat]
                env.step(action)
                if agent == self.human and action == DRAW_STOCK and env.last_round_outcome is before:
                    drawn = _cards(env.round_state.hands[self.seat] & ~hand_before)
                    if drawn:
                        self.print(f"You draw {card_str(drawn[0])}.")
                outcome = env.last_round_outcome
                if outcome is not None and outcome is not before:
                    self.show_showdown(outcome)
                    if not self.episode_over():
                        self.start_round()
        except QuitGame:
            self.print("Game left.")
            return {"finished": False, "scores": dict(env.scores), "winner": None}
        if any(env.truncations.values()):
            rounds = env.match.rounds_played
            self.print(f"The match stops undecided after {rounds} round{'s' if rounds != 1 else ''} (max_rounds).")
            return {"finished": True, "scores": dict(env.scores), "winner": None, "truncated": True}
        winner = self.final_winner()
        if winner is not None:
            self.print(f"{self.title(winner)} {'win' if winner == self.seat else 'wins'} the {env.episode}.")
        else:
            self.print("The round is a draw.")
        return {"finished": True, "scores": dict(env.scores), "winner": winner}

    def episode_over(self) -> bool:
        """The episode ended: terminated, or truncated at ``max_rounds``."""
        env = self.env
        return all(env.terminations[a] or env.truncations[a] for a in env.possible_agents)

    def final_winner(self) -> int | None:
        match = self.env.match
        assert match is not None
        if self.env.episode == "match":
            return match.winner
        outcome = self.env.last_round_outcome
        return None if outcome is None else outcome.winner

    def record(self) -> Any:
        """The game so far as an ``okgin_env.records.GameRecord`` (your seat is named "human")."""
        from .records import game_record

        env = self.env
        finished = self.episode_over()
        truncated = any(env.truncations.values())
        players = ["human" if s == self.seat else player_label(self.opponent) for s in range(env.config.num_players)]
        return game_record(
            env.config, players, self.round_states, env.match.scores, episode=env.episode, reward=env.reward_mode,
            max_rounds=env.max_rounds, winner=self.final_winner() if finished and not truncated else None,
            finished=finished, truncated=truncated, seed=self.seed,
        )  # fmt: skip

    def start_round(self) -> None:
        self.round_number += 1
        state = self.env.round_state
        self.round_states.append(state)
        self.print("")
        self.print(
            f"=== Round {self.round_number} === dealer: {self.name(state.dealer)}; "
            f"upcard {card_str(state.upcard)}: {limit_text(state.knock_limit)}"
            f"{' (fixed for every round)' if self.env.config.knock_limit is not None else ''}"
        )

    # ------------------------------------------------------------------ the human's turn
    def show_state(self, state: RoundState) -> None:
        env = self.env
        scores = env.scores
        score_text = ", ".join(
            f"{self.name(s)} {scores[agent]}" for s, agent in enumerate(env.possible_agents)
        )
        pile = (
            f"discard top {card_str(state.discard_top)} ({len(state.discard_pile)} in pile)"
            if state.discard_pile
            else "discard pile empty"
        )
        self.print("")
        self.print(
            f"Knock limit {state.knock_limit}{' (gin only)' if state.knock_limit == 0 else ''} | "
            f"stock {len(state.stock)} | {pile} | "
            f"scores: {score_text} (to {env.config.target_score})"
        )
        for s in range(state.num_players):
            if s != self.seat and state.known[s]:
                known = " ".join(card_str(c) for c in sorted(_cards(state.known[s]), key=sort_key))
                self.print(f"{self.title(s)} holds (taken from the pile): {known}")
        self.print(f"Your hand: {hand_text(state.hand(self.seat))}")

    def prompt(self, state: RoundState) -> str:
        top = card_str(state.discard_top) if state.discard_pile else ""
        if state.phase is Phase.OFFER:
            return f"Take the upcard {top}? t = take, p = pass (? help): "
        if state.phase is Phase.DRAW:
            if state.must_draw_stock:
                return "Everybody passed the upcard: d = draw from the stock (? help): "
            return f"d = draw from the stock, t = take {top} (? help): "
        knocks = {a - KNOCK_BASE for a in state.legal_actions() if a >= KNOCK_BASE}
        in_hand_order = [c for c in hand_order(state.hand(self.seat)) if c in knocks]  # as the hand is shown
        hint = f"; you may knock with: {' '.join(card_str(c) for c in in_hand_order)}" if knocks else ""
        return f"Discard a card (e.g. {card_str(_example_card(state, self.seat))}) or knock: k CARD{hint} (? help): "

    def ask(self, state: RoundState) -> int:
        self.show_state(state)
        while True:
            try:
                line = self.input_fn(self.prompt(state))
            except EOFError:
                raise QuitGame from None
            kind, card = parse_move(line)
            if kind == "help":
                self.print(help_text(self.env.config))
                continue
            if kind == "quit":
                raise QuitGame
            if kind == "bad":  # not a short form: read as a sentence, as okgin_env.text reads replies
                try:
                    return parse(line, self.env.observe(self.human))
                except ValueError as error:
                    self.print(f"Not allowed: {error}")
                    continue
            action, reason = self.to_action(state, kind, card, line)
            if action is not None and action in state.legal_actions():
                return action
            self.print(f"Not allowed: {reason or 'that move is not legal now'}.")

    def to_action(self, state: RoundState, kind: str, card: int | None, line: str) -> tuple[int | None, str]:
        """The action for a parsed move, or ``(None, why not)``."""
        phase = state.phase
        hand = state.hands[self.seat]
        if kind == "bad":
            return None, f"cannot read {line.strip()!r}; type ? for the moves"
        if phase is Phase.OFFER:
            if kind == "take":
                return TAKE_DISCARD, ""
            if kind == "pass":
                return PASS, ""
            return None, f"the upcard {card_str(state.discard_top)} is offered: take it (t) or pass (p)"
        if phase is Phase.DRAW:
            if kind == "draw":
                return DRAW_STOCK, ""
            if kind == "take":
                if state.must_draw_stock:
                    return None, "everybody passed the upcard, so this turn begins from the stock (d)"
                return TAKE_DISCARD, ""
            if kind == "pass":
                return None, "passing is only for the upcard offer; draw (d) or take (t)"
            return None, "first take a card: draw from the stock (d) or take the discard top (t)"
        # discard phase
        if kind in ("draw", "take", "pass"):
            return None, "you already have your card this turn: discard one (e.g. TD) or knock (k TD)"
        if card is None:
            return None, f"cannot read a card in {line.strip()!r}; a card is a rank A 2-9 T J Q K and a suit S H D C, e.g. TD"
        if not hand >> card & 1:
            return None, f"you do not hold {card_str(card)}"
        if not state.discardable() >> card & 1:  # held but not throwable: the card just taken (the rules say)
            return None, f"you just took {card_str(card)} from the discard pile, so you may not discard it this turn"
        if kind == "discard":
            return DISCARD_BASE + card, ""
        if KNOCK_BASE + card not in state.legal_actions():
            left = deadwood(_cards(hand & ~(1 << card)))
            limit = "gin only (knock limit 0)" if state.knock_limit == 0 else f"the knock limit is {state.knock_limit}"
            return None, f"knocking with {card_str(card)} leaves {left} deadwood; {limit}"
        left = deadwood(_cards(hand & ~(1 << card)))
        if kind == "gin" and left:
            return None, f"knocking with {card_str(card)} leaves {left} deadwood, so it is not gin (k {card_str(card)} knocks)"
        return KNOCK_BASE + card, ""

    # ------------------------------------------------------------------ what the table sees
    def describe(self, state: RoundState, seat: int, action: int) -> str:
        """The move as the table sees it, before it is played (``You take 9H ...`` for the human)."""
        who = self.title(seat)
        s = "" if seat == self.seat else "s"  # You take / player_1 takes
        top = card_str(state.discard_top) if state.discard_pile else "?"
        if action == DRAW_STOCK:
            return f"{who} draw{s} from the stock."
        if action == TAKE_DISCARD:
            what = f"the upcard {top}" if state.phase is Phase.OFFER else f"{top} from the discard pile"
            return f"{who} take{s} {what}."
        if action == PASS:
            return f"{who} pass{'es' if s else ''} on the upcard {top}."
        if action >= KNOCK_BASE:
            return f"{who} knock{s} (a card face down)."
        return f"{who} discard{s} {card_str(action - DISCARD_BASE)}."

    def show_showdown(self, outcome: RoundOutcome) -> None:
        p = self.print
        n = len(outcome.points)
        p("")
        if outcome.kind == "draw":
            p("--- The round is a draw: the stock ran out. Nobody scores. ---")
        else:
            you = outcome.knocker == self.seat
            knocker = self.title(outcome.knocker) if outcome.knocker is not None else "?"
            word = ("go gin" if you else "goes gin") if outcome.kind == "gin" else ("knock" if you else "knocks")
            p(f"--- {knocker} {word}. ---")
        for seat in _order(outcome.knocker, n):
            cards = outcome.hands[seat] if outcome.hands else []
            melds = " ".join("[" + " ".join(card_str(c) for c in sorted(m, key=sort_key)) + "]" for m in outcome.melds[seat])
            laid = outcome.layoffs[seat]
            melded = {c for m in outcome.melds[seat] for c in m} | set(laid)
            loose = sorted((c for c in cards if c not in melded), key=sort_key)
            line = f"{self.title(seat)}: {melds or '(no melds)'}"
            if loose:
                line += " | unmelded " + " ".join(card_str(c) for c in loose)
            if laid:
                line += " | laid off " + " ".join(card_str(c) for c in sorted(laid, key=sort_key))
            line += f" | deadwood {outcome.deadwood[seat]}"
            p(line)
        if outcome.kind != "draw":
            config = self.env.config
            if config.penalty_scoring:
                charged = ", ".join(f"{self.name(s)} +{outcome.points[s]}" for s in range(n) if outcome.points[s])
                p(f"{outcome.kind.capitalize()}: penalty points {charged or 'none'}.")
            else:
                winner = outcome.winner
                assert winner is not None
                verb = "score" if winner == self.seat else "scores"
                p(f"{outcome.kind.capitalize()}: {self.title(winner)} {verb} {outcome.points[winner]}.")
        scores = self.env.scores
        p("Match score: " + ", ".join(f"{self.name(s)} {scores[a]}" for s, a in enumerate(self.env.possible_agents)))


def limit_text(limit: int) -> str:
    return "gin only" if limit == 0 else f"knock with {limit} or less"


def _order(knocker: int | None, n: int) -> list[int]:
    first = 0 if knocker is None else knocker
    return [(first + k) % n for k in range(n)]


def _cards(mask: int) -> list[int]:
    return [c for c in range(52) if mask >> c & 1]


def _example_card(state: RoundState, seat: int) -> int:
    """The highest unmelded card (the natural discard), for the prompt's example."""
    cards = state.hand(seat)
    loose = [c for c in best_melds(cards)[1] if c != state.taken_card]
    pool = loose or [c for c in cards if c != state.taken_card] or cards
    return max(pool, key=lambda c: (min(c % NUM_RANKS + 1, 10), c))


def play(
    opponent: Any = "simple",
    seed: int | None = None,
    rules: str = "classic",
    episode: str = "match",
    num_players: int = 2,
    seat: int = 0,
    input_fn: Callable[[str], str] | None = None,
    print_fn: Callable[..., None] | None = None,
    deck: Sequence[int | str] | None = None,
    dealer: int | None = None,
    **rule_options: Any,
) -> dict[str, Any]:
    """Play one game in the terminal; returns ``{"finished", "scores", "winner"}``.

    ``deck`` (52 card ids or texts, top first) and ``dealer`` deal the first round as
    ``env.reset(options=...)`` does (docs/api.md); later rounds are shuffled from ``seed``.
    """
    game = Game(opponent, seed, rules, episode, num_players, seat, input_fn, print_fn, deck, dealer, **rule_options)
    return game.run()


if __name__ == "__main__":  # python -m okgin_env.play runs the command line, okgin_env.play_cli (okgin-play)
    import runpy

    runpy.run_module("okgin_env.play_cli", run_name="__main__")
