// How regions (and block boundaries) travel through formats that have no notion of them (VTU,
// legacy VTK): one field-data array per region, named
// "meshdock:region:<kind>:<dim>:<tag>:<name>" and holding its int64 entries (Side regions: two
// components). write_vtu and write_vtk make them; read_vtu and read_vtk turn them back into
// regions (regions_from_field_data), so a round trip keeps regions; other tools see ordinary
// field data.
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

// The field-data arrays of `mesh` named by region_field_name, moved out of field_data into
// regions (after those already there, in name order). Call it once the points and cells are
// read: the entries are checked against them. The arrays come from a file, so nothing about
// them is trusted:
// - one that holds anything but integers (Side: anything but (n, 2) integer pairs; Point and
//   Cell: more than one component) is a ReadError naming `path` and the array;
// - one whose entries are not points / cells of this mesh (a file another tool changed after
//   meshdock wrote it) stays field data, with a note saying which entry is outside.
// Integers of any width are widened to int64 (an int64 array becomes the entries as it is).
void regions_from_field_data(Mesh& mesh, const std::string& path);

}  // namespace meshdock::mesh
