// The slot manifest: compact JSON in a catalog page that lists every array in the slot buffer.
//
// {"v":1,"arrays":[{"name":"points","role":"points","block":-1,"dtype":[2,64,1],
//   "shape":[68000,3],"strides":[3,1],"offset":0,"nbytes":1632000}, ...],
//  "cell_types":["tetra"],"block_bases":[0,384000],
//  "regions":[{"name":"inlet","kind":"side","dim":2,"tag":3,"array":"region/inlet"}],
//  "field_data":{"inlet":[3,2]},"notes":[],"derived":[],"dropped":[]}
//
// dtype is DLPack's (code, bits, lanes); strides are in elements, as DLPack counts them; offset
// is bytes from the start of the slot buffer and always a multiple of 256.
//
// A single-array publish (a standalone tensor, e.g. an image) lists one array, named "tensor"
// with role "tensor", at offset 0: {"v":1,"arrays":[{"name":"tensor","role":"tensor",...}]}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshdock/shm/error.hpp"

namespace meshdock::shm {

inline constexpr int kManifestVersion = 1;
inline constexpr std::uint64_t kArrayAlignment = 256;

// DLPack type codes (dlpack.h kDLInt .. kDLBool).
enum class DTypeCode : std::uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6 };

struct DType {
  std::uint8_t code = 0;
  std::uint8_t bits = 0;
  std::uint16_t lanes = 1;
  bool operator==(const DType&) const = default;
  std::uint64_t itemsize() const { return static_cast<std::uint64_t>(bits / 8) * lanes; }
};

enum class ArrayRole { kPoints, kCells, kPointData, kCellData, kRegion, kBlockBases, kTensor };

inline const char* role_name(ArrayRole r) {
  switch (r) {
    case ArrayRole::kPoints:
      return "points";
    case ArrayRole::kCells:
      return "cells";
    case ArrayRole::kPointData:
      return "point_data";
    case ArrayRole::kCellData:
      return "cell_data";
    case ArrayRole::kRegion:
      return "region";
    case ArrayRole::kBlockBases:
      return "block_bases";
    case ArrayRole::kTensor:
      return "tensor";
  }
  return "?";
}

inline ArrayRole parse_role(std::string_view s, const std::string& where) {
  for (auto r : {ArrayRole::kPoints, ArrayRole::kCells, ArrayRole::kPointData, ArrayRole::kCellData,
                 ArrayRole::kRegion, ArrayRole::kBlockBases, ArrayRole::kTensor}) {
    if (s == role_name(r)) return r;
  }
  throw ProtocolError(where + ": role '" + std::string(s) +
                      "' is not one of points, cells, point_data, cell_data, region, "
                      "block_bases, tensor");
}

struct ArrayEntry {
  std::string name;
  ArrayRole role = ArrayRole::kPoints;
  std::int32_t block = -1;  // cell block index for cells / cell_data, else -1
  DType dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements; empty = C-contiguous
  std::uint64_t offset = 0;
  std::uint64_t nbytes = 0;
  bool operator==(const ArrayEntry&) const = default;
};

struct RegionMeta {
  std::string name;
  std::string kind;  // "point" | "cell" | "side"
  std::int32_t dim = 0;
  std::int64_t tag = 0;
  std::string array;  // the ArrayEntry holding its entries
  bool operator==(const RegionMeta&) const = default;
};

struct Manifest {
  std::vector<ArrayEntry> arrays;
  std::vector<std::string> cell_types;
  std::vector<std::int64_t> block_bases;
  std::vector<RegionMeta> regions;
  nlohmann::json field_data = nlohmann::json::object();
  std::vector<std::string> notes;
  std::vector<std::string> derived;
  std::vector<std::string> dropped;
  bool operator==(const Manifest&) const = default;

  const ArrayEntry* find(std::string_view name) const {
    for (const auto& a : arrays) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }
};

