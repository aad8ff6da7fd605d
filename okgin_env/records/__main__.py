"""``python -m okgin_env.records FILE...`` (``okgin_env.records.cli``)."""

import sys

from .cli import main

sys.exit(main())
