"""DevicePayload and the DLPack handoff on the host (no GPU): zero-copy adoption by numpy and
torch, lifetimes, options (float32, int32 with range check, zero_copy_only), ragged blocks
dropped with region renumbering, notes vs derived, dtype mapping, from_cupy and to_torch.
GPU behaviour is in test_payload_gpu.py (skipped where no device answers)."""
import gc
import warnings

import numpy as np
import pytest
import torch

import meshdock as md


@pytest.fixture
def box(data_dir):
    return md.read(data_dir / "meshes" / "box.v41.msh")


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*a, **kw)
    msgs = [str(w.message) for w in caught if issubclass(w.category, md.PayloadWarning)]
    assert len(msgs) <= 1, msgs  # one warning per call, listing its notes
    if msgs and "\n  - " in msgs[0]:
        return out, msgs[0].split("\n  - ")[1:]
    return out, msgs


def test_to_dlpack_is_zero_copy_for_numpy_and_torch(box):
    p, warned = _quiet(md.to_dlpack, box)
    assert warned == [] and p.notes == []
    a, t = np.from_dlpack(p.points), torch.from_dlpack(p.points)
    assert a.ctypes.data == t.data_ptr() == box.points.ctypes.data == p.points.data_ptr
    t[3, 1] = 123.5  # a write through torch is seen by numpy and by the mesh
    assert a[3, 1] == 123.5 and box.points[3, 1] == 123.5
    for (name, arr), blk in zip(list(p.arrays())[1:8], box.cells):
        assert np.from_dlpack(arr).ctypes.data == blk.data.ctypes.data, name
    assert p.shared[:2] == ["points", "cells/0"] and "block_bases" not in p.shared


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                    reason="torch 1.x's as_tensor takes neither __dlpack__ nor __array__ from an "
                           "object (docs/api.md: use torch.from_dlpack)")
def test_torch_as_tensor_and_asarray_adopt_an_array_without_a_copy(box):
    # torch 2's as_tensor / asarray take a meshdock.Tensor through __dlpack__ (the idiom many
    # loaders use); a fallback to __array__ or to the sequence protocol would copy.
    p = md.to_dlpack(box)
    for adopt in (torch.as_tensor, torch.asarray):
        t = adopt(p.points)
        assert t.data_ptr() == box.points.ctypes.data, adopt.__name__
        assert t.shape == box.points.shape and t.dtype == torch.float64


def test_every_array_speaks_dlpack(box):
    p = md.to_dlpack(box)
    names = [n for n, _ in p.arrays()]
    assert names[:2] == ["points", "cells/0"] and "block_bases" in names
    assert "regions/solid" in names and "point_data/gmsh:dim_tags" in names
    for name, a in p.arrays():
        assert a.__dlpack_device__() == (1, 0), name
        assert torch.from_dlpack(a).shape == tuple(a.shape), name
    assert p.device == (1, 0)


def test_payload_values_match_the_mesh(box):
    p = md.to_dlpack(box)
    assert p.cell_types == [b.type for b in box.cells]
    assert np.asarray(p.block_bases).tolist() == [0, 52, 104, 188, 272, 390, 508, 1443]
    solid = next(r for r in p.regions if r.name == "solid")
    assert np.asarray(solid.entries).tolist() == list(range(508, 1443))
    assert {k: v.tolist() for k, v in p.field_data.items()} == \
        {k: v.tolist() for k, v in box.field_data.items()}
    assert p.derived == ["block_bases: 7 kept blocks, 1443 cells"]


def test_payload_and_tensors_outlive_the_mesh(data_dir):
    m = md.read(data_dir / "meshes" / "box.v41b.msh")
    expect = m.points.copy()
    p = md.to_dlpack(m)
    del m
    gc.collect()
    np.testing.assert_array_equal(np.from_dlpack(p.points), expect)
    t = torch.from_dlpack(p.points)
    del p
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expect)


def test_float32_casts_every_float_array_with_notes(box):
    p, warned = _quiet(md.to_dlpack, box, float32=True)
    assert p.points.dtype == "float32"
    np.testing.assert_allclose(np.from_dlpack(p.points), box.points.astype(np.float32))
    assert warned == p.notes == ["points: float64 -> float32 (copy)"]
    assert p.cells[0].dtype == "int64"  # indices untouched
    assert "points" not in p.shared


