"""The ``okgin-web`` server: a plain page and a small JSON API over ``okgin_env.web.game`` and ``.replay``.

    okgin-web                                   # http://127.0.0.1:8000/, against the simple bot
    okgin-web --opponent search --port 8080
    okgin-web --opponent checkpoints/okgin_classic.pt --records games.jsonl

**Why Flask.** The games are synchronous, CPU-bound Python (a ``search`` decision takes about
140 ms on an idle core): a threaded WSGI server runs each request in its own thread with
no async layer around the engine, and Flask (Pallets, maintained for over a decade, one
dependency here) gives routing, JSON and a test client without extra packages. The server is
Werkzeug's threaded one, which fits a local app for a few people; the page is static HTML, CSS
and JavaScript (``static/``), with no build step and nothing fetched from elsewhere.

**API** (JSON; docs/web.md describes each answer): ``GET /api/info``; ``POST /api/games``
(``{"opponent": name}``), ``GET /api/games/ID``, ``POST /api/games/ID/move`` (``{"action": id}``:
409 when not legal now, 400 when no action id), ``POST /api/games/ID/next`` (leave a showdown);
``POST /api/records`` (a record file's text), ``GET /api/records/SET/games/N`` (a game's frames).
An error is ``{"error": message}`` with its status.

It binds 127.0.0.1 by default and, bound to a loopback address, answers only requests whose
``Host`` is a loopback name (so a web page elsewhere cannot reach it through DNS rebinding).
Flask is imported only here, and only when an app is made: without the ``web`` extra,
``okgin-web`` exits with status 2 and says ``pip install okgin[web]``.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..players import bot_help
from ..rules.config import PRESETS
from .game import DEFAULT_MAX_GAMES, GameError, GameStore, OpponentError
from .replay import ReplayStore, read_record_file, read_record_text

STATIC_DIR = Path(__file__).resolve().parent / "static"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")
MISSING_EXTRA = "okgin-web needs Flask: pip install okgin[web] (in a checkout: pip install -e \".[web]\")"


def _import_flask() -> Any:
    try:
        import flask
    except ImportError as error:
        raise ImportError(MISSING_EXTRA) from error
    return flask


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def create_app(
    games: GameStore | None = None,
    records: ReplayStore | None = None,
    *,
    host: str = DEFAULT_HOST,
) -> Any:
    """The Flask app serving ``games`` (default: a ``GameStore`` against ``simple``) and ``records``."""
    flask = _import_flask()
    games = games if games is not None else GameStore()
    records = records if records is not None else ReplayStore()
    app = flask.Flask(__name__, static_folder=str(STATIC_DIR), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_UPLOAD_BYTES
    app.json.sort_keys = False
    if is_loopback(host):
        app.config["TRUSTED_HOSTS"] = list(LOOPBACK_NAMES)
    app.extensions["okgin"] = {"games": games, "records": records}

    def error(message: str, status: int) -> Any:
        return flask.jsonify(error=message), status

    def body() -> dict[str, Any]:
        data = flask.request.get_json(silent=True)
        if data is None and not flask.request.get_data():
            return {}
        if not isinstance(data, dict):
            raise GameError('send a JSON object, e.g. {"action": 3}', status=400)
        return data

    @app.errorhandler(GameError)
    def refused(err: GameError) -> Any:
        return error(str(err), err.status)

    @app.errorhandler(OpponentError)
    def opponent_failed(err: OpponentError) -> Any:
        return error(str(err), 500)

    @app.errorhandler(400)
    def bad_request(err: Any) -> Any:  # e.g. a Host that is not trusted
        return error(f"bad request: {getattr(err, 'description', err)}", 400)

    @app.errorhandler(404)
    def not_found(_: Any) -> Any:
        return error(f"no such page: {flask.request.path}", 404)

    @app.errorhandler(405)
    def wrong_method(_: Any) -> Any:
        return error(f"{flask.request.method} is not allowed on {flask.request.path}", 405)

    @app.errorhandler(413)
    def too_large(_: Any) -> Any:
        return error(f"the upload is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB", 413)

    @app.get("/")
    def index() -> Any:
        return flask.send_from_directory(STATIC_DIR, "index.html")

    @app.get("/api/info")
    def info() -> Any:
        return flask.jsonify(
            opponents=games.opponents,
            default_opponent=games.opponents[0],
            rules=games.game_options.get("rules", "classic"),
            records=records.listing(),
        )

    @app.post("/api/games")
    def new_game() -> Any:
        game = games.create(body().get("opponent"))
        with game.lock:
            return flask.jsonify(game.state()), 201

    @app.get("/api/games/<game_id>")
    def game_state(game_id: str) -> Any:
        game = games.get(game_id)
        with game.lock:
            return flask.jsonify(game.state())

    @app.post("/api/games/<game_id>/move")
    def game_move(game_id: str) -> Any:
        game = games.get(game_id)
        data = body()
        if "action" not in data:
            raise GameError('send the move as {"action": id}; the state lists the legal moves', status=400)
        with game.lock:
            game.move(data["action"])
            return flask.jsonify(game.state())

    @app.post("/api/games/<game_id>/next")
    def game_next(game_id: str) -> Any:
        game = games.get(game_id)
        with game.lock:
            game.next_round()
            return flask.jsonify(game.state())

    @app.post("/api/records")
    def upload_records() -> Any:
        name = flask.request.args.get("name", "upload")[:200]
        try:
            text = flask.request.get_data().decode("utf-8")
            loaded = read_record_text(text, name)
        except (UnicodeDecodeError, ValueError) as err:
            raise GameError(f"cannot read {name}: {err}", status=400) from err
        return flask.jsonify(records.add(name, loaded).summary()), 201

    @app.get("/api/records/<set_id>/games/<int:index>")
    def record_game(set_id: str, index: int) -> Any:
        return flask.jsonify(records.get(set_id).frames(index))

    return app


# ----------------------------------------------------------------------------- the command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="okgin-web", description="Play Oklahoma Gin against a bot or checkpoint, and watch recorded games, in the browser.")
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8000; 0: any free port)")
    parser.add_argument("--opponent", default="simple",
                        help=f"the default opponent, a player spec as in okgin-eval: {bot_help()}")
    parser.add_argument("--records", default=None, metavar="FILE", help="a game record file (JSON Lines) to watch")
    parser.add_argument("--seed", type=int, default=None, help="deal and bot seed of the first match, +1 for each later one (default: random)")
    parser.add_argument("--rules", choices=PRESETS, default="classic")
    parser.add_argument("--num-players", type=int, default=None, help="2 (classic), 2-4 (penalty)")
    parser.add_argument("--target-score", type=int, default=None, help="match target (default 100)")
    parser.add_argument("--max-games", type=int, default=DEFAULT_MAX_GAMES, help=f"matches kept at once (default {DEFAULT_MAX_GAMES})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    try:
        _import_flask()
        options: dict[str, Any] = {"rules": args.rules, "num_players": args.num_players}
        if args.target_score is not None:
            options["target_score"] = args.target_score
        games = GameStore(args.opponent, seed=args.seed, max_games=args.max_games, **options)
        records = ReplayStore()
        if args.records is not None:
            records.add(Path(args.records).name, read_record_file(args.records), set_id="records")
        app = create_app(games, records, host=args.host)
        from werkzeug.serving import make_server

        server = make_server(args.host, args.port, app, threaded=True)
    except (ValueError, ImportError, OSError) as err:  # OSError: the record file
        print(f"okgin-web: error: {err}", file=sys.stderr)
        return 2
    except SystemExit:  # Werkzeug could not listen (it said why: the port is in use, no such address)
        print(f"okgin-web: error: cannot listen on {args.host}:{args.port}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    print(f"okgin-web: serving on http://{shown}:{port}/ (opponent {games.opponents[0]}; Ctrl-C stops)", flush=True)
    if not is_loopback(args.host):
        print("okgin-web: note: bound to a non-loopback address; anyone who can reach it can play", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
