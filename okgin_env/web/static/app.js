// okgin-web page: plain JavaScript, no build step, no library. Everything shown comes from the
// server's JSON (okgin_env/web/server.py); the page never decides what is legal, it offers the
// moves the server lists. Text from the server is set with textContent, never as HTML.
"use strict";

const SUIT_SYMBOLS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function cardEl(text, extra = "") {
  if (!text) return el("div", { class: `card none ${extra}`, title: "no card" });
  const rank = text[0] === "T" ? "10" : text[0];
  const suit = text[1];
  const red = suit === "H" || suit === "D";
  return el("div", { class: `card ${red ? "red" : ""} ${extra}`, title: text, "data-card": text },
    el("span", { class: "rank", text: rank }), el("span", { class: "suit", text: SUIT_SYMBOLS[suit] || "?" }));
}

// Card texts as the cards print them: "10" for a ten (the engine writes "T": "TD" is "10D").
function showRanks(text) {
  return text.replace(/\bT([SHDC])\b/g, "10$1");
}

// The upcard while it still lies in the discard pile; once a player took it, the slot is empty.
function upcardShown(t) {
  return t.discard_pile.includes(t.upcard) ? t.upcard : null;
}

function cardRow(cards, extra = "small", marked = new Set(), markClass = "") {
  return el("div", { class: "cards" }, ...cards.map((c) => cardEl(c, `${extra} ${marked.has(c) ? markClass : ""}`)));
}

// A hand: melds grouped, then the deadwood cards.
function handEl(layout, { small = false, taken = null } = {}) {
  const size = small ? "small" : "";
  const groups = layout.melds.map((meld) =>
    el("div", { class: "group meld", title: "meld" }, ...meld.map((c) => cardEl(c, size))));
  if (layout.deadwood_cards.length) {
    groups.push(el("div", { class: "group deadwood", title: "deadwood" },
      ...layout.deadwood_cards.map((c) => cardEl(c, `${size} ${c === taken ? "taken" : ""}`))));
  }
  return el("div", { class: "hand" }, ...groups);
}

function showMessage(text) {
  const box = $("message");
  box.textContent = text || "";
  box.hidden = !text;
}

