"""A consumer of a meshdockd slot, run from an installed meshdock (the wheel in a venv, or the
.deb's dist-packages): attaches to NAME, adopts every array of the newest frame with numpy or
torch, and compares them with the mesh file's reference (tests/data/meshes/REFERENCE.json:
shapes, sums and SHA-1 of the float64 values, as meshio read the file). Exits non-zero on any
difference.

    python3 consumer_check.py --lib numpy|torch --name NAME --prefix PREFIX --file MESH \
        --reference REFERENCE.json [--expect-package-under DIR] [--no-grpc]
"""
import argparse
import hashlib
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", choices=("numpy", "torch"), required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--file", required=True, help="the mesh file's name in REFERENCE.json")
    ap.add_argument("--reference", required=True)
    ap.add_argument("--expect-package-under", help="meshdock must be imported from below here")
    ap.add_argument("--no-grpc", action="store_true",
                    help="make `import grpc` fail: attaching must not need grpcio")
    a = ap.parse_args()
    if a.no_grpc:
        sys.modules["grpc"] = None  # any import of grpc now raises ImportError

    import numpy as np
    import meshdock

    where = os.path.realpath(meshdock.__file__)
    print(f"consumer[{a.lib}]: python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"meshdock {meshdock.__version__} from {where}")
    if a.expect_package_under and not where.startswith(os.path.realpath(a.expect_package_under)):
        sys.exit(f"consumer[{a.lib}]: meshdock imported from {where}, not from under "
                 f"{a.expect_package_under}")
    if a.lib == "torch":
        import torch
        print(f"consumer[torch]: torch {torch.__version__}")

        def adopt(x):
            t = torch.from_dlpack(x)
            assert t.device.type == "cpu", t.device
            return t.numpy()
    else:
        def adopt(x):
            return np.from_dlpack(x)

    ref = {e["file"]: e for e in json.load(open(a.reference))}[a.file]

    def check(arr, r, what):
        assert list(arr.shape) == r["shape"], (what, arr.shape, r["shape"])
        digest = hashlib.sha1(np.ascontiguousarray(arr, dtype=np.float64).tobytes()).hexdigest()
        assert digest == r["sha1_f64"], (what, digest, r["sha1_f64"])
        total = float(arr.astype(np.float64).sum())
        assert abs(total - r["sum"]) <= 1e-9 * max(1.0, abs(r["sum"])), (what, total, r["sum"])

    n = 0
    with meshdock.attach(a.name, prefix=a.prefix, timeout=10.0) as slot:
        frame = slot.wait(timeout=10.0)
        check(adopt(frame.points), ref["points"], "points"); n += 1
        types = list(frame.cell_types)
        assert types == [c["type"] for c in ref["cells"]], (types, ref["cells"])
        for i, (block, c) in enumerate(zip(frame.cells, ref["cells"])):
            check(adopt(block), c["conn"], f"cells[{i}]"); n += 1
        for k, r in ref.get("point_data", {}).items():
            check(adopt(frame.point_data[k]), r, f"point_data[{k}]"); n += 1
        del frame
    print(f"consumer[{a.lib}]: {a.name}: {n} arrays equal to {a.file}'s reference")


if __name__ == "__main__":
    main()
