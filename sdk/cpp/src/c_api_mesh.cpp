// The C ABI of in-process meshes: read a file, build a mesh from the caller's arrays (borrowed,
// released through the caller's callback), expose its arrays, write it.
#include "c_api_mesh.hpp"

#include <memory>
#include <string>
#include <utility>

#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::capi {

Entry host_entry(const mesh::Array& a, std::string name, std::int32_t role, std::string key,
                 std::int32_t block, DLDevice device) {
  Entry e;
  e.name = std::move(name);
  e.role = role;
  e.key = std::move(key);
  e.block = block;
  e.data = a.data();
  e.device = device;
  e.dtype = DLDataType{a.dtype().code, a.dtype().bits, a.dtype().lanes};
  e.shape = a.shape();
  e.strides = contiguous_strides(a.shape());
  e.nbytes = a.nbytes();
  e.owner = a.buffer();
  return e;
}

meshdock_block_info block_info(const BlockRow& b) {
  meshdock_block_info v{};
  v.type = b.type.c_str();
  v.num_cells = b.num_cells;
  v.connectivity = b.connectivity;
  v.offsets = b.offsets;
  v.face_offsets = b.face_offsets;
  return v;
}

meshdock_region_info region_info(const RegionRow& r) {
  meshdock_region_info v{};
  v.name = r.name.c_str();
  v.kind = r.kind.c_str();
  v.dim = r.dim;
  v.tag = r.tag;
  v.entries = r.entries;
  return v;
}

namespace {

constexpr const char* kMesh = "mesh";

// The tables of `m`, in a fresh handle (the caller swaps it in: strong guarantee).
std::unique_ptr<meshdock_mesh> tabulate(mesh::Mesh m) {
  auto h = std::make_unique<meshdock_mesh>();
  auto& t = h->table;
  auto add = [&](const mesh::Array& a, std::string name, std::int32_t role, std::string key,
                 std::int32_t block) -> std::int64_t {
    if (!a.valid()) return -1;
    t.add(host_entry(a, std::move(name), role, std::move(key), block));
    return static_cast<std::int64_t>(t.size() - 1);
  };
  add(m.points, "points", MESHDOCK_ROLE_POINTS, "", -1);
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    const auto& c = m.cells[b];
    const auto bi = static_cast<std::int32_t>(b);
    const std::string base = "cells/" + std::to_string(b);
    BlockRow row;
    row.type = c.type;
    row.num_cells = c.connectivity.valid() || c.offsets.valid() ? c.size() : 0;
    row.connectivity = add(c.connectivity, base, MESHDOCK_ROLE_CELLS, "", bi);
    row.offsets = add(c.offsets, base + "/offsets", MESHDOCK_ROLE_OFFSETS, "", bi);
    row.face_offsets =
        add(c.face_offsets, base + "/face_offsets", MESHDOCK_ROLE_FACE_OFFSETS, "", bi);
    h->blocks.push_back(std::move(row));
  }
  for (const auto& [k, v] : m.point_data)
    add(v, "point_data/" + k, MESHDOCK_ROLE_POINT_DATA, k, -1);
  for (const auto& [k, parts] : m.cell_data) {
    for (std::size_t b = 0; b < parts.size(); ++b)
      add(parts[b], "cell_data/" + k + "/" + std::to_string(b), MESHDOCK_ROLE_CELL_DATA, k,
          static_cast<std::int32_t>(b));
  }
  for (const auto& [k, v] : m.field_data)
    add(v, "field_data/" + k, MESHDOCK_ROLE_FIELD_DATA, k, -1);
  for (const auto& r : m.regions) {
    RegionRow row;
    row.name = r.name;
    row.kind = mesh::region_kind_name(r.kind);
    row.dim = r.dim;
    row.tag = r.tag;
    row.entries = add(r.entries, "regions/" + r.name, MESHDOCK_ROLE_REGION, r.name, -1);
    h->regions.push_back(std::move(row));
  }
  h->notes.items = m.notes;
  h->mesh = std::move(m);
  return h;
}

