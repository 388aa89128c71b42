#!/usr/bin/python3
"""A PyTorch DataLoader whose workers read the mesh meshdockd serves, instead of each worker
parsing the file: the Dataset attaches once, the forked workers share the attachment, and
every item takes the newest frame (a reload reaches the next items).

    PYTHONPATH=build/python clients/examples/torch_dataloader.py bracket [--workers 2]
Each item here is a random batch of cell centroids; put your own sampling in sample().
On a CUDA slot attach in each worker instead (CUDA does not survive fork): make the slot in
worker_init_fn, or pass multiprocessing_context="spawn".
"""
import argparse

import torch
from torch.utils.data import DataLoader, Dataset

import meshdock


class MeshSamples(Dataset):
    def __init__(self, name: str, items: int, per_item: int):
        self.slot = meshdock.attach(name)  # before DataLoader forks: its workers inherit it
        self.items, self.per_item = items, per_item

    def __len__(self):
        return self.items

    def sample(self, frame, i):
        points = torch.from_dlpack(frame.points)  # the slot's memory, no copy
        cells = torch.from_dlpack(frame.cells[-1])
        g = torch.Generator().manual_seed(i)
        pick = torch.randint(len(cells), (self.per_item,), generator=g)
        return points[cells[pick]].mean(dim=1)  # new memory: safe past the frame

    def __getitem__(self, i):
        with self.slot.latest(timeout=10.0) as frame:  # the frame's lease ends with the block
            return frame.number, self.sample(frame, i)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("name", nargs="?", default="bracket")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--items", type=int, default=8)
    a = p.parse_args()
    loader = DataLoader(MeshSamples(a.name, a.items, 64), batch_size=4, num_workers=a.workers)
    for frames, batch in loader:
        print(f"frames {frames.tolist()}: batch {tuple(batch.shape)}, "
              f"mean {batch.mean().item():.6g}")
