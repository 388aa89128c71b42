"""Console scripts of the meshdock wheel: ``meshdockd`` and ``meshdockctl`` exec the executables
the wheel carries in ``meshdock/_bin`` (RPATH ``$ORIGIN/../_lib``: the libraries they need ride
along in ``meshdock/_lib``), so a ``pip install`` into a venv is enough to run the daemon.

Added to the package by packaging/wheel/build; not part of the source tree's package."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


def _exec(name: str) -> None:
    path = os.path.join(_BIN, name)
    if not os.path.isfile(path):
        sys.exit(f"{name}: {path} is missing from the meshdock wheel")
    if not os.access(path, os.X_OK):
        # An installer that dropped the mode bits: the file is ours, restore them once.
        try:
            os.chmod(path, 0o755)
        except OSError as e:
            sys.exit(f"{name}: {path} is not executable ({e})")
    os.execv(path, [name, *sys.argv[1:]])


def meshdockd() -> None:
    _exec("meshdockd")


def meshdockctl() -> None:
    _exec("meshdockctl")
