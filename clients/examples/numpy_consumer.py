#!/usr/bin/python3
"""Print every new frame of a slot with NumPy (no copies: np.from_dlpack adopts the slot).

    PYTHONPATH=build/python clients/examples/numpy_consumer.py bracket [--prefix meshdock.]
(--prefix defaults to $MESHDOCK_PREFIX, else "meshdock.")
"""
import argparse
import os

import numpy as np

import meshdock

p = argparse.ArgumentParser()
p.add_argument("name")
p.add_argument("--prefix", default=os.environ.get("MESHDOCK_PREFIX", "meshdock."))
p.add_argument("--frames", type=int, default=1)
args = p.parse_args()
# np.asarray adopts a slot array without a copy (the Tensor's __array__), for every dtype: numpy
# 1.24's np.from_dlpack refuses bool (DLPack's kDLBool), which a published field may be.
with meshdock.attach(args.name, prefix=args.prefix) as slot:
    for _ in range(args.frames):
        with slot.wait(timeout=10.0) as frame:
            if frame.tensor is not None:  # a standalone array (publish_tensor), not a mesh
                t = np.asarray(frame.tensor)
                print(f"frame {frame.number}: tensor {t.dtype} {t.shape}")
                continue
            pts = np.asarray(frame.points)
            print(f"frame {frame.number}: {len(pts)} points, bbox {pts.min(0)} .. {pts.max(0)}")
            for t, cells in zip(frame.cell_types, frame.cells):
                print(f"  {t}: {len(cells)} cells")
            for name, a in frame.point_data.items():
                a = np.asarray(a)
                print(f"  point_data {name}: {a.dtype} {a.shape}")