inline std::string encode_manifest(const Manifest& m) {
  nlohmann::json arrays = nlohmann::json::array();
  for (const auto& a : m.arrays) {
    arrays.push_back({{"name", a.name},
                      {"role", role_name(a.role)},
                      {"block", a.block},
                      {"dtype", {a.dtype.code, a.dtype.bits, a.dtype.lanes}},
                      {"shape", a.shape},
                      {"strides", a.strides},
                      {"offset", a.offset},
                      {"nbytes", a.nbytes}});
  }
  nlohmann::json regions = nlohmann::json::array();
  for (const auto& r : m.regions) {
    regions.push_back(
        {{"name", r.name}, {"kind", r.kind}, {"dim", r.dim}, {"tag", r.tag}, {"array", r.array}});
  }
  nlohmann::json j = {{"v", kManifestVersion},      {"arrays", arrays},
                      {"cell_types", m.cell_types}, {"block_bases", m.block_bases},
                      {"regions", regions},         {"field_data", m.field_data},
                      {"notes", m.notes},           {"derived", m.derived},
                      {"dropped", m.dropped}};
  return j.dump();
}

namespace detail {

inline const nlohmann::json& require(const nlohmann::json& obj, const char* key,
                                     const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw ProtocolError(where + ": missing field '" + key + "'");
  return *it;
}

template <typename T>
T get_as(const nlohmann::json& v, const std::string& where, const char* key) {
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw ProtocolError(where + ": field '" + key + "' has the wrong type (" + e.what() + ")");
  }
}

inline bool valid_dtype(const DType& d) {
  if (d.lanes != 1) return false;
  switch (static_cast<DTypeCode>(d.code)) {
    case DTypeCode::kInt:
    case DTypeCode::kUInt:
      return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case DTypeCode::kFloat:
      return d.bits == 16 || d.bits == 32 || d.bits == 64;
    case DTypeCode::kBfloat:
      return d.bits == 16;
    case DTypeCode::kBool:
      return d.bits == 8;
  }
  return false;
}

}  // namespace detail

