"""The ``okgin-web`` server: a plain page and a small JSON API over ``okgin_env.web.game`` and ``.replay``.

    okgin-web                                   # http://127.0.0.1:8000/, against the simple bot
    okgin-web --opponent search --port 8080
    okgin-web --opponent pretrained:classic --records games.jsonl

**Why Flask and Waitress.** The games are synchronous, CPU-bound Python (a ``search`` decision
takes about 140 ms on an idle core): a threaded WSGI server runs each request in a worker thread
with no async layer around the engine, and Flask (Pallets, maintained for over a decade) gives
routing, JSON and a test client without extra packages. The server is Waitress (Pylons), a
production WSGI server in pure Python: one thread reads and writes every connection, so an idle or
slow client holds a socket, not a thread; a request reaches one of ``SERVER_THREADS`` workers only
once its body is in; connections are capped (``MAX_CONNECTIONS``) and one that sends nothing for
``READ_TIMEOUT_S`` seconds is closed. The page is static HTML, CSS and JavaScript (``static/``),
with no build step and nothing fetched from elsewhere.

**API** (JSON; docs/web.md describes each answer): ``GET /api/info``; ``POST /api/games``
(``{"opponent": name}``), ``GET /api/games/ID``, ``POST /api/games/ID/move`` (``{"action": id}``:
409 when not legal now, 400 when no action id), ``POST /api/games/ID/next`` (leave a showdown);
``POST /api/records`` (a record file's text), ``GET /api/records/SET/games/N`` (a game's outline),
``GET /api/records/SET/games/N/rounds/R`` (a round's frames). An error is ``{"error": message}``
with its status, saying what was wrong and what is allowed; a refused request changes nothing.

**Who may ask** (docs/web.md, threat model). It binds 127.0.0.1 by default and, bound to a
loopback address, answers only requests whose ``Host`` is ``localhost`` or a loopback address (so
a web page elsewhere cannot reach it through DNS rebinding). The API answers only its own page:
a request that a browser marks as coming from another site (``Sec-Fetch-Site``, or an ``Origin``
other than the server's own) is refused with 403, and every ``POST`` must carry a JSON content
type, which a page elsewhere cannot send without a CORS preflight that this server never grants.
Every answer forbids framing (``X-Frame-Options``, CSP ``frame-ancestors``) and loading anything
from elsewhere; API answers are not cached. Bodies are capped: ``MAX_JSON_BYTES`` for the game
API, ``MAX_UPLOAD_BYTES`` for a record file (one read at a time).

Flask and Waitress are imported only here, and only when an app is made or served: without the
``web`` extra, ``okgin-web`` exits with status 2 and says ``pip install okgin[web]``.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..echo import shown
from ..players import bot_help
from ..table_cli import add_table_arguments, table_options
from .game import DEFAULT_MAX_GAMES, GameError, GameStore, OpponentError
from .replay import MAX_GAME_ACTIONS, MAX_ROUND_ACTIONS, ReplayStore, game_lines, read_record_file, read_record_text

STATIC_DIR = Path(__file__).resolve().parent / "static"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_UPLOAD_BYTES = 32 * 1024 * 1024  # a record file (POST /api/records)
MAX_JSON_BYTES = 64 * 1024  # any other request body (a move is a few bytes)
SERVER_THREADS = 8  # requests served at once; more wait in a queue
MAX_CONNECTIONS = 500  # open connections (each a socket and its buffers, no thread); more wait in the listen backlog
READ_TIMEOUT_S = 15  # a connection that sends nothing for this long (between requests, or within one) is closed
JSON_TYPE = "application/json"
RECORD_TYPES = ("application/x-ndjson", "application/jsonl", "application/json")
#: Browsers' ``Sec-Fetch-Site`` values of a request from this server's own page, or typed in by the person.
OWN_SITES = ("same-origin", "none")
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",  # browsers without CSP frame-ancestors
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",  # no <script src> or <img src> of the API from elsewhere
}
MISSING_EXTRA = "okgin-web needs Flask and Waitress: pip install okgin[web] (in a checkout: pip install -e \".[web]\")"


def _import_flask() -> Any:
    try:
        import flask
    except ImportError as error:
        raise ImportError(MISSING_EXTRA) from error
    return flask


def _import_waitress() -> Any:
    try:
        import waitress.server
    except ImportError as error:
        raise ImportError(MISSING_EXTRA) from error
    return waitress.server


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name or address of a ``Host`` header, without its port: ``[::1]:8000`` -> ``::1``."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    if host_header.count(":") == 1:
        return host_header.partition(":")[0]
    return host_header


def _size_text(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size >= 1024 * 1024 else f"{size // 1024} KiB"


def create_app(
    games: GameStore | None = None,
    records: ReplayStore | None = None,
    *,
    host: str = DEFAULT_HOST,
) -> Any:
    """The Flask app serving ``games`` (default: a ``GameStore`` against ``simple``) and ``records``;
    ``host`` is the address it is bound to (a loopback one: only loopback ``Host`` names are answered)."""
    flask = _import_flask()
    games = games if games is not None else GameStore()
    records = records if records is not None else ReplayStore()
    app = flask.Flask(__name__, static_folder=str(STATIC_DIR), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_JSON_BYTES  # the upload route raises its own
    app.json.sort_keys = False
    loopback_only = is_loopback(host)
    upload_slot = threading.Lock()  # one record file parsed at a time: its memory is the most one upload holds
    app.extensions["okgin"] = {"games": games, "records": records, "upload_slot": upload_slot}

    def error(message: str, status: int) -> Any:
        return flask.jsonify(error=message), status

    def body(*fields: str) -> dict[str, Any]:
        """The request's JSON object (``{}`` for an empty body) holding none but ``fields``; a
        GameError says what is wrong."""
        request = flask.request
        if request.mimetype != JSON_TYPE:
            got = f"'{request.mimetype}'" if request.mimetype else "none"
            raise GameError(f"send the body as JSON with Content-Type: {JSON_TYPE} (an empty body is {{}}); "
                            f"got Content-Type {got}", status=415)
        raw = request.get_data()
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except RecursionError:
            raise GameError('the JSON body is nested too deeply; send a flat JSON object, e.g. {"action": 3}',
                            status=400) from None
        except ValueError as err:  # json.JSONDecodeError, bytes that are no UTF-8/16/32 text, or a huge int
            if isinstance(err, json.JSONDecodeError):
                reason = err.msg
            elif isinstance(err, UnicodeDecodeError):
                reason = "not UTF-8 text"
            else:
                reason = f"a number of more than {sys.get_int_max_str_digits()} digits"
            raise GameError(f'the body is not valid JSON ({reason}); send a JSON object, e.g. {{"action": 3}}',
                            status=400) from None
        if not isinstance(data, dict):
            raise GameError(f'send a JSON object, e.g. {{"action": 3}}; got a JSON {type(data).__name__}', status=400)
        unknown = sorted(set(data) - set(fields))
        if unknown:  # (a misspelt field would be ignored: {"oponent": ...} would play the default opponent)
            allowed = ", ".join(fields) if fields else "none (send {})"
            raise GameError(f"unknown field(s) {shown(unknown)}; allowed: {allowed}", status=400)
        return data

    @app.before_request
    def guard() -> None:
        """Refuse a Host that is not this machine's (bound to loopback), and API requests from other sites."""
        request = flask.request
        if loopback_only and not is_loopback(host_name(request.host)):
            raise GameError(f"bad request: Host '{request.host}' is not trusted. Bound to a loopback address, "
                            "okgin-web answers only Host localhost or a loopback address (127.0.0.1, [::1]); "
                            "open the address it printed", status=400)
        if not request.path.startswith("/api/"):
            return  # the page itself may be opened from a link anywhere; it cannot be framed
        site = request.headers.get("Sec-Fetch-Site")
        origin = request.headers.get("Origin")
        own = f"{request.scheme}://{request.host}".lower()
        if site is not None and site.lower() not in OWN_SITES:
            raise GameError(f"cross-site request refused (Sec-Fetch-Site: {site}): okgin-web answers its API only "
                            f"to its own page, {own}/", status=403)
        if origin is not None and origin.lower() != own:
            raise GameError(f"cross-site request refused (Origin {origin}): okgin-web answers its API only to "
                            f"its own page, {own}/", status=403)

    @app.after_request
    def headers(response: Any) -> Any:
        response.headers.update(SECURITY_HEADERS)
        if flask.request.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"  # a player's hand stays out of caches
        return response

    @app.errorhandler(GameError)
    def refused(err: GameError) -> Any:
        return error(str(err), err.status)

    @app.errorhandler(OpponentError)
    def opponent_failed(err: OpponentError) -> Any:
        return error(str(err), 500)

    @app.errorhandler(400)
    def bad_request(err: Any) -> Any:
        return error(f"bad request: {getattr(err, 'description', err)}", 400)

    @app.errorhandler(404)
    def not_found(_: Any) -> Any:
        return error(f"no such page: {flask.request.path}", 404)

    @app.errorhandler(405)
    def wrong_method(_: Any) -> Any:
        return error(f"{flask.request.method} is not allowed on {flask.request.path}", 405)

    @app.errorhandler(413)
    def too_large(_: Any) -> Any:
        limit = flask.request.max_content_length or MAX_JSON_BYTES
        what = "the record file" if limit == MAX_UPLOAD_BYTES else "the request body"
        return error(f"{what} is larger than {_size_text(limit)}, the most okgin-web reads", 413)

    @app.errorhandler(500)
    def failed(_: Any) -> Any:  # an unexpected error (its traceback goes to the server's log): JSON, not a page
        return error("the server failed on this request (a bug; the server's log has the details)", 500)

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
            limits={"upload_bytes": MAX_UPLOAD_BYTES, "json_bytes": MAX_JSON_BYTES, "matches": games.max_games,
                    "game_actions": MAX_GAME_ACTIONS, "round_actions": MAX_ROUND_ACTIONS},
        )

    @app.post("/api/games")
    def new_game() -> Any:
        game = games.create(body("opponent").get("opponent"))
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
        data = body("action")
        if "action" not in data:
            raise GameError('send the move as {"action": id}; the state lists the legal moves', status=400)
        with game.lock:
            game.move(data["action"])
            return flask.jsonify(game.state())

    @app.post("/api/games/<game_id>/next")
    def game_next(game_id: str) -> Any:
        game = games.get(game_id)
        body()
        with game.lock:
            game.next_round()
            return flask.jsonify(game.state())

    @app.post("/api/records")
    def upload_records() -> Any:
        request = flask.request
        request.max_content_length = MAX_UPLOAD_BYTES
        if request.mimetype not in RECORD_TYPES:
            got = f"'{request.mimetype}'" if request.mimetype else "none"
            raise GameError(f"send the record file's text with Content-Type: {RECORD_TYPES[0]} (or "
                            f"{', '.join(RECORD_TYPES[1:])}); got Content-Type {got}", status=415)
        name = request.args.get("name", "upload")[:200]
        if not upload_slot.acquire(blocking=False):  # (a waiting upload would hold a worker thread doing nothing)
            raise GameError("the server is reading another record file; try again in a moment", status=503)
        try:
            data = request.get_data()
            try:
                loaded = read_record_text(data, name)
            except ValueError as err:
                raise GameError(f"cannot read {name}: {err}", status=400) from err
            return flask.jsonify(records.add(name, loaded, lines=game_lines(data)).summary()), 201
        finally:
            upload_slot.release()

    @app.get("/api/records/<set_id>/games/<int(signed=True):index>")
    def record_game(set_id: str, index: int) -> Any:
        return flask.jsonify(records.get(set_id).outline(index))

    @app.get("/api/records/<set_id>/games/<int(signed=True):index>/rounds/<int(signed=True):round_index>")
    def record_round(set_id: str, index: int, round_index: int) -> Any:
        return flask.jsonify(records.get(set_id).frames(index, round_index))

    return app


