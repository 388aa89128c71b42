"""The Python protocol mirror's constants against the C++ headers they mirror.

meshdock/protocol.py restates the shm protocol's constants (magic numbers, sizes, the name
prefixes) because the pure-Python consumer must work without libmeshdock. This test reads them
from shm_protocol/include/meshdock/shm/*.hpp, the one place they are defined, so a change on one
side that the other lacks fails here rather than as a consumer that cannot read a segment.
"""
import pathlib
import re

import pytest

from meshdock import protocol

HEADERS = pathlib.Path(__file__).resolve().parents[2] / "shm_protocol" / "include" / "meshdock" / "shm"

# C++ name (namespace meshdock::shm) -> Python name (meshdock.protocol). Every entry must be
# defined on both sides.
MIRRORED = {
    "kControlMagic": "CONTROL_MAGIC",
    "kMinSlots": "MIN_SLOTS",
    "kMaxSlots": "MAX_SLOTS",
    "kDefaultSlots": "DEFAULT_SLOTS",
    "kHandleBytes": "HANDLE_BYTES",
    "kSlotStride": "SLOT_STRIDE",
    "kFlagBfloat16": "FLAG_BFLOAT16",
    "kDefaultPrefix": "DEFAULT_PREFIX",
    "kMaxNameLength": "MAX_NAME_LENGTH",
    "kMaxPrefixLength": "MAX_PREFIX_LENGTH",
    "kCatalogSuffix": "CATALOG_SUFFIX",
    "kLeasesSuffix": "LEASES_SUFFIX",
    "kShmDir": "SHM_DIR",
    "kSourcePrefix": "SOURCE_PREFIX",
    "kSourceTrailer": "SOURCE_TRAILER",
    "kSourceRefused": "SOURCE_REFUSED",
    "kSourceUnderstood": "SOURCE_UNDERSTOOD",
    "kCatalogMagic": "CATALOG_MAGIC",
    "kCatalogLayoutVersion": "CATALOG_LAYOUT_VERSION",
    "kCatalogHeaderSize": "CATALOG_HEADER_SIZE",
    "kMinPageSize": "MIN_PAGE_SIZE",
    "kMaxPageSize": "MAX_PAGE_SIZE",
    "kMaxLeaseCapacity": "MAX_LEASE_CAPACITY",
    "kLeaseClaiming": "LEASE_CLAIMING",
    "kPageHeaderBytes": "PAGE_HEADER_BYTES",
    "kLeaseEntryBytes": "LEASE_ENTRY_BYTES",
    "kSocketAddressBytes": "SOCKET_ADDRESS_BYTES",
    "kCatalogFixedHeaderBytes": "CATALOG_FIXED_HEADER_BYTES",
    "kDeviceUuidBytes": "DEVICE_UUID_BYTES",
    "kDLDeviceCPU": "DL_CPU",
    "kDLDeviceCUDA": "DL_CUDA",
    "kManifestVersion": "MANIFEST_VERSION",
    "kArrayAlignment": "ARRAY_ALIGNMENT",
}

# One declaration per line at namespace scope: `inline constexpr TYPE kName = VALUE;`.
DECL = re.compile(r"^inline constexpr [\w:<>* ]+? (k\w+) = ([^;]+);", re.M)
INT = re.compile(r"^[0-9a-fA-Fx' *+uUlL]+$")


def value(text):
    """A C++ literal or product of integer literals as Python reads it."""
    text = text.strip()
    if text.startswith('"'):
        return text.strip('"')
    assert INT.match(text), f"cannot read the C++ value {text!r}"
    return eval(re.sub(r"(?<=[0-9a-fA-F])[uUlL]+\b", "", text.replace("'", "")), {}, {})


def header_constants():
    found = {}
    for h in sorted(HEADERS.glob("*.hpp")):
        for name, text in DECL.findall(h.read_text()):
            if name in MIRRORED:
                assert name not in found, f"{name} is defined twice ({h.name})"
                found[name] = value(text)
    return found


def test_every_mirrored_constant_is_in_the_headers():
    assert sorted(set(MIRRORED) - set(header_constants())) == []


@pytest.mark.parametrize("cpp,py", sorted(MIRRORED.items()))
def test_python_mirror_equals_header(cpp, py):
    assert getattr(protocol, py) == header_constants()[cpp], f"protocol.{py} differs from {cpp}"


def test_value_reader():
    assert value("64u * 1024 * 1024") == 64 << 20
    assert value("0x80000000u") == 0x80000000
    assert value("60'000'000'000ull") == 60_000_000_000
    assert value('"meshdock-src."') == "meshdock-src."