// Every POST carries a JSON content type (the server refuses others: a page elsewhere cannot send
// one without a CORS preflight); a record file goes as its text, JSON Lines.
async function api(method, path, body, raw = false) {
  const options = { method, headers: {} };
  if (method === "POST") {
    options.body = raw ? body : JSON.stringify(body === undefined ? {} : body);
    options.headers["Content-Type"] = raw ? "application/x-ndjson; charset=utf-8" : "application/json";
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

function playerName(players, seat, you) {
  if (seat === you) return "You";
  return `${players[seat]} (seat ${seat})`;
}

// ----------------------------------------------------------------------------- play

const play = { state: null, busy: false };

function scoreText(state) {
  return state.players.map((p, s) => `${s === state.seat ? "you" : p} ${state.scores[s]}`).join(" \u2013 ")
    + ` (to ${state.target_score})`;
}

function eventText(state, event) {
  const who = event.seat === state.seat ? "You" : state.players[event.seat];
  let text = `${who}: ${event.move}`;
  if (event.card && !event.move.includes(event.card)) text += ` (${event.card})`;
  return showRanks(text);
}

function renderPlay(state) {
  play.state = state;
  sessionStorage.setItem("okgin-game", state.game_id);
  $("score").textContent = scoreText(state);
  $("match-info").textContent = `Round ${state.round} \u00b7 ${state.rules}`;
  const events = () => state.log.map((e) => el("li", { text: eventText(state, e) }));
  const log = $("log");
  log.replaceChildren(...events());
  log.scrollTop = log.scrollHeight;
  if (state.showdown) {
    $("play-table").hidden = true;
    // The round's moves stay in view: a round the other seats end before the person's first turn
    // (the upcard taken and a knock at once) would otherwise open on a showdown with no story.
    $("showdown-log").replaceChildren(...events());
    renderShowdown(state.showdown, state.players, state.seat, "showdown");
    $("showdown").hidden = false;
    $("next-round").hidden = state.match_over;
    $("new-match-2").hidden = !state.match_over;
    if (state.match_over) {
      const end = state.truncated ? "The match stops undecided (round limit)."
        : `Match over: ${state.winner === state.seat ? "you win" : `${state.players[state.winner]} wins`} ${scoreText(state)}.`;
      $("showdown-result").textContent += " " + end;
    }
    return;
  }
  $("showdown").hidden = true;
  $("play-table").hidden = false;
  renderTable(state);
}

function renderTable(state) {
  const t = state.table;
  $("opponents").replaceChildren(...t.opponents.map((o) => {
    const seat = el("div", { class: `seat ${t.to_act === o.seat ? "to-act" : ""}`, "data-seat": o.seat },
      el("div", {}, el("span", { class: "name", text: o.name }),
        el("span", { class: "tag", text: `seat ${o.seat}` }),
        t.dealer === o.seat ? el("span", { class: "tag", text: "dealer" }) : null),
      el("div", { class: "backs", title: `${o.cards} cards` },
        ...Array.from({ length: o.cards }, () => el("div", { class: "card back small" }))),
      el("div", { class: "count", text: `${o.cards} cards` }));
    if (o.known.length) seat.append(el("div", { class: "known-row", text: "Holds (taken face up):" }), cardRow(o.known));
    if (o.passed.length) seat.append(el("div", { class: "known-row", text: "Passed or threw:" }), cardRow(o.passed));
    return seat;
  }));
  $("stock-size").textContent = `${t.stock_size} cards`;
  $("discard-top").replaceChildren(cardEl(t.discard_top));
  $("discard-count").textContent = `${t.discard_pile.length} in the pile`;
  $("upcard").replaceChildren(cardEl(upcardShown(t), "small"));
  $("knock-limit").textContent = t.knock_limit === 0 ? "gin only" : `knock limit ${t.knock_limit}`;
  $("hand").replaceChildren(handEl(t.hand, { taken: t.taken_card }));
  $("deadwood").textContent = `(deadwood ${t.hand.deadwood}${t.dealer === state.seat ? "; you deal" : ""})`;
  $("prompt").textContent = showRanks(promptText(t));
  renderMoves(t.moves);
  // A card of the hand that may be discarded is a button too: a click discards it.
  const discards = new Map(t.moves.filter((m) => m.kind === "discard").map((m) => [m.card, m.action]));
  for (const card of $("hand").querySelectorAll(".card[data-card]")) {
    const action = discards.get(card.dataset.card);
    if (action === undefined) continue;
    card.classList.add("playable");
    card.title = `discard ${showRanks(card.dataset.card)} (click)`;
    card.addEventListener("click", () => sendMove(action));
  }
}

function promptText(t) {
  const kinds = new Set(t.moves.map((m) => m.kind));
  if (t.phase === "offer") return `The upcard ${t.discard_top} is offered to you: take it or pass.`;
  if (t.phase === "draw") {
    return kinds.has("take") ? `Draw from the stock or take ${t.discard_top}.`
      : "Everybody passed the upcard: draw from the stock.";
  }
  if (t.phase === "discard") {
    const taken = t.taken_card ? ` (not ${t.taken_card}, just taken)` : "";
    if (kinds.has("gin")) return `Discard${taken}, or go gin!`;
    if (kinds.has("knock")) return `Discard${taken}, or knock: your deadwood is within the limit.`;
    return `Discard a card${taken}.`;
  }
  return "";
}

function renderMoves(moves) {
  const rows = { first: [], discard: [], knock: [] };
  for (const move of moves) {
    let label = move.name;
    if (move.kind === "take" || move.kind === "pass") label += ` ${move.card}`;
    if (move.kind === "knock") label += ` (deadwood ${move.deadwood_after})`;
    if (move.kind === "gin") label += " \u2014 gin";
    label = showRanks(label);
    const button = el("button", { type: "button", class: move.kind, text: label,
      "data-action": String(move.action), "data-name": move.name, "data-kind": move.kind });
    button.addEventListener("click", () => sendMove(move.action));
    const row = move.kind === "discard" ? "discard" : (move.kind === "knock" || move.kind === "gin") ? "knock" : "first";
    rows[row].push(button);
  }
  $("moves").replaceChildren(...Object.values(rows).filter((r) => r.length).map((r) => el("div", { class: "row" }, ...r)));
}

function renderShowdown(showdown, players, you, prefix) {
  const knocker = showdown.knocker;
  let title;
  if (showdown.kind === "draw") title = "The round is a draw: the stock ran out.";
  else if (showdown.kind === "gin") title = `${knocker === you ? "You go" : `${players[knocker]} goes`} gin!`;
  else if (showdown.kind === "undercut") title = `${knocker === you ? "You knock" : `${players[knocker]} knocks`} and ${knocker === you ? "are" : "is"} undercut.`;
  else title = `${knocker === you ? "You knock" : `${players[knocker]} knocks`}.`;
  $(`${prefix}-title`).textContent = title;
  $(`${prefix}-seats`).replaceChildren(...showdown.seats.map((s) => {
    const laid = new Set(s.layoffs);
    const box = el("div", { class: "seat", "data-seat": s.seat },
      el("div", {}, el("span", { class: "name", text: playerName(players, s.seat, you) }),
        s.seat === knocker ? el("span", { class: "tag", text: "knocker" }) : null));
    box.append(el("div", { class: "known-row", text: s.melds.length ? "Melds:" : "No melds" }));
    box.append(el("div", { class: "hand" }, ...s.melds.map((m) => el("div", { class: "group meld" }, ...m.map((c) => cardEl(c, "small"))))));
    if (s.layoffs.length) box.append(el("div", { class: "known-row", text: "Laid off:" }), cardRow(s.layoffs, "small", laid, "laid"));
    if (s.deadwood_cards.length) box.append(el("div", { class: "known-row", text: "Unmelded:" }), cardRow(s.deadwood_cards));
    box.append(el("div", { class: "count", text: `deadwood ${s.deadwood} \u00b7 points ${s.points}` }));
    return box;
  }));
  let result = "";
  if (showdown.kind !== "draw") {
    const winner = showdown.winner;
    const scored = showdown.seats.filter((s) => s.points).map((s) => `${s.seat === you ? "you" : players[s.seat]} ${s.points}`);
    result = `${showdown.kind[0].toUpperCase()}${showdown.kind.slice(1)}: ${winner === you ? "you win" : `${players[winner]} wins`} the round`
      + (scored.length ? ` (points: ${scored.join(", ")}).` : ".");
    // Sent only to the knocker (and in replays): the knock discard is put face down.
    if (showdown.knock_card) result += ` Knock discard (face down): ${showdown.knock_card}.`;
  }
  result += ` Match: ${players.map((p, s) => `${s === you ? "you" : p} ${showdown.scores_after[s]}`).join(" \u2013 ")}.`;
  $(`${prefix}-result`).textContent = result.trim();
}

async function withBusy(work) {
  if (play.busy) return;
  play.busy = true;
  $("busy").hidden = false;
  try {
    showMessage("");
    await work();
  } catch (error) {
    showMessage(error.message);
  } finally {
    play.busy = false;
    $("busy").hidden = true;
  }
}

function newMatch() {
  return withBusy(async () => renderPlay(await api("POST", "/api/games", { opponent: $("opponent").value })));
}

function sendMove(action) {
  return withBusy(async () => renderPlay(await api("POST", `/api/games/${play.state.game_id}/move`, { action })));
}

function nextRound() {
  return withBusy(async () => renderPlay(await api("POST", `/api/games/${play.state.game_id}/next`)));
}

// ----------------------------------------------------------------------------- replay
// A game comes as its outline (the rounds and their step counts), then one round's frames at a
// time: no answer grows with the length of a game. Stepping past a round's end loads the next one.

const replay = { set: null, gameIndex: 0, game: null, round: 0, frames: null, index: 0, loading: false };

async function loadRecordSet(summary) {
  replay.set = summary;
  $("replay-game").replaceChildren(...summary.games.map((g) =>
    el("option", { value: String(g.index), text: `${g.index + 1}: ${g.players.join(" vs ")} (${g.scores.join("\u2013")}, ${g.rounds} rounds)` })));
  await loadGame(0);
}

async function loadGame(index) {
  replay.game = await api("GET", `/api/records/${replay.set.id}/games/${index}`);
  replay.gameIndex = index;
  replay.frames = null;
  $("replay-game").value = String(index);
  $("replay-round").replaceChildren(...replay.game.rounds.map((r) =>
    el("option", { value: String(r.round), text: `${r.round + 1}` })));
  await loadRound(0, false);
  $("replay-empty").hidden = true;
  $("replay-table").hidden = false;
}

// Round ``round`` at its first step, or its last with ``atEnd``. The step line and the buttons
// change at once (the outline knows the round's length); the frames follow.
async function loadRound(round, atEnd) {
  replay.loading = true;
  $("replay-round").value = String(round);
  $("step-info").textContent = stepText(round, atEnd ? replay.game.rounds[round].steps - 1 : 0);
  updateStepButtons();
  let data;
  try {
    data = await api("GET", `/api/records/${replay.set.id}/games/${replay.gameIndex}/rounds/${round}`);
  } catch (error) {
    replay.loading = false;
    if (replay.frames) renderFrame(); // back to the step shown before
    throw error;
  }
  replay.loading = false;
  replay.round = round;
  replay.frames = data.frames;
  replay.index = atEnd ? data.frames.length - 1 : 0;
  renderFrame();
}

function stepText(round, index) {
  const rounds = replay.game.rounds;
  const before = round ? rounds[round - 1].scores_after : rounds[round].scores_after.map(() => 0);
  return `Round ${round + 1} of ${rounds.length}, step ${index} of ${rounds[round].steps - 1}`
    + ` \u00b7 match ${before.join("\u2013")} before this round`;
}

function updateStepButtons() {
  $("replay-table").setAttribute("aria-busy", String(replay.loading));
  const last = replay.game ? replay.game.rounds.length - 1 : 0;
  const atStart = !replay.frames || (replay.round === 0 && replay.index === 0);
  const atEnd = !replay.frames || (replay.round === last && replay.index === replay.frames.length - 1);
  for (const id of ["step-first", "step-back", "step-forward", "step-last"]) $(id).disabled = replay.loading;
  if (!replay.loading) {
    $("step-back").disabled = atStart;
    $("step-forward").disabled = atEnd;
  }
}

function showError(promise) {
  return promise.catch((error) => showMessage(error.message));
}

function step(delta) {
  if (!replay.frames || replay.loading) return;
  const next = replay.index + delta;
  if (next < 0) {
    if (replay.round > 0) showError(loadRound(replay.round - 1, true));
  } else if (next >= replay.frames.length) {
    if (replay.round < replay.game.rounds.length - 1) showError(loadRound(replay.round + 1, false));
  } else {
    replay.index = next;
    renderFrame();
  }
}

function jumpInRound(toEnd) {
  if (!replay.frames || replay.loading) return;
  replay.index = toEnd ? replay.frames.length - 1 : 0;
  renderFrame();
}

function renderFrame() {
  const frame = replay.frames[replay.index];
  const players = replay.game.players;
  $("replay-round").value = String(replay.round);
  $("step-info").textContent = stepText(replay.round, replay.index);
  $("replay-move").textContent = frame.move === null ? `Round ${frame.round + 1} dealt; ${players[frame.dealer]} (seat ${frame.dealer}) deals.`
    : `${players[frame.seat]} (seat ${frame.seat}): ${frame.move}`;
  $("replay-stock").textContent = `${frame.stock_size} cards`;
  $("replay-discard").replaceChildren(cardEl(frame.discard_top));
  $("replay-discard-count").textContent = `${frame.discard_pile.length} in the pile`;
  $("replay-pile").replaceChildren(...frame.discard_pile.map((c) => cardEl(c, "small")));
  $("replay-upcard").replaceChildren(cardEl(frame.upcard, "small"));
  $("replay-limit").textContent = frame.knock_limit === 0 ? "gin only" : `knock limit ${frame.knock_limit}`;
  $("replay-seats").replaceChildren(...frame.hands.map((hand, seat) =>
    el("div", { class: `seat ${frame.to_act === seat ? "to-act" : ""}`, "data-seat": seat },
      el("div", {}, el("span", { class: "name", text: `${players[seat]} (seat ${seat})` }),
        frame.dealer === seat ? el("span", { class: "tag", text: "dealer" }) : null,
        el("span", { class: "count", text: ` deadwood ${hand.deadwood}` })),
      handEl(hand, { small: true, taken: frame.to_act === seat ? frame.taken_card : null }))));
  $("replay-showdown").hidden = !frame.showdown;
  if (frame.showdown) renderShowdown(frame.showdown, players, -1, "replay-showdown");
  updateStepButtons();
}

async function uploadRecords(file) {
  try {
    showMessage("");
    if (limits && file.size > limits.upload_bytes) {
      throw new Error(`${file.name} is larger than ${Math.floor(limits.upload_bytes / 1048576)} MiB, the most okgin-web reads`);
    }
    const text = await file.text();
    await loadRecordSet(await api("POST", `/api/records?name=${encodeURIComponent(file.name)}`, text, true));
  } catch (error) {
    showMessage(error.message);
  }
}

// ----------------------------------------------------------------------------- start

let limits = null; // the server's limits (GET /api/info)

function showTab(name) {
  $("play-view").hidden = name !== "play";
  $("replay-view").hidden = name !== "replay";
  $("tab-play").classList.toggle("active", name === "play");
  $("tab-replay").classList.toggle("active", name === "replay");
}

async function start() {
  $("tab-play").addEventListener("click", () => showTab("play"));
  $("tab-replay").addEventListener("click", () => showTab("replay"));
  $("new-match").addEventListener("click", newMatch);
  $("new-match-2").addEventListener("click", newMatch);
  $("next-round").addEventListener("click", nextRound);
  $("step-first").addEventListener("click", () => jumpInRound(false));
  $("step-last").addEventListener("click", () => jumpInRound(true));
  $("step-back").addEventListener("click", () => step(-1));
  $("step-forward").addEventListener("click", () => step(1));
  $("replay-game").addEventListener("change", (e) => showError(loadGame(Number(e.target.value))));
  $("replay-round").addEventListener("change", (e) => showError(loadRound(Number(e.target.value), false)));
  $("record-file").addEventListener("change", (e) => { if (e.target.files.length) uploadRecords(e.target.files[0]); });
  document.addEventListener("keydown", (e) => {
    if ($("replay-view").hidden || e.target.tagName === "SELECT" || e.target.tagName === "INPUT") return;
    if (e.key === "ArrowRight") step(1);
    if (e.key === "ArrowLeft") step(-1);
  });
  try {
    const info = await api("GET", "/api/info");
    limits = info.limits;
    $("opponent").replaceChildren(...info.opponents.map((o) => el("option", { value: o, text: o })));
    $("opponent").value = info.default_opponent;
    if (info.records.length) await loadRecordSet(info.records[0]);
    const saved = sessionStorage.getItem("okgin-game");
    if (saved) {
      try {
        renderPlay(await api("GET", `/api/games/${saved}`));
        return;
      } catch (error) {
        sessionStorage.removeItem("okgin-game");
      }
    }
    await newMatch();
  } catch (error) {
    showMessage(error.message);
  }
}

document.addEventListener("DOMContentLoaded", start);