def make_server(
    app: Any,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    threads: int = SERVER_THREADS,
    connection_limit: int = MAX_CONNECTIONS,
    read_timeout: int = READ_TIMEOUT_S,
) -> Any:
    """A Waitress server for ``app``, listening on ``host:port`` (``run()`` serves, ``close()`` stops):
    ``threads`` workers, at most ``connection_limit`` connections, each closed after ``read_timeout``
    seconds without a byte; a body larger than ``MAX_UPLOAD_BYTES`` is refused before it is read.
    A ValueError or an OSError says why it cannot listen."""
    server_module = _import_waitress()
    return server_module.create_server(
        app, host=host, port=port, threads=threads, connection_limit=connection_limit,
        channel_timeout=read_timeout, cleanup_interval=max(1, read_timeout // 4),  # how often idle ones are sought
        max_request_body_size=MAX_UPLOAD_BYTES + 1024 * 1024,  # past the app's own limit, which answers in JSON
        asyncore_use_poll=True,  # no select() limit of 1024 sockets
        ident="okgin-web",
    )


def listening_address(server: Any) -> tuple[str, int]:
    """The address and port a ``make_server`` server listens on (the first, if several)."""
    listen = getattr(server, "effective_listen", None)
    if listen:
        return listen[0][0], int(listen[0][1])
    return server.effective_host, int(server.effective_port)


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
    add_table_arguments(parser, episode=False)
    parser.add_argument("--max-games", type=int, default=DEFAULT_MAX_GAMES, help=f"matches kept at once (default {DEFAULT_MAX_GAMES})")
    parser.add_argument("--record", "--record-games", dest="record_games", default=None, metavar="FILE",
                        help="append every match played in the page to its end to FILE (JSON Lines game records), "
                             "as okgin-play --record and okgin-eval --record write theirs")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    try:
        _import_flask()
        _import_waitress()
        options = table_options(args)
        games = GameStore(args.opponent, seed=args.seed, max_games=args.max_games, record_games=args.record_games,
                          **options)
        records = ReplayStore()
        if args.records is not None:
            records.add(Path(args.records).name, read_record_file(args.records), set_id="records")
        app = create_app(games, records, host=args.host)
    except (ValueError, ImportError, OSError) as err:  # OSError: the record file
        print(f"okgin-web: error: {err}", file=sys.stderr)
        return 2
    try:
        server = make_server(app, args.host, args.port)
    except ValueError:  # Waitress: the name or address does not resolve
        print(f"okgin-web: error: cannot listen on {args.host}:{args.port}: not an address, or a name that does "
              "not resolve; --host takes an address of this machine, e.g. 127.0.0.1, ::1 or 0.0.0.0", file=sys.stderr)
        return 2
    except OSError as err:  # the port is in use, the address is not this machine's
        if err.errno == errno.EADDRINUSE:  # e.g. mkdocs serve, which also takes 8000
            print(f"okgin-web: error: port {args.port} on {args.host} is in use by another program; choose another "
                  f"with --port (e.g. --port {args.port + 1 if args.port < 65535 else 8001}; --port 0: any free port)",
                  file=sys.stderr)
        else:
            print(f"okgin-web: error: cannot listen on {args.host}:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 2
    host, port = listening_address(server)
    address = f"[{host}]" if ":" in str(host) else host
    print(f"okgin-web: serving on http://{address}:{port}/ (opponent {games.opponents[0]}; Ctrl-C stops)", flush=True)
    if not is_loopback(args.host):
        print("okgin-web: note: bound to a non-loopback address; anyone who can reach it can play", flush=True)
    try:
        server.run()  # until Ctrl-C, which Waitress catches itself
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    if games.record_games is not None and (unwritten := games.flush_records(timeout=10)):
        print(f"okgin-web: error: {unwritten} finished match(es) not recorded in {games.record_games}: the file "
              "took no writes for 10 s", file=sys.stderr, flush=True)
    print("okgin-web: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
