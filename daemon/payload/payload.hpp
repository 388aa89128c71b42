// DevicePayload (DESIGN.md, "Data model"): what a Mesh becomes on its way to a device or a slot.
// Built by a pure function with no GPU: arrays are shared with the Mesh (no copy) unless an
// option asks for a cast, and every copying or lossy step is written into `notes`.
//
//   file -> reader -> Mesh -> build_payload -> DevicePayload -> backend (host | cuda) -> slot
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::payload {

using mesh::Array;

// The payload layer's one exception type: the message names the array and the value or option.
class PayloadError : public std::runtime_error {
 public:
  explicit PayloadError(const std::string& what) : std::runtime_error(what) {}
};

struct Options {
  bool float32 = false;         // cast every float array (points, point/cell data) to float32
  bool int32 = false;           // cast connectivity, block_bases, region entries to int32
  bool zero_copy_only = false;  // raise rather than copy (with a downcast: raise at once)
};

// DLPack device (DLDeviceType, id): kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3.
struct Device {
  std::int32_t type = 1;
  std::int32_t id = 0;
};

struct DevicePayload {
  Array points;                         // (n, dim) float
  std::vector<std::string> cell_types;  // per kept block, meshio names
  std::vector<Array> cells;             // per kept block: (n, nodes_per_cell)
  Array block_bases;                    // (kept + 1,): first global cell number of each block
  std::map<std::string, Array> point_data;
  std::map<std::string, std::vector<Array>> cell_data;  // per kept block
  std::map<std::string, Array> field_data;              // passthrough, host only
  std::vector<mesh::Region> regions;  // entries in the payload's block-major cell numbering
  // A single-array publish (a standalone tensor, e.g. an image): this array alone, and every
  // mesh member above empty. Valid only in such a payload.
  Array tensor;
  Device device;
  std::vector<std::string> dropped;  // blocks left out ("cells[3] (polyhedron): 12 cells")
  std::vector<std::string> shared;   // arrays that share memory with the Mesh ("points", ...)
  std::vector<std::string> notes;    // lossy or copying steps: surfaced as warnings
  std::vector<std::string> derived;  // facts about the payload: never warned
  // The arrays this payload made by casting the mesh's (float32, int32), by source, so that a
  // rebuild after a field publish reuses the casts of the arrays that did not change.
  struct Cast {
    std::weak_ptr<mesh::Buffer> source;
    Array result;
  };
  std::vector<Cast> casts;
};

// `previous`: an earlier payload of the same mesh with the same options; an array cast then is
// reused, not cast again, when its source is still the mesh's (the notes stay the same).
DevicePayload build_payload(const mesh::Mesh& m, const Options& options = {},
                            const DevicePayload* previous = nullptr);

// The payload of a single-array publish: `a` shared, not copied.
DevicePayload tensor_payload(const Array& a);

// Every array of the payload with its manifest name and role (DESIGN.md, catalog manifest):
//   points            role "points"
//   cells/<b>         role "cells", block b
//   block_bases       role "block_bases"
//   point_data/<name> role "point_data"
//   cell_data/<name>/<b> role "cell_data", block b
//   regions/<name>    role "region"
// field_data is host only and not listed. A single-array payload lists only
//   tensor            role "tensor"
struct NamedArray {
  std::string name;
  const char* role;
  int block;  // -1 when the array belongs to no block
  const Array* array;
};
std::vector<NamedArray> payload_arrays(const DevicePayload& p);

}  // namespace meshdock::payload
