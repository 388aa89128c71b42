// The payload builder and DLPack export in C++: sharing vs copying, option errors, ragged blocks
// dropped with regions renumbered, the DLPack dtype table, deleters that keep the Buffer alive,
// and from_dlpack adopting what to_dlpack made (no copy). Python covers the same surface with
// numpy / torch as consumers (tests/python/test_payload.py).
#include <gtest/gtest.h>

#include <algorithm>

#include "daemon/payload/dlpack_export.hpp"
#include "daemon/payload/payload.hpp"

namespace mesh = meshdock::mesh;
namespace payload = meshdock::payload;

namespace {

mesh::Mesh two_blocks() {
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>(15, 0.5), {5, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "tetra",
      mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 1, 2, 3, 4}, {2, 4})));
  mesh::CellBlock poly;
  poly.type = "polyhedron";
  poly.connectivity = mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 0, 1, 3});
  poly.face_offsets = mesh::Array::from_vector(std::vector<std::int64_t>{0, 3, 6});
  poly.offsets = mesh::Array::from_vector(std::vector<std::int64_t>{0, 2});
  m.cells.push_back(poly);
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  mesh::Region r;
  r.name = "r";
  r.entries = mesh::Array::from_vector(std::vector<std::int64_t>{1, 2, 3});
  m.regions.push_back(r);
  return m;
}

std::string error_of(const mesh::Mesh& m, payload::Options o) {
  try {
    payload::build_payload(m, o);
  } catch (const payload::PayloadError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Payload, SharesArraysAndDropsRaggedBlocks) {
  const auto m = two_blocks();
  const auto p = payload::build_payload(m);
  EXPECT_EQ(p.points.data(), m.points.data());
  ASSERT_EQ(p.cells.size(), 2u);
  EXPECT_EQ(p.cells[0].data(), m.cells[0].connectivity.data());
  EXPECT_EQ(p.cell_types, (std::vector<std::string>{"tetra", "triangle"}));
  EXPECT_EQ(p.dropped, std::vector<std::string>{"cells[1] (polyhedron): 1 cells"});
  // The slot's cells/1 is the mesh's cells[2]: said, since the numbers no longer match.
  EXPECT_NE(std::find(p.notes.begin(), p.notes.end(),
                      "the slot numbers the kept blocks only: cells/1 is cells[2]"),
            p.notes.end());
  const auto* bases = p.block_bases.as<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(bases, bases + 3), (std::vector<std::int64_t>{0, 2, 3}));
  const auto* e = p.regions[0].entries.as<std::int64_t>();
  // Cell 1 stays 1, cell 2 (the polyhedron) is gone, cell 3 becomes 2.
  EXPECT_EQ(std::vector<std::int64_t>(e, e + p.regions[0].entries.size()),
            (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(p.notes.size(), 3u);  // dropped, renumbered blocks, regions/r renumbered
}

TEST(Payload, OptionErrorsNameTheArray) {
  auto m = two_blocks();
  payload::Options o;
  o.zero_copy_only = true;
  EXPECT_EQ(error_of(m, o),
            "regions/r: renumbered to the kept blocks (copy); 1 entries in "
            "dropped blocks removed would need a copy, and zero_copy_only=True");
  o.float32 = true;
  EXPECT_EQ(
      error_of(m, o),
      "zero_copy_only (--zero-copy-only) cannot be combined with float32 (--float32): a downcast "
      "always copies");
  payload::Options i32;
  i32.int32 = true;
  m.cells[2].connectivity.as<std::int64_t>()[1] = -(std::int64_t{1} << 40);
  EXPECT_EQ(error_of(m, i32),
            "cells/1: values span [-1099511627776, 2], which int32 cannot hold (int32=True)");
  m.points = mesh::Array::from_vector(std::vector<double>(4, 0.0), {2, 2});
  m.cells[0].connectivity = mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {3});
  EXPECT_EQ(error_of(m, {}), "mesh: cells[0] (tetra) connectivity must be (n, nodes_per_cell)");
}

TEST(Payload, Float32CastsAndNotes) {
  payload::Options o;
  o.float32 = true;
  const auto m = two_blocks();
  const auto p = payload::build_payload(m, o);
  EXPECT_EQ(p.points.dtype(), mesh::kFloat32);
  EXPECT_FLOAT_EQ(p.points.as<float>()[4], 0.5f);
  EXPECT_EQ(p.notes.front(), "points: float64 -> float32 (copy)");
}

TEST(Dlpack, DtypeTable) {
  auto dt = [](std::uint8_t code, std::uint8_t bits) {
    return payload::dlpack_dtype(mesh::Array::empty({code, bits, 1}, {1}), "a");
  };
  for (std::uint8_t bits : {8, 16, 32, 64}) {
    EXPECT_EQ(dt(kDLInt, bits).bits, bits);
    EXPECT_EQ(dt(kDLUInt, bits).bits, bits);
  }
  for (std::uint8_t bits : {16, 32, 64}) EXPECT_EQ(dt(kDLFloat, bits).code, kDLFloat);
  EXPECT_EQ(dt(kDLBfloat, 16).code, kDLBfloat);
  EXPECT_EQ(dt(payload::kDLBoolCode, 8).code, payload::kDLBoolCode);
  EXPECT_THROW(dt(kDLFloat, 8), payload::PayloadError);
  try {
    dt(5, 128);
    FAIL();
  } catch (const payload::PayloadError& e) {
    EXPECT_EQ(std::string(e.what()),
              "a: dtype (code 5, 128 bits, 1 lanes) has no DLPack mapping (int8..64, uint8..64, "
              "float16/32/64, bfloat16, bool)");
  }
}

TEST(Dlpack, DeleterKeepsTheBufferAliveAndImportSharesIt) {
  const auto m = two_blocks();
  DLManagedTensor* t = nullptr;
  const void* data = m.points.data();
  {
    const auto p = payload::build_payload(m);
    t = payload::to_dlpack(p.points, p.device, "points");
  }
  const long before = m.points.buffer().use_count();
  EXPECT_EQ(t->dl_tensor.data, data);
  EXPECT_EQ(t->dl_tensor.ndim, 2);
  EXPECT_EQ(t->dl_tensor.shape[0], 5);
  EXPECT_EQ(t->dl_tensor.strides[0], 3);
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
  {
    const auto back = payload::from_dlpack(t, "points");  // owns t now
    EXPECT_EQ(back.data(), data);
    EXPECT_EQ(back.shape(), m.points.shape());
    EXPECT_EQ(m.points.buffer().use_count(), before);  // through t's holder, not a new share
  }
  EXPECT_EQ(m.points.buffer().use_count(), before - 1);  // t's deleter ran, exactly once
}

TEST(Dlpack, ImportRefusesDeviceMemoryAndCallsTheDeleter) {
  const auto m = two_blocks();
  const long before = m.points.buffer().use_count();
  DLManagedTensor* t = payload::to_dlpack(m.points, {2, 0}, "points");
  EXPECT_EQ(m.points.buffer().use_count(), before + 1);
  EXPECT_THROW(payload::from_dlpack(t, "points"), payload::PayloadError);
  EXPECT_EQ(m.points.buffer().use_count(), before);
}
