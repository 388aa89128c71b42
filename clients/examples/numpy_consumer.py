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
with meshdock.attach(args.name, prefix=args.prefix) as slot:
    for _ in range(args.frames):
        with slot.wait(timeout=10.0) as frame:
            pts = np.from_dlpack(frame.points)
            print(f"frame {frame.number}: {len(pts)} points, bbox {pts.min(0)} .. {pts.max(0)}")
            for t, cells in zip(frame.cell_types, frame.cells):
                print(f"  {t}: {len(cells)} cells")
            for name, a in frame.point_data.items():
                print(f"  point_data {name}: {np.from_dlpack(a).shape}")
