#include "daemon/mesh/region_fields.hpp"

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

namespace {

// The first entry of `entries` (int64) that is not a point / cell of `mesh` for a region of
// `kind`, as a sentence; empty when they all are. Side entries: (cell, facet) rows.
std::string first_outside(const Array& entries, RegionKind kind, const Mesh& mesh) {
  const auto* v = entries.as<std::int64_t>();
  const std::size_t n = entries.size();
  const bool side = kind == RegionKind::kSide;
  const std::int64_t limit = kind == RegionKind::kPoint ? mesh.num_points() : mesh.num_cells();
  const char* what = kind == RegionKind::kPoint ? " points" : " cells";
  for (std::size_t i = 0; i < n; i += side ? 2 : 1) {
    if (v[i] < 0 || v[i] >= limit)
      return "entry " + std::to_string(side ? i / 2 : i) + " is " + std::to_string(v[i]) +
             ", outside the mesh's " + std::to_string(limit) + what;
    if (side && v[i + 1] < 0)
      return "entry " + std::to_string(i / 2) + " has facet " + std::to_string(v[i + 1]);
  }
  return {};
}

}  // namespace

void regions_from_field_data(Mesh& mesh, const std::string& path) {
  for (auto it = mesh.field_data.begin(); it != mesh.field_data.end();) {
    Region r;
    if (!parse_region_field_name(it->first, r)) {
      ++it;
      continue;
    }
    const auto& a = it->second;
    const bool side = r.kind == RegionKind::kSide;
    const auto code = a.dtype().code;
    const bool integers = a.valid() && (code == 0 || code == 1) && a.dtype().lanes == 1 &&
                          a.dtype().bits >= 8 && a.dtype().bits <= 64 && a.dtype().bits % 8 == 0;
    const bool shaped =
        side ? a.ndim() == 2 && a.dim(1) == 2 : a.ndim() <= 1 || (a.ndim() == 2 && a.dim(1) == 1);
    if (!integers || !shaped) {
      std::string shape;
      for (const auto d : a.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      throw ReadError(path + ": field data '" + it->first + "' names a region but holds " +
                      (side       ? "no (n, 2) integer pairs"
                       : integers ? "a (" + shape + ") array, not a list of integers"
                                  : "no integers"));
    }
    // Point and Cell entries are a list (an (n, 1) array or a scalar reads as one).
    const std::vector<std::int64_t> shape =
        side ? a.shape() : std::vector<std::int64_t>{static_cast<std::int64_t>(a.size())};
    if (a.dtype() == kInt64) {
      r.entries = Array::view(a.buffer(), kInt64, shape);
    } else {
      r.entries = Array::of<std::int64_t>(shape);
      auto* out = r.entries.as<std::int64_t>();
      for (std::size_t i = 0; i < a.size(); ++i) out[i] = int_at(a, i);
    }
    if (const auto bad = first_outside(r.entries, r.kind, mesh); !bad.empty()) {
      mesh.notes.push_back("field data '" + it->first + "' names a region but its " + bad +
                           "; kept as field data");
      ++it;
      continue;
    }
    mesh.regions.push_back(std::move(r));
    it = mesh.field_data.erase(it);
  }
}

}  // namespace meshdock::mesh