def test_int32_casts_indices_after_a_range_check(box):
    p, warned = _quiet(md.to_dlpack, box, int32=True)
    assert {str(a.dtype) for a in p.cells} == {"int32"} and p.block_bases.dtype == "int32"
    assert all(r.entries.dtype == "int32" for r in p.regions)
    np.testing.assert_array_equal(np.from_dlpack(p.cells[6]), box.cells[6].data)
    assert "cells/0: int64 -> int32 (copy)" in warned and "regions/solid: int64 -> int32 (copy)" in warned
    assert not any("block_bases" in n for n in warned)  # made here, not copied


def test_int32_range_check_names_array_and_span():
    m = md.Mesh(points=np.zeros((4, 3)),
                cells=[md.CellBlock("line", np.array([[0, 1]])),
                       md.CellBlock("tetra", np.array([[0, 1, 2, 3_000_000_000]]))])
    with pytest.raises(md.PayloadError,
                       match=r"cells/1: values span \[0, 3000000000\], which int32 cannot hold"):
        md.to_dlpack(m, int32=True)


def test_zero_copy_only(box):
    p, warned = _quiet(md.to_dlpack, box, zero_copy_only=True)
    assert warned == [] and p.notes == []
    for opt in ({"float32": True}, {"int32": True}):
        with pytest.raises(md.PayloadError, match="cannot be combined with .*: a downcast always copies"):
            md.to_dlpack(box, zero_copy_only=True, **opt)
    m = md.Mesh(points=np.zeros((4, 3)),
                cells=[md.CellBlock("tetra", np.array([[0, 1, 2, 3]], dtype=np.int32))])
    with pytest.raises(md.PayloadError, match=r"cells/0: int32 -> int64 \(copy\) would need a copy"):
        md.to_dlpack(m, zero_copy_only=True)
    p, warned = _quiet(md.to_dlpack, m)
    assert warned == ["cells/0: int32 -> int64 (copy)"]


def _ragged_mesh():
    poly = md.CellBlock("polyhedron", np.array([0, 1, 2, 0, 1, 3, 0, 2, 3, 1, 2, 3]),
                        offsets=np.array([0, 4]), face_offsets=np.array([0, 3, 6, 9, 12]))
    return md.Mesh(
        points=np.random.default_rng(0).random((5, 3)),
        cells=[md.CellBlock("tetra", np.array([[0, 1, 2, 3], [1, 2, 3, 4]])), poly,
               md.CellBlock("triangle", np.array([[0, 1, 2], [1, 2, 3], [2, 3, 4]]))],
        cell_data={"k": [np.array([1.0, 2.0]), np.array([3.0]), np.array([4.0, 5.0, 6.0])]},
        regions=[md.Region("r", "cell", 3, 1, np.array([0, 2, 3, 5])),
                 md.Region("s", "side", 2, 2, np.array([[3, 1], [2, 0]])),
                 md.Region("p", "point", 0, 3, np.array([4]))])


def test_ragged_blocks_are_dropped_and_regions_renumbered():
    p, warned = _quiet(md.to_dlpack, _ragged_mesh())
    assert p.cell_types == ["tetra", "triangle"]
    assert p.dropped == ["cells[1] (polyhedron): 1 cells"]
    assert np.asarray(p.block_bases).tolist() == [0, 2, 5]
    assert [np.asarray(a).tolist() for a in p.cell_data["k"]] == [[1.0, 2.0], [4.0, 5.0, 6.0]]
    by = {r.name: np.asarray(r.entries).tolist() for r in p.regions}
    assert by == {"r": [0, 2, 4], "s": [[2, 1]], "p": [4]}
    assert warned == p.notes == [
        "dropped cells[1] (polyhedron): 1 cells: a ragged block is no DLPack tensor",
        "the slot numbers the kept blocks only: cells/1 is cells[2]",
        "regions/r: renumbered to the kept blocks (copy); 1 entries in dropped blocks removed",
        "regions/s: renumbered to the kept blocks (copy); 1 entries in dropped blocks removed"]
    with pytest.raises(md.PayloadError, match="regions/r: renumbered .* would need a copy"):
        md.to_dlpack(_ragged_mesh(), zero_copy_only=True)


