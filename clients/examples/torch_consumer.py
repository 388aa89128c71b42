#!/usr/bin/python3
"""Adopt a slot's arrays as PyTorch tensors, the two lines a training loop needs.

    PYTHONPATH=build/python clients/examples/torch_consumer.py bracket
On a CUDA slot the tensors are on the GPU already; torch.from_dlpack passes its current stream,
so kernels run after the daemon's upload without a host synchronisation.
"""
import sys

import torch

import meshdock

name = sys.argv[1] if len(sys.argv) > 1 else "bracket"
with meshdock.attach(name) as slot:
    frame = slot.wait(timeout=10.0)
    if frame.tensor is not None:  # a standalone array (publish_tensor), not a mesh
        t = torch.from_dlpack(frame.tensor)
        print(f"frame {frame.number}: tensor {t.dtype} {tuple(t.shape)} on {t.device}")
        sys.exit(0)
    points = torch.from_dlpack(frame.points)
    tets = torch.from_dlpack(frame.cells[-1])
    centroids = points[tets].mean(dim=1)  # (n_cells, 3), on the slot's device
    print(f"frame {frame.number}: {tuple(points.shape)} points on {points.device}, "
          f"{len(tets)} {frame.cell_types[-1]} cells, mean centroid {centroids.mean(0).tolist()}")
