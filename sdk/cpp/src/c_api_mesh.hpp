// meshdock_mesh: a mesh::Mesh plus the tables the C ABI reports (arrays, blocks, regions),
// rebuilt whenever the mesh changes. Shared by c_api_mesh.cpp and c_api_payload.cpp.
#pragma once

#include <string>
#include <vector>

#include "c_api_internal.hpp"
#include "daemon/mesh/mesh.hpp"

namespace meshdock::capi {

struct BlockRow {
  std::string type;
  std::int64_t num_cells = 0;
  std::int64_t connectivity = -1, offsets = -1, face_offsets = -1;
};

struct RegionRow {
  std::string name;
  std::string kind;
  std::int32_t dim = 0;
  std::int64_t tag = 0;
  std::int64_t entries = -1;
};

// An Entry for a host mesh::Array (its Buffer is the owner).
Entry host_entry(const mesh::Array& a, std::string name, std::int32_t role, std::string key,
                 std::int32_t block, DLDevice device = DLDevice{kDLCPU, 0});

meshdock_block_info block_info(const BlockRow& b);
meshdock_region_info region_info(const RegionRow& r);

}  // namespace meshdock::capi

struct meshdock_mesh {
  meshdock::mesh::Mesh mesh;
  meshdock::capi::Table table;
  std::vector<meshdock::capi::BlockRow> blocks;
  std::vector<meshdock::capi::RegionRow> regions;
  meshdock_strings notes;
};