void replace(meshdock_mesh* h, mesh::Mesh m) {
  auto fresh = tabulate(std::move(m));
  *h = std::move(*fresh);
}

// The caller's release callback, run once when the last Array borrowing its memory is gone.
struct Release {
  meshdock_release_fn fn;
  void* ctx;
  Release(meshdock_release_fn f, void* c) : fn(f), ctx(c) {}
  Release(const Release&) = delete;
  Release& operator=(const Release&) = delete;
  ~Release() {
    if (fn) fn(ctx);
  }
};
using Hold = std::shared_ptr<Release>;

// Adopts the host memory `t` describes as an Array (no copy). NULL `t`: an absent array when
// `optional`, else INVALID_ARGUMENT naming `what`.
mesh::Array adopt(const DLTensor* t, const Hold& hold, const std::string& what, bool optional) {
  if (!t) {
    if (optional) return {};
    throw invalid(what + " is NULL");
  }
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost)
    throw invalid(what + ": device type " + std::to_string(t->device.device_type) +
                  " is not host memory (kDLCPU or kDLCUDAHost); copy it to the host first");
  if (t->ndim < 0 || t->ndim > 32)
    throw invalid(what + ": ndim " + std::to_string(t->ndim) + " is not in 0..32");
  if (t->ndim > 0 && !t->shape) throw invalid(what + ": shape is NULL");
  if (t->dtype.lanes != 1)
    throw invalid(what + ": " + std::to_string(t->dtype.lanes) + " lanes (only 1 is supported)");
  if (t->dtype.bits == 0 || t->dtype.bits % 8 != 0)
    throw invalid(what + ": dtype of " + std::to_string(t->dtype.bits) +
                  " bits is not a whole number of bytes");
  std::vector<std::int64_t> shape(t->shape, t->shape + t->ndim);
  std::uint64_t count = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 0)
      throw invalid(what + ": shape[" + std::to_string(k) + "] is " + std::to_string(shape[k]));
    if (shape[k] != 0 && count > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(shape[k]))
      throw invalid(what + ": shape is too large");
    count *= static_cast<std::uint64_t>(shape[k]);
  }
  if (t->strides) {
    std::int64_t stride = 1;
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (shape[k] != 1 && t->strides[k] != stride)
        throw invalid(what +
                      " is not C-contiguous (strides in elements must be row-major; "
                      "copy it first, e.g. np.ascontiguousarray)");
      stride *= shape[k];
    }
  }
  const std::uint64_t nbytes = count * (t->dtype.bits / 8);
  if (!t->data && nbytes > 0) throw invalid(what + ": data is NULL");
  auto* data = static_cast<std::uint8_t*>(t->data) + t->byte_offset;
  mesh::Allocator owner;
  owner.name = "caller";
  auto keep = std::make_unique<Hold>(hold);
  owner.ctx = keep.get();
  owner.release = [](void*, std::size_t, void* ctx) { delete static_cast<Hold*>(ctx); };
  auto buffer = mesh::Buffer::adopt(data, static_cast<std::size_t>(nbytes), owner);
  keep.release();  // the Buffer owns it now
  return mesh::Array::view(std::move(buffer),
                           mesh::DType{t->dtype.code, t->dtype.bits, t->dtype.lanes},
                           std::move(shape));
}

// Runs a setter: `body(hold, next)` edits a copy of the mesh, which replaces the handle's on
// success. `release(ctx)` runs exactly once: when the arrays go, or before this returns on failure.
template <typename F>
int setter(meshdock_mesh* h, meshdock_release_fn release, void* ctx, F&& body) {
  Hold hold;
  try {
    hold = std::make_shared<Release>(release, ctx);
  } catch (...) {
    if (release) release(ctx);
    return status_of_current_exception();
  }
  return guard([&] {
    require(h, kMesh);
    mesh::Mesh next = h->mesh;
    body(hold, next);
    replace(h, std::move(next));
  });
}

