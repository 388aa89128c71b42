// UGRID's variants, told by the suffix before ".ugrid" as meshio 5.0 tells them (shared by the
// reader and the writer): "x.ugrid" ascii; "x.b8.ugrid" C binary (raw values), big-endian, 8-byte
// reals and 4-byte integers; "lb" little-endian; "b4" 4-byte reals; "b8l" 8-byte integers too;
// "r8" / "r4" / "lr8" / "lr4" Fortran unformatted (two records, each between 4-byte length
// markers: the 7 counts, then everything else).
#pragma once

#include <cstddef>
#include <string_view>

namespace meshdock::mesh {

struct UgridVariant {
  enum Kind { kAscii, kC, kFortran };
  Kind kind = kAscii;
  bool big_endian = false;
  std::size_t real_bytes = 8;  // 4 or 8
  std::size_t int_bytes = 4;   // 4 or 8
  std::string_view suffix;     // "" for ascii
};

// The variant a file name says: the text between the last two dots of its leaf, as meshio takes
// filename.split(".")[-2] ("b8.ugrid" is C binary too); anything not in the table is ascii.
inline UgridVariant ugrid_variant(std::string_view path) {
  const auto slash = path.find_last_of('/');
  const auto leaf = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const auto last = leaf.find_last_of('.');
  if (last == std::string_view::npos) return {};
  const auto stem = leaf.substr(0, last);
  const auto dot = stem.find_last_of('.');
  const auto suffix = dot == std::string_view::npos ? stem : stem.substr(dot + 1);
  using V = UgridVariant;
  struct Row {
    std::string_view name;
    V::Kind kind;
    bool big;
    std::size_t real, ints;
  };
  static constexpr Row kRows[] = {
      {"b8l", V::kC, true, 8, 8},        {"b8", V::kC, true, 8, 4},
      {"b4", V::kC, true, 4, 4},         {"lb8l", V::kC, false, 8, 8},
      {"lb8", V::kC, false, 8, 4},       {"lb4", V::kC, false, 4, 4},
      {"r8", V::kFortran, true, 8, 4},   {"r4", V::kFortran, true, 4, 4},
      {"lr8", V::kFortran, false, 8, 4}, {"lr4", V::kFortran, false, 4, 4},
  };
  for (const auto& r : kRows)
    if (r.name == suffix) return {r.kind, r.big, r.real, r.ints, r.name};
  return {};
}

}  // namespace meshdock::mesh
