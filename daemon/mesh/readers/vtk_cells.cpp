#include "daemon/mesh/readers/vtk_cells.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace meshdock::mesh {

std::optional<VtkCellKind> vtk_cell(int t) {
  static const std::map<int, VtkCellKind> kCells = {
      {1, {"vertex", 1}},         {3, {"line", 2}},           {5, {"triangle", 3}},
      {7, {"polygon", 0}},        {8, {"pixel", 4}},          {9, {"quad", 4}},
      {10, {"tetra", 4}},         {12, {"hexahedron", 8}},    {13, {"wedge", 6}},
      {14, {"pyramid", 5}},       {15, {"penta_prism", 10}},  {16, {"hexa_prism", 12}},
      {21, {"line3", 3}},         {22, {"triangle6", 6}},     {23, {"quad8", 8}},
      {24, {"tetra10", 10}},      {25, {"hexahedron20", 20}}, {26, {"wedge15", 15}},
      {27, {"pyramid13", 13}},    {28, {"quad9", 9}},         {29, {"hexahedron27", 27}},
      {30, {"quad6", 6}},         {31, {"wedge12", 12}},      {32, {"wedge18", 18}},
      {33, {"hexahedron24", 24}}, {34, {"triangle7", 7}},     {35, {"line4", 4}}};
  auto it = kCells.find(t);
  if (it == kCells.end()) return std::nullopt;
  return it->second;
}

std::vector<std::int64_t> to_int64(const Array& a) {
  std::vector<std::int64_t> v(a.size());
  const auto* p = static_cast<const std::uint8_t*>(a.data());
  const auto t = a.dtype();
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (t.bits) {
      case 8:
        v[i] = t.code == 0 ? static_cast<std::int8_t>(p[i]) : p[i];
        break;
      case 16: {
        std::uint16_t x;
        std::memcpy(&x, p + 2 * i, 2);
        v[i] = t.code == 0 ? static_cast<std::int16_t>(x) : x;
        break;
      }
      case 32: {
        std::uint32_t x;
        std::memcpy(&x, p + 4 * i, 4);
        v[i] = t.code == 0 ? static_cast<std::int32_t>(x) : static_cast<std::int64_t>(x);
        break;
      }
      default:
        std::memcpy(&v[i], p + 8 * i, 8);
        break;
    }
  }
  return v;
}

Array slice_rows(const Array& a, std::size_t begin, std::size_t end) {
  auto shape = a.shape();
  shape[0] = static_cast<std::int64_t>(end - begin);
  Array out = Array::empty(a.dtype(), shape);
  const std::size_t row =
      a.nbytes() / static_cast<std::size_t>(std::max<std::int64_t>(a.dim(0), 1));
  if (out.nbytes()) {
    std::memcpy(out.data(), static_cast<const std::uint8_t*>(a.data()) + begin * row, out.nbytes());
  }
  return out;
}

void append_vtk_cells(Mesh& mesh, const std::vector<std::int64_t>& conn,
                      const std::vector<std::int64_t>& ends, const std::vector<std::int64_t>& types,
                      std::int64_t num_points, std::int64_t point_base,
                      const std::vector<std::pair<std::string, Array>>& cell_data,
                      const std::function<void(const std::string&)>& fail) {
  const std::size_t ncells = types.size();
  if (ends.size() != ncells) {
    fail(std::to_string(ends.size()) + " cell offsets for " + std::to_string(ncells) +
         " cell types");
  }
  static const int kWedge[] = {0, 2, 1, 3, 5, 4};
  auto size_of = [&](std::size_t c) { return ends[c] - (c == 0 ? 0 : ends[c - 1]); };
  std::size_t start = 0;
  while (start < ncells) {
    const auto t = types[start];
    const auto kind = vtk_cell(static_cast<int>(t));
    if (!kind) {
      fail("cell " + std::to_string(start) + " has VTK type " + std::to_string(t) +
           ", which is not supported");
    }
    std::size_t end = start + 1;
    while (end < ncells && types[end] == t && (kind->nodes != 0 || size_of(end) == size_of(start)))
      ++end;
    const std::int64_t npc = kind->nodes ? kind->nodes : size_of(start);
    if (npc <= 0) fail("cell " + std::to_string(start) + " has " + std::to_string(npc) + " nodes");
    Array block = Array::of<std::int64_t>({static_cast<std::int64_t>(end - start), npc});
    auto* out = block.as<std::int64_t>();
    const bool wedge = t == 13;
    for (std::size_t c = start; c < end; ++c) {
      const auto last = ends[c];
      if (last < npc || static_cast<std::size_t>(last) > conn.size()) {
        fail("offset of cell " + std::to_string(c) + " is " + std::to_string(last) +
             ", outside the " + std::to_string(conn.size()) + "-entry connectivity");
      }
      for (std::int64_t k = 0; k < npc; ++k) {
        const auto v = conn[static_cast<std::size_t>(last - npc + (wedge ? kWedge[k] : k))];
        if (v < 0 || v >= num_points) {
          fail("cell " + std::to_string(c) + " refers to point " + std::to_string(v) + " of " +
               std::to_string(num_points));
        }
        out[(c - start) * static_cast<std::size_t>(npc) + static_cast<std::size_t>(k)] =
            v + point_base;
      }
    }
    mesh.cells.push_back({kind->name, std::move(block)});
    for (const auto& [name, a] : cell_data)
      mesh.cell_data[name].push_back(slice_rows(a, start, end));
    start = end;
  }
}

}  // namespace meshdock::mesh
