// Where each payload array sits in a slot buffer, and the manifest that says so. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::slots {

struct Layout {
  shm::Manifest manifest;                      // arrays with offsets, cell types, regions, ...
  std::vector<backend::Placement> placements;  // the same arrays, for the backend's upload
  std::uint64_t total = 0;                     // bytes the arrays span (the frame's data_size)
  // Bytes a slot buffer is made of: `total`, or more where cuda-link's importer reads more than
  // the metadata describes (cuda_link_reads): a bfloat16 array, which it reads as float32.
  std::uint64_t buffer = 0;
  // What the control block tells plain cuda-link consumers (DESIGN.md, control block): a mesh
  // is one flat uint8 buffer of `total` bytes; a single-array publish is that array (width,
  // height, comps, dtype), so cuda-link reads it as a texture.
  shm::BufferMetadata metadata;
};

// Arrays in payload_arrays() order, each at the next multiple of shm::kArrayAlignment; the
// manifest also carries cell_types, block_bases, region metadata, field_data (as JSON numbers),
// notes, derived and dropped. The payload must outlive the placements. A single-array payload
// whose shape or dtype the control block cannot describe is a payload::PayloadError.
Layout plan_layout(const payload::DevicePayload& p);

// Bytes cuda-link v1.1.0's importer reads from a slot buffer that `m` describes: height x width
// x comps of the dtype it decodes (float16, float32, uint8 or uint16; cuda_ipc_importer.py:130-140,
// 444-458, 855-856), 512 x 512 x 4 float32 when a dimension is 0. More than m.data_size only for
// bfloat16 (read as float32: twice the bytes).
std::uint64_t cuda_link_reads(const shm::BufferMetadata& m);

}  // namespace meshdock::slots
