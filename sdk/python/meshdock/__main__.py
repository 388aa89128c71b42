"""``python3 -m meshdock``: the ``meshdock`` command (meshdock.cli)."""
import sys

from .cli import main

sys.exit(main())
