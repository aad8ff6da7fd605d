"""``okgin-web``: a local web app to play Oklahoma Gin against a bot or checkpoint and to watch
recorded games (docs/web.md).

* ``okgin_env.web.game``: the games (one match per session, driven through ``raw_env``), what a
  player is sent, and the check of every move; no web code.
* ``okgin_env.web.replay``: recorded games (``okgin_env.records``) as step-by-step frames with
  every hand visible, a round at a time, within stated limits.
* ``okgin_env.web.payload``: the JSON forms of cards, hands, moves and showdowns.
* ``okgin_env.web.server``: the app (Flask), its server (Waitress), both from the ``web`` extra,
  what they refuse and bound, and the command ``okgin-web``; ``static/`` holds the page (plain
  HTML, CSS and JavaScript, no build step).

Only ``server`` needs Flask and Waitress (``pip install okgin[web]``); importing this package or
the other modules imports neither.
"""
