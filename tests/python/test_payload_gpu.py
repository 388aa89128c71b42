"""DevicePayload on a GPU: collected everywhere, run only where a CUDA device answers and CuPy
is installed (skipped otherwise, with the reason). Checks values, not just that calls return."""
import numpy as np
import pytest

import meshdock as md

pytestmark = pytest.mark.skipif(not (md.has_cuda_device() and md.has_cupy()),
                                reason="needs a CUDA device and CuPy")


@pytest.fixture
def box(data_dir):
    return md.read(data_dir / "meshes" / "box.v41.msh")


def test_to_cupy_round_trip(box):
    import cupy as cp
    with pytest.warns(md.PayloadWarning, match="copied host -> cuda"):
        gpu = md.to_cupy(box)
    assert gpu.device[0] == 2 and isinstance(gpu.points, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(gpu.points), box.points)
    for blk, a in zip(box.cells, gpu.cells):
        np.testing.assert_array_equal(cp.asnumpy(a), blk.data)
    back = md.from_cupy(gpu)
    np.testing.assert_array_equal(back.points, box.points)
    assert any("copied device" in n for n in back.notes)


def test_dtype_opt_ins_on_the_device(box):
    import cupy as cp
    gpu = md.to_cupy(box, float32=True, int32=True)
    assert gpu.points.dtype == cp.float32 and gpu.cells[0].dtype == cp.int32
    assert gpu.block_bases.dtype == cp.int32
    np.testing.assert_allclose(cp.asnumpy(gpu.points), box.points.astype(np.float32))


def test_pinned_and_pageable_transfers_agree(box):
    import cupy as cp
    a, b = md.to_cupy(box, pinned=True), md.to_cupy(box, pinned=False)
    for (name, x), (_, y) in zip(a.arrays(), b.arrays()):
        assert bool(cp.all(x == y)), name


def test_a_callers_stream_orders_the_copies_and_keeps_staging(box):
    import cupy as cp
    s = cp.cuda.Stream(non_blocking=True)
    gpu = md.to_cupy(box, stream=s, pinned=True)
    assert len(gpu.refs) == len(list(gpu.arrays()))  # staging rides along until synchronised
    with s:
        total = float(gpu.points.sum())  # queued after the copies on the same stream
    s.synchronize()
    assert total == pytest.approx(float(box.points.sum()))


def test_torch_on_cuda(box):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    p = md.to_torch(box, device="cuda")
    assert p.points.is_cuda
    np.testing.assert_array_equal(p.points.cpu().numpy(), box.points)
