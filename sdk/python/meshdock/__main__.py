"""``python3 -m meshdock``: the ``meshdock`` command (meshdock.cli)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
