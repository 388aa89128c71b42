#!/usr/bin/python3
"""Adopt a CUDA slot's arrays as CuPy arrays (needs a GPU, meshdockd loading with
--device cuda:0 or auto, and the CuPy wheel for your CUDA: meshdock.cupy_wheel() names it).

    PYTHONPATH=build/python clients/examples/cupy_consumer.py bracket
"""
import sys

import meshdock

if not meshdock.has_cupy():
    sys.exit(f"this example needs CuPy: pip install {meshdock.cupy_wheel().split()[0]}")
import cupy as cp

name = sys.argv[1] if len(sys.argv) > 1 else "bracket"
with meshdock.attach(name) as slot:
    frame = slot.wait(timeout=10.0)
    if frame.device[0] != 2:
        sys.exit(f"slot {name!r} is in host memory; load it with --device cuda:0")
    points = cp.from_dlpack(frame.points)  # ordered after the daemon's upload event
    print(f"frame {frame.number}: points {points.shape} on cuda:{frame.device[1]}, "
          f"centroid {points.mean(axis=0)}")