std::string name_arg(const char* name, const char* what) {
  if (!name) throw invalid(std::string(what) + " name is NULL");
  if (!*name) throw invalid(std::string(what) + " name is empty");
  return name;
}

mesh::RegionKind region_kind(const char* kind, const std::string& region) {
  const std::string k = kind ? kind : "";
  if (k == "point") return mesh::RegionKind::kPoint;
  if (k == "cell") return mesh::RegionKind::kCell;
  if (k == "side") return mesh::RegionKind::kSide;
  throw invalid("region '" + region + "': kind '" + k + "' is not point, cell or side");
}

}  // namespace
}  // namespace meshdock::capi

using namespace meshdock::capi;
namespace mesh = meshdock::mesh;

extern "C" {

int meshdock_mesh_read(const char* path, const char* format, meshdock_mesh** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    require(path, "path");
    auto m = mesh::read_mesh(std::string(path), format ? format : "");
    *out = tabulate(std::move(m)).release();
  });
}

int meshdock_mesh_new(meshdock_mesh** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    *out = tabulate(mesh::Mesh{}).release();
  });
}

void meshdock_mesh_release(meshdock_mesh* m) {
  delete m;
}

size_t meshdock_mesh_array_count(const meshdock_mesh* m) {
  return m ? m->table.size() : 0;
}

int meshdock_mesh_array(const meshdock_mesh* m, size_t index, meshdock_array_info* info) {
  return array_info(m, kMesh, kMesh, index, info);
}

int meshdock_mesh_array_index(const meshdock_mesh* m, const char* name, size_t* index) {
  return array_index(m, kMesh, kMesh, name, index);
}

int meshdock_mesh_array_dlpack(const meshdock_mesh* m, size_t index,
                               DLManagedTensorVersioned** out) {
  return array_dlpack(m, kMesh, kMesh, index, out);
}

int meshdock_mesh_array_dlpack_legacy(const meshdock_mesh* m, size_t index, DLManagedTensor** out) {
  return array_dlpack_legacy(m, kMesh, kMesh, index, out);
}

size_t meshdock_mesh_block_count(const meshdock_mesh* m) {
  return m ? m->blocks.size() : 0;
}

int meshdock_mesh_block(const meshdock_mesh* m, size_t block, meshdock_block_info* info) {
  return guard([&] {
    require(m, kMesh);
    if (block >= m->blocks.size())
      throw Error(MESHDOCK_ERR_NOT_FOUND, "mesh: block " + std::to_string(block) +
                                              " is out of range (" +
                                              std::to_string(m->blocks.size()) + " blocks)");
    write_sized(info, block_info(m->blocks[block]), "meshdock_block_info");
  });
}

size_t meshdock_mesh_region_count(const meshdock_mesh* m) {
  return m ? m->regions.size() : 0;
}

int meshdock_mesh_region(const meshdock_mesh* m, size_t region, meshdock_region_info* info) {
  return guard([&] {
    require(m, kMesh);
    if (region >= m->regions.size())
      throw Error(MESHDOCK_ERR_NOT_FOUND, "mesh: region " + std::to_string(region) +
                                              " is out of range (" +
                                              std::to_string(m->regions.size()) + " regions)");
    write_sized(info, region_info(m->regions[region]), "meshdock_region_info");
  });
}

const meshdock_strings* meshdock_mesh_notes(const meshdock_mesh* m) {
  return m ? &m->notes : nullptr;
}

int meshdock_mesh_set_points(meshdock_mesh* m, const DLTensor* t, meshdock_release_fn release,
                             void* ctx) {
  return setter(m, release, ctx, [&](const Hold& hold, mesh::Mesh& next) {
    next.points = adopt(t, hold, "points", false);
  });
}

