"""Shared fixtures: where the build is, where the test data is, the C++ cross-checks."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MESHDOCK_BUILD_DIR", ROOT / "build"))
DATA = pathlib.Path(os.environ.get("MESHDOCK_TEST_DATA", ROOT / "tests" / "data"))

if str(BUILD / "python") not in sys.path:
    sys.path.insert(0, str(BUILD / "python"))


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return DATA


@pytest.fixture(scope="session")
def core():
    """The C++ validators and device probe (libmeshdock's meshdock_debug_* through ctypes); a
    missing library is a build failure, not a skip."""
    from meshdock import _capi, _debug
    _capi.api()
    return _debug
