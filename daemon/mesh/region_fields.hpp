// How regions (and block boundaries) travel through formats that have no notion of them (VTU):
// one field-data array
// per region, named "meshdock:region:<kind>:<dim>:<tag>:<name>" and holding its int64 entries
// (Side regions: two components). write_vtu makes them; read_vtu turns them back into regions,
// so a VTU round trip keeps regions; other tools see ordinary field data.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh {

inline constexpr std::string_view kRegionFieldPrefix = "meshdock:region:";
// Block sizes (int64), written when the blocks are not just the runs of one cell type that a
// VTU reader would make, so read_vtu splits them back where they were.
inline constexpr std::string_view kBlockSizesField = "meshdock:block_sizes";

inline std::string region_field_name(const Region& r) {
  return std::string(kRegionFieldPrefix) + region_kind_name(r.kind) + ":" + std::to_string(r.dim) +
         ":" + std::to_string(r.tag) + ":" + r.name;
}

// Fills kind, dim, tag and name of `r` from a name made by region_field_name; false when
// `name` is not one (then `r` is unspecified).
inline bool parse_region_field_name(std::string_view name, Region& r) {
  if (!name.starts_with(kRegionFieldPrefix)) return false;
  name.remove_prefix(kRegionFieldPrefix.size());
  auto field = [&](std::string_view& out) {
    const auto colon = name.find(':');
    if (colon == std::string_view::npos) return false;
    out = name.substr(0, colon);
    name.remove_prefix(colon + 1);
    return true;
  };
  std::string_view kind, dim, tag;
  if (!field(kind) || !field(dim) || !field(tag)) return false;
  if (kind == "point")
    r.kind = RegionKind::kPoint;
  else if (kind == "cell")
    r.kind = RegionKind::kCell;
  else if (kind == "side")
    r.kind = RegionKind::kSide;
  else
    return false;
  auto number = [](std::string_view s, auto& v) {
    const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    return res.ec == std::errc() && res.ptr == s.data() + s.size();
  };
  if (!number(dim, r.dim) || !number(tag, r.tag)) return false;
  r.name = std::string(name);
  return true;
}

}  // namespace meshdock::mesh