int meshdock_mesh_add_cell_block(meshdock_mesh* m, const char* type, const DLTensor* connectivity,
                                 const DLTensor* offsets, const DLTensor* face_offsets,
                                 meshdock_release_fn release, void* ctx) {
  return setter(m, release, ctx, [&](const Hold& hold, mesh::Mesh& next) {
    mesh::CellBlock b;
    b.type = name_arg(type, "cell block type:");
    const auto what = "cells block " + std::to_string(next.cells.size()) + " ('" + b.type + "')";
    b.connectivity = adopt(connectivity, hold, what + " data", false);
    b.offsets = adopt(offsets, hold, what + " offsets", true);
    b.face_offsets = adopt(face_offsets, hold, what + " face_offsets", true);
    if (b.face_offsets.valid() && !b.offsets.valid())
      throw invalid(what + ": face_offsets without offsets");
    next.cells.push_back(std::move(b));
  });
}

int meshdock_mesh_set_point_data(meshdock_mesh* m, const char* name, const DLTensor* t,
                                 meshdock_release_fn release, void* ctx) {
  return setter(m, release, ctx, [&](const Hold& hold, mesh::Mesh& next) {
    const auto n = name_arg(name, "point_data");
    next.point_data[n] = adopt(t, hold, "point_data '" + n + "'", false);
  });
}

int meshdock_mesh_add_cell_data(meshdock_mesh* m, const char* name, const DLTensor* t,
                                meshdock_release_fn release, void* ctx) {
  return setter(m, release, ctx, [&](const Hold& hold, mesh::Mesh& next) {
    const auto n = name_arg(name, "cell_data");
    auto& parts = next.cell_data[n];
    parts.push_back(
        adopt(t, hold, "cell_data '" + n + "' part " + std::to_string(parts.size()), false));
  });
}

int meshdock_mesh_set_field_data(meshdock_mesh* m, const char* name, const DLTensor* t,
                                 meshdock_release_fn release, void* ctx) {
  return setter(m, release, ctx, [&](const Hold& hold, mesh::Mesh& next) {
    const auto n = name_arg(name, "field_data");
    next.field_data[n] = adopt(t, hold, "field_data '" + n + "'", false);
  });
}

int meshdock_mesh_add_region(meshdock_mesh* m, const char* name, const char* kind, int32_t dim,
                             int64_t tag, const DLTensor* entries, meshdock_release_fn release,
                             void* ctx) {
  return setter(m, release, ctx, [&](const Hold& hold, mesh::Mesh& next) {
    mesh::Region r;
    r.name = name_arg(name, "region");
    r.kind = region_kind(kind, r.name);
    r.dim = dim;
    r.tag = tag;
    r.entries = adopt(entries, hold, "region '" + r.name + "' entries", true);
    next.regions.push_back(std::move(r));
  });
}

void meshdock_write_options_init(meshdock_write_options* o) {
  if (!o) return;
  *o = meshdock_write_options{};
  o->struct_size = sizeof(meshdock_write_options);
  o->zlib_level = 6;
}

int meshdock_mesh_write(const meshdock_mesh* m, const char* path,
                        const meshdock_write_options* options, meshdock_strings** notes) {
  if (notes) *notes = nullptr;
  return guard([&] {
    require(m, kMesh);
    require(path, "path");
    meshdock_write_options defaults;
    meshdock_write_options_init(&defaults);
    const auto c = read_sized(options, defaults, "meshdock_write_options");
    mesh::WriteOptions o;
    o.format = str_or(c.format, "");
    o.encoding = str_or(c.encoding, "");
    o.zlib_level = c.zlib_level;
    auto list = std::make_unique<meshdock_strings>();
    list->items = mesh::write_mesh(m->mesh, std::string(path), o);
    if (notes) *notes = list.release();
  });
}

int meshdock_release_host_cache(uint64_t* released) {
  return guard([&] {
    const auto kept = mesh::host_cached_bytes();
    mesh::release_host_cache();
    if (released) *released = kept;
  });
}

}  // extern "C"
