// "meshdock:block_sizes" (kBlockSizesField), the field-data array write_vtk stores when a
// reader's runs of one cell type would not give the written blocks back: read_vtk splits the
// blocks it made at those boundaries again, as read_vtu does with write_vtu's.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/region_fields.hpp"

namespace meshdock::mesh {

// Cells [begin, end) of a block (fixed-size or ragged) as a block of their own.
inline CellBlock slice_cell_block(const CellBlock& blk, std::int64_t begin, std::int64_t end) {
  if (begin == 0 && end == blk.size()) return blk;
  if (!blk.ragged()) {
    return CellBlock::fixed(blk.type, slice_rows(blk.connectivity, static_cast<std::size_t>(begin),
                                                 static_cast<std::size_t>(end)));
  }
  // Ragged: re-base the CSR levels on the slice.
  const auto* off = blk.offsets.as<std::int64_t>();
  const auto* fo = blk.face_offsets.valid() ? blk.face_offsets.as<std::int64_t>() : nullptr;
  const auto* conn = blk.connectivity.as<std::int64_t>();
  CellBlock out;
  out.type = blk.type;
  std::vector<std::int64_t> offsets, face_offsets, ids;
  for (auto c = begin; c <= end; ++c) offsets.push_back(off[c] - off[begin]);
  if (fo) {
    for (auto f = off[begin]; f <= off[end]; ++f) face_offsets.push_back(fo[f] - fo[off[begin]]);
    ids.assign(conn + fo[off[begin]], conn + fo[off[end]]);
    out.face_offsets = Array::from_vector(face_offsets);
  } else {
    ids.assign(conn + off[begin], conn + off[end]);
  }
  out.offsets = Array::from_vector(offsets);
  out.connectivity = Array::from_vector(ids);
  return out;
}

// Removes kBlockSizesField from the field data and splits the blocks at its boundaries. Every
// boundary the reader made must be one of the written ones, or the sizes do not describe this
// file (edited by another tool): then the blocks stay as they are, with a note (`prefix` first).
inline void split_blocks_as_written(Mesh& mesh, const std::string& prefix) {
  auto it = mesh.field_data.find(std::string(kBlockSizesField));
  if (it == mesh.field_data.end()) return;
  const auto sizes = to_int64(it->second);
  mesh.field_data.erase(it);
  std::set<std::int64_t> wanted;
  std::int64_t at = 0;
  for (auto n : sizes) {
    if (n < 0) at = -1;
    if (at < 0) break;
    wanted.insert(at += n);
  }
  bool fits = at == mesh.num_cells();
  at = 0;
  for (const auto& blk : mesh.cells) fits &= wanted.count(at += blk.size()) > 0 || blk.size() == 0;
  if (!fits) {
    mesh.notes.push_back(prefix + std::string(kBlockSizesField) +
                         " does not match the cells; blocks follow the cell types");
    return;
  }
  Mesh out;
  std::int64_t base = 0;
  for (std::size_t b = 0; b < mesh.cells.size(); ++b) {
    const auto& blk = mesh.cells[b];
    std::int64_t begin = 0;
    for (auto cut = wanted.upper_bound(base); begin < blk.size(); ++cut) {
      const auto end = std::min(*cut - base, blk.size());
      out.cells.push_back(slice_cell_block(blk, begin, end));
      for (auto& [name, parts] : mesh.cell_data) {
        out.cell_data[name].push_back(
            slice_rows(parts[b], static_cast<std::size_t>(begin), static_cast<std::size_t>(end)));
      }
      begin = end;
    }
    base += blk.size();
  }
  mesh.cells = std::move(out.cells);
  mesh.cell_data = std::move(out.cell_data);
}

}  // namespace meshdock::mesh
