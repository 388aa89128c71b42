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
  std::uint64_t total = 0;                     // bytes the slot buffer needs
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

}  // namespace meshdock::slots