def test_dtype_mapping_and_unsupported_dtypes():
    m = md.Mesh(points=np.zeros((3, 3)), cells=[md.CellBlock("triangle", np.array([[0, 1, 2]]))],
                point_data={"i8": np.arange(3, dtype=np.int8), "u16": np.arange(3, dtype=np.uint16),
                            "f16": np.arange(3, dtype=np.float16), "b": np.array([True, False, True])})
    p = md.to_dlpack(m)
    assert {k: v.dtype for k, v in p.point_data.items()} == \
        {"i8": "int8", "u16": "uint16", "f16": "float16", "b": "bool"}
    np.testing.assert_array_equal(np.from_dlpack(p.point_data["f16"]), m.point_data["f16"])
    assert torch.from_dlpack(p.point_data["i8"]).dtype == torch.int8
    assert np.asarray(p.point_data["b"]).tolist() == [True, False, True]
    m.point_data["z"] = np.zeros(3, dtype=np.complex128)
    with pytest.raises(md.PayloadError, match=r"point_data/z: dtype \(code 5, 128 bits, 1 lanes\) "
                                              r"has no DLPack mapping"):
        md.to_dlpack(m)


def test_host_tensor_refuses_a_stream(box):
    p = md.to_dlpack(box)
    with pytest.raises(ValueError, match="points: stream must be None for a host array"):
        p.points.__dlpack__(stream=1)


def test_to_torch_on_the_cpu_shares_memory(box):
    p, warned = _quiet(md.to_torch, box)
    assert warned == [] and isinstance(p.points, torch.Tensor)
    assert p.points.data_ptr() == box.points.ctypes.data
    assert p.cells[6].dtype == torch.int64 and p.regions[0].entries.dtype == torch.int64


def test_to_torch_adopts_bool_arrays_on_every_torch(box):
    # torch 1.13 (Debian 12) has no DLPack bool: to_torch raised "Unsupported code 6" for a mesh
    # or payload with a bool field; its numpy view is adopted instead, still without a copy.
    m = md.Mesh(box.points, [(b.type, b.data) for b in box.cells],
                point_data={"wall": box.points[:, 0] > 0.5})
    for src in (m, md.to_dlpack(m)):
        p, _ = _quiet(md.to_torch, src)
        t = p.point_data["wall"]
        assert t.dtype == torch.bool
        assert t.tolist() == (box.points[:, 0] > 0.5).tolist()
        assert t.data_ptr() == m.point_data["wall"].ctypes.data  # no copy


def test_from_cupy_adopts_host_arrays_and_every_writer_takes_the_mesh(box, tmp_path):
    for payload in (md.to_dlpack(box), md.to_torch(box)):
        m, warned = _quiet(md.from_cupy, payload)
        assert warned == [] and m.notes == []
        assert m.points.ctypes.data == box.points.ctypes.data  # no copy back
        for fmt in ("vtu", "msh"):
            md.write(tmp_path / f"back.{fmt}", m)
            back = md.read(tmp_path / f"back.{fmt}")
            np.testing.assert_array_equal(back.points, box.points)
            assert {r.name for r in back.regions} == {r.name for r in box.regions}


class _FakeDeviceArray:
    """Stands in for a CuPy array: device memory (kDLCUDA) with .get() -> numpy."""

    def __init__(self, a):
        self._a = np.asarray(a)

    def __dlpack_device__(self):
        return (2, 0)

    def get(self):
        return self._a.copy()


def test_from_cupy_copies_device_arrays_back_and_notes_it(box):
    p = md.to_dlpack(box)
    fake = p.map(lambda name, a: _FakeDeviceArray(np.from_dlpack(a)), device=(2, 0))
    m, warned = _quiet(md.from_cupy, fake)
    assert warned == m.notes and "points: copied device (2, 0) -> host" in m.notes
    # Every array but block_bases (derived, not part of a Mesh) came back with one copy.
    assert len(m.notes) == len(list(p.arrays())) - 1
    np.testing.assert_array_equal(m.points, box.points)
    assert [b.type for b in m.cells] == [b.type for b in box.cells]


def test_to_cupy_without_cupy_names_the_wheel(box):
    if md.has_cupy():
        pytest.skip("CuPy is installed here")
    with pytest.raises(ImportError, match=r"install the wheel for your CUDA toolkit, cupy-cuda\d+x "
                                          r"\(pip install cupy-cuda\d+x\)"):
        md.to_cupy(box)
    assert md.has_cuda_device() in (True, False) and md.has_cupy() is False
