// The C ABI of payloads: meshdock_payload wraps a host DevicePayload built by the C++ builder and
// the table of its arrays.
#include <memory>
#include <string>

#include "c_api_mesh.hpp"
#include "daemon/payload/dlpack_export.hpp"
#include "daemon/payload/payload.hpp"

struct meshdock_payload {
  meshdock::payload::DevicePayload payload;
  meshdock::capi::Table table;
  std::vector<meshdock::capi::BlockRow> blocks;
  std::vector<meshdock::capi::RegionRow> regions;
  meshdock_strings lists[4];
};

namespace meshdock::capi {
namespace {

constexpr const char* kPayload = "payload";

std::unique_ptr<meshdock_payload> tabulate(payload::DevicePayload p) {
  auto h = std::make_unique<meshdock_payload>();
  auto& t = h->table;
  const DLDevice dev{static_cast<DLDeviceType>(p.device.type), p.device.id};
  auto add = [&](const mesh::Array& a, std::string name, std::int32_t role, std::string key,
                 std::int32_t block, DLDevice d) -> std::int64_t {
    if (!a.valid()) return -1;
    t.add(host_entry(a, std::move(name), role, std::move(key), block, d));
    return static_cast<std::int64_t>(t.size() - 1);
  };
  add(p.points, "points", MESHDOCK_ROLE_POINTS, "", -1, dev);
  for (std::size_t b = 0; b < p.cells.size(); ++b) {
    BlockRow row;
    row.type = b < p.cell_types.size() ? p.cell_types[b] : std::string();
    row.num_cells = p.cells[b].dim(0);
    row.connectivity = add(p.cells[b], "cells/" + std::to_string(b), MESHDOCK_ROLE_CELLS, "",
                           static_cast<std::int32_t>(b), dev);
    h->blocks.push_back(std::move(row));
  }
  add(p.block_bases, "block_bases", MESHDOCK_ROLE_BLOCK_BASES, "", -1, dev);
  for (const auto& [k, v] : p.point_data)
    add(v, "point_data/" + k, MESHDOCK_ROLE_POINT_DATA, k, -1, dev);
  for (const auto& [k, parts] : p.cell_data) {
    for (std::size_t b = 0; b < parts.size(); ++b)
      add(parts[b], "cell_data/" + k + "/" + std::to_string(b), MESHDOCK_ROLE_CELL_DATA, k,
          static_cast<std::int32_t>(b), dev);
  }
  // field_data is host only whatever the payload's device.
  for (const auto& [k, v] : p.field_data)
    add(v, "field_data/" + k, MESHDOCK_ROLE_FIELD_DATA, k, -1, DLDevice{kDLCPU, 0});
  for (const auto& r : p.regions) {
    RegionRow row;
    row.name = r.name;
    row.kind = mesh::region_kind_name(r.kind);
    row.dim = r.dim;
    row.tag = r.tag;
    row.entries = add(r.entries, "regions/" + r.name, MESHDOCK_ROLE_REGION, r.name, -1, dev);
    h->regions.push_back(std::move(row));
  }
  h->lists[MESHDOCK_PAYLOAD_NOTES].items = p.notes;
  h->lists[MESHDOCK_PAYLOAD_DERIVED].items = p.derived;
  h->lists[MESHDOCK_PAYLOAD_DROPPED].items = p.dropped;
  h->lists[MESHDOCK_PAYLOAD_SHARED].items = p.shared;
  h->payload = std::move(p);
  return h;
}

}  // namespace
}  // namespace meshdock::capi

using namespace meshdock::capi;
namespace payload = meshdock::payload;

extern "C" {

void meshdock_payload_options_init(meshdock_payload_options* o) {
  if (!o) return;
  *o = meshdock_payload_options{};
  o->struct_size = sizeof(meshdock_payload_options);
}

int meshdock_payload_build(const meshdock_mesh* mesh, const meshdock_payload_options* options,
                           meshdock_payload** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    require(mesh, "mesh");
    meshdock_payload_options defaults;
    meshdock_payload_options_init(&defaults);
    const auto c = read_sized(options, defaults, "meshdock_payload_options");
    payload::Options o;
    o.float32 = c.float32 != 0;
    o.int32 = c.int32 != 0;
    o.zero_copy_only = c.zero_copy_only != 0;
    auto p = payload::build_payload(mesh->mesh, o);
    // Every dtype is checked now, so an unsupported one fails at build time naming the array.
    for (const auto& na : payload::payload_arrays(p)) payload::dlpack_dtype(*na.array, na.name);
    *out = tabulate(std::move(p)).release();
  });
}

void meshdock_payload_release(meshdock_payload* p) {
  delete p;
}

DLDevice meshdock_payload_device(const meshdock_payload* p) {
  if (!p) return DLDevice{kDLCPU, 0};
  return DLDevice{static_cast<DLDeviceType>(p->payload.device.type), p->payload.device.id};
}

size_t meshdock_payload_array_count(const meshdock_payload* p) {
  return p ? p->table.size() : 0;
}

int meshdock_payload_array(const meshdock_payload* p, size_t index, meshdock_array_info* info) {
  return array_info(p, kPayload, kPayload, index, info);
}

int meshdock_payload_array_index(const meshdock_payload* p, const char* name, size_t* index) {
  return array_index(p, kPayload, kPayload, name, index);
}

int meshdock_payload_array_dlpack(const meshdock_payload* p, size_t index,
                                  DLManagedTensorVersioned** out) {
  return array_dlpack(p, kPayload, kPayload, index, out);
}

int meshdock_payload_array_dlpack_legacy(const meshdock_payload* p, size_t index,
                                         DLManagedTensor** out) {
  return array_dlpack_legacy(p, kPayload, kPayload, index, out);
}

size_t meshdock_payload_block_count(const meshdock_payload* p) {
  return p ? p->blocks.size() : 0;
}

int meshdock_payload_block(const meshdock_payload* p, size_t block, meshdock_block_info* info) {
  return guard([&] {
    require(p, kPayload);
    if (block >= p->blocks.size())
      throw Error(MESHDOCK_ERR_NOT_FOUND, "payload: block " + std::to_string(block) +
                                              " is out of range (" +
                                              std::to_string(p->blocks.size()) + " blocks)");
    write_sized(info, block_info(p->blocks[block]), "meshdock_block_info");
  });
}

size_t meshdock_payload_region_count(const meshdock_payload* p) {
  return p ? p->regions.size() : 0;
}

int meshdock_payload_region(const meshdock_payload* p, size_t region, meshdock_region_info* info) {
  return guard([&] {
    require(p, kPayload);
    if (region >= p->regions.size())
      throw Error(MESHDOCK_ERR_NOT_FOUND, "payload: region " + std::to_string(region) +
                                              " is out of range (" +
                                              std::to_string(p->regions.size()) + " regions)");
    write_sized(info, region_info(p->regions[region]), "meshdock_region_info");
  });
}

const meshdock_strings* meshdock_payload_list(const meshdock_payload* p, int which) {
  if (!p || which < 0 || which > MESHDOCK_PAYLOAD_SHARED) return nullptr;
  return &p->lists[which];
}

}  // extern "C"