// Parses and checks a manifest against the slot buffer it describes (`data_size` bytes): every
// array 256-byte aligned, inside the buffer, nbytes = product(shape) * itemsize, contiguous.
inline Manifest decode_manifest(std::string_view text, std::uint64_t data_size) {
  using detail::get_as;
  using detail::require;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for numbers beyond double (found by fuzz_shm_validators,
    // regression input tests/data/fuzz/shm_validators/number-out-of-range).
    throw ProtocolError(std::string("manifest: not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) throw ProtocolError("manifest: top level is not a JSON object");
  const auto v = get_as<int>(require(j, "v", "manifest"), "manifest", "v");
  if (v != kManifestVersion) {
    throw ProtocolError("manifest: version " + std::to_string(v) + "; this build reads " +
                        std::to_string(kManifestVersion));
  }
  Manifest m;
  const auto& arrays = require(j, "arrays", "manifest");
  if (!arrays.is_array()) throw ProtocolError("manifest: field 'arrays' is not a list");
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto& a = arrays[i];
    std::string where = "manifest array " + std::to_string(i);
    if (!a.is_object()) throw ProtocolError(where + ": not a JSON object");
    ArrayEntry e;
    e.name = get_as<std::string>(require(a, "name", where), where, "name");
    if (e.name.empty()) throw ProtocolError(where + ": empty name");
    where = "manifest array '" + e.name + "'";
    if (m.find(e.name)) throw ProtocolError(where + ": listed twice");
    e.role = parse_role(get_as<std::string>(require(a, "role", where), where, "role"), where);
    e.block = get_as<std::int32_t>(require(a, "block", where), where, "block");
    const auto dt = get_as<std::vector<std::uint32_t>>(require(a, "dtype", where), where, "dtype");
    if (dt.size() != 3 || dt[0] > 255 || dt[1] > 255 || dt[2] > 65535) {
      throw ProtocolError(where + ": dtype must be [code, bits, lanes]");
    }
    e.dtype = DType{static_cast<std::uint8_t>(dt[0]), static_cast<std::uint8_t>(dt[1]),
                    static_cast<std::uint16_t>(dt[2])};
    if (!detail::valid_dtype(e.dtype)) {
      throw ProtocolError(where + ": dtype [" + std::to_string(dt[0]) + "," +
                          std::to_string(dt[1]) + "," + std::to_string(dt[2]) +
                          "] is not a DLPack type meshdock publishes");
    }
    e.shape = get_as<std::vector<std::int64_t>>(require(a, "shape", where), where, "shape");
    e.strides = get_as<std::vector<std::int64_t>>(require(a, "strides", where), where, "strides");
    e.offset = get_as<std::uint64_t>(require(a, "offset", where), where, "offset");
    e.nbytes = get_as<std::uint64_t>(require(a, "nbytes", where), where, "nbytes");
    if (e.shape.empty() || e.shape.size() > 8) {
      throw ProtocolError(where + ": shape has " + std::to_string(e.shape.size()) +
                          " dimensions; expected 1..8");
    }
    // Element count with overflow checks: a hostile shape must not wrap around to a small size.
    std::uint64_t count = 1;
    for (auto d : e.shape) {
      if (d < 0)
        throw ProtocolError(where + ": negative extent " + std::to_string(d) + " in shape");
      const auto ud = static_cast<std::uint64_t>(d);
      if (ud != 0 && count > data_size / ud) {
        throw ProtocolError(where + ": shape describes more elements than the " +
                            std::to_string(data_size) + "-byte slot buffer holds");
      }
      count *= ud;
    }
    if (count > data_size / e.dtype.itemsize()) {
      throw ProtocolError(where + ": shape describes more bytes than the " +
                          std::to_string(data_size) + "-byte slot buffer holds");
    }
    if (count * e.dtype.itemsize() != e.nbytes) {
      throw ProtocolError(where + ": nbytes is " + std::to_string(e.nbytes) + " but shape x " +
                          std::to_string(e.dtype.itemsize()) + "-byte items gives " +
                          std::to_string(count * e.dtype.itemsize()));
    }
    if (!e.strides.empty()) {
      if (e.strides.size() != e.shape.size()) {
        throw ProtocolError(where + ": strides has " + std::to_string(e.strides.size()) +
                            " entries for a " + std::to_string(e.shape.size()) + "-d shape");
      }
      std::int64_t expect = 1;
      for (std::size_t k = e.shape.size(); k-- > 0;) {
        if (e.shape[k] > 1 && e.strides[k] != expect) {
          throw ProtocolError(where + ": strides are not C-contiguous (dimension " +
                              std::to_string(k) + " has stride " + std::to_string(e.strides[k]) +
                              ", expected " + std::to_string(expect) + ")");
        }
        expect *= e.shape[k] > 0 ? e.shape[k] : 1;
      }
    }
    if (e.offset % kArrayAlignment != 0) {
      throw ProtocolError(where + ": offset " + std::to_string(e.offset) +
                          " is not a multiple of 256");
    }
    if (e.offset > data_size || e.nbytes > data_size - e.offset) {
      throw ProtocolError(where + ": bytes [" + std::to_string(e.offset) + ", " +
                          std::to_string(e.offset + e.nbytes) + ") run past the " +
                          std::to_string(data_size) + "-byte slot buffer");
    }
    m.arrays.push_back(std::move(e));
  }
  auto list = [&](const char* key, auto& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    using T = std::decay_t<decltype(out)>;
    out = get_as<T>(*it, "manifest", key);
  };
  list("cell_types", m.cell_types);
  list("block_bases", m.block_bases);
  list("notes", m.notes);
  list("derived", m.derived);
  list("dropped", m.dropped);
  if (auto it = j.find("field_data"); it != j.end()) {
    if (!it->is_object()) throw ProtocolError("manifest: field 'field_data' is not an object");
    m.field_data = *it;
  }
  if (auto it = j.find("regions"); it != j.end()) {
    if (!it->is_array()) throw ProtocolError("manifest: field 'regions' is not a list");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& r = (*it)[i];
      const std::string where = "manifest region " + std::to_string(i);
      if (!r.is_object()) throw ProtocolError(where + ": not a JSON object");
      RegionMeta meta;
      meta.name = get_as<std::string>(require(r, "name", where), where, "name");
      meta.kind = get_as<std::string>(require(r, "kind", where), where, "kind");
      if (meta.kind != "point" && meta.kind != "cell" && meta.kind != "side") {
        throw ProtocolError(where + " '" + meta.name + "': kind '" + meta.kind +
                            "' is not point, cell or side");
      }
      meta.dim = get_as<std::int32_t>(require(r, "dim", where), where, "dim");
      meta.tag = get_as<std::int64_t>(require(r, "tag", where), where, "tag");
      meta.array = get_as<std::string>(require(r, "array", where), where, "array");
      if (!m.find(meta.array)) {
        throw ProtocolError(where + " '" + meta.name + "': array '" + meta.array +
                            "' is not in the manifest");
      }
      m.regions.push_back(std::move(meta));
    }
  }
  return m;
}

}  // namespace meshdock::shm
