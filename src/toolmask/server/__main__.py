"""``python -m toolmask.server``: the ``toolmask serve`` command on its own."""

from __future__ import annotations

from toolmask.server.cli import main

raise SystemExit(main())
