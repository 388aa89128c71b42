#!/usr/bin/python3
"""Writes the protocol golden vectors: control_blocks.json + control_n{1,2,3,4,10}.bin and
catalog_n2.{json,bin} and leases_n2.bin (catalog layout 2).

Run only when the protocol changes on purpose (and then bump the layout version). Both the C++
tests (tests/unit/test_golden.cpp) and the Python tests (tests/python/test_protocol.py) rebuild
each vector from the JSON with their own encoder and compare byte for byte with the .bin.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "sdk", "python"))
from meshdock import protocol as p  # noqa: E402


def control_case(n):
    version = 1000 + n
    mem, ev = [], []
    for i in range(n):
        if i % 2 == 0:
            mem.append(p.make_host_handle(p.data_object_name("meshdock.", "golden", i, version)))
            ev.append(bytes(64))
        else:  # stands in for an opaque cudaIpcMemHandle_t / cudaIpcEventHandle_t
            mem.append(bytes((i * 31 + k * 7 + n) & 0xFF for k in range(64)))
            ev.append(bytes((k * 13 + i + 5 * n) & 0xFF for k in range(64)))
    if n == 4:  # a single-array publish: a bfloat16 RGBA texture as cuda-link sees it
        meta = p.BufferMetadata(640, 480, 4, 2, 16, 1, 640 * 480 * 4 * 2)
    else:
        meta = p.BufferMetadata.flat_bytes(123456 * n)
    cb = p.ControlBlock(num_slots=n, version=version, write_idx=7 * n, mem_handles=mem,
                        event_handles=ev, shutdown=n % 2, metadata=meta, timestamp=12345.678 + n)
    spec = {"num_slots": n, "version": version, "write_idx": cb.write_idx,
            "shutdown": cb.shutdown, "metadata": vars(meta), "timestamp": cb.timestamp,
            "mem_handles": [h.hex() for h in mem], "event_handles": [h.hex() for h in ev],
            "file": f"control_n{n}.bin"}
    return spec, p.encode_control_block(cb)


MANIFEST = {
    "v": 1,
    "arrays": [
        {"name": "points", "role": "points", "block": -1, "dtype": [2, 64, 1], "shape": [4, 3],
         "strides": [3, 1], "offset": 0, "nbytes": 96},
        {"name": "cells/0", "role": "cells", "block": 0, "dtype": [0, 64, 1], "shape": [1, 4],
         "strides": [4, 1], "offset": 256, "nbytes": 32},
        {"name": "region/inlet", "role": "region", "block": -1, "dtype": [0, 64, 1],
         "shape": [1, 2], "strides": [2, 1], "offset": 512, "nbytes": 16},
    ],
    "cell_types": ["tetra"], "block_bases": [0, 1],
    "regions": [{"name": "inlet", "kind": "side", "dim": 2, "tag": 3, "array": "region/inlet"}],
    "field_data": {"inlet": [3, 2]}, "notes": ["golden"], "derived": [], "dropped": [],
}


def catalog_case():
    manifest = json.dumps(MANIFEST, sort_keys=True, separators=(",", ":")).encode()
    page0 = p.Page(seq=2, frame=9, data_size=4096, buffer_version=3, manifest=manifest)
    h = p.CatalogHeader(num_slots=2, page_size=8192, lease_capacity=4, daemon_pid=4242,
                        device_type=p.DL_CPU, device_id=0, futex=9, heartbeat_ns=123456789000,
                        pages=[page0, p.Page()], daemon_uid=998, socket=b"\0" + b"0a1b2")
    leases = [p.Lease(0, 777, False, 9, 0), p.Lease(0, 778, False, 8, 1)]
    spec = {"num_slots": 2, "page_size": 8192, "lease_capacity": 4, "daemon_pid": 4242,
            "device_type": 1, "device_id": 0, "futex": 9, "heartbeat_ns": 123456789000,
            "daemon_uid": 998, "socket": "\u0000" + "0a1b2",
            "pages": [{"frame": 9, "data_size": 4096, "buffer_version": 3,
                       "manifest": MANIFEST}],
            "leases": [{"slot": 0, "index": 0, "pid": 777, "frame": 9},
                       {"slot": 1, "index": 0, "pid": 778, "frame": 8}],
            "file": "catalog_n2.bin", "leases_file": "leases_n2.bin"}
    return spec, p.encode_catalog(h), p.encode_leases(2, 4, leases)


def main():
    cases = []
    for n in (1, 2, 3, 4, 10):
        spec, data = control_case(n)
        assert len(data) == p.control_block_size(n)
        with open(os.path.join(HERE, spec["file"]), "wb") as f:
            f.write(data)
        cases.append(spec)
    with open(os.path.join(HERE, "control_blocks.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")
    spec, data, leases = catalog_case()
    with open(os.path.join(HERE, spec["file"]), "wb") as f:
        f.write(data)
    with open(os.path.join(HERE, spec["leases_file"]), "wb") as f:
        f.write(leases)
    with open(os.path.join(HERE, "catalog_n2.json"), "w") as f:
        json.dump(spec, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
