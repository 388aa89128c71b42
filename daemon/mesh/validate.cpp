#include "daemon/mesh/validate.hpp"

#include <algorithm>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

namespace {

struct Checker {
  const std::string& context;
  bool full;
  [[noreturn]] void fail(const std::string& what) const { throw MeshError(context + ": " + what); }

  void int64(const Array& a, const std::string& what) const {
    if (!a.valid()) fail(what + " is missing");
    if (a.dtype() != kInt64)
      fail(what + " has dtype (code " + std::to_string(a.dtype().code) + ", " +
           std::to_string(a.dtype().bits) + " bits); int64 is required");
  }

  // CSR offsets: 1-D int64, starts at 0, never decreases, ends at `end`.
  void offsets(const Array& a, std::int64_t end, const std::string& what) const {
    int64(a, what);
    if (a.ndim() != 1 || a.dim(0) < 1) fail(what + " must be 1-D with at least one entry");
    if (!full) return;
    const auto* o = a.as<std::int64_t>();
    if (o[0] != 0) fail(what + "[0] is " + std::to_string(o[0]) + ", not 0");
    for (std::int64_t i = 1; i < a.dim(0); ++i) {
      if (o[i] < o[i - 1])
        fail(what + " decreases at " + std::to_string(i) + " (" + std::to_string(o[i - 1]) +
             " -> " + std::to_string(o[i]) + ")");
    }
    if (o[a.dim(0) - 1] != end)
      fail(what + " ends at " + std::to_string(o[a.dim(0) - 1]) + " but " + std::to_string(end) +
           " entries follow");
  }

  void ids_in_range(const Array& a, std::int64_t n, const std::string& what,
                    std::int64_t stride = 1) const {
    if (!full) return;
    const auto* v = a.as<std::int64_t>();
    const auto step = static_cast<std::size_t>(stride);
    const auto bad = [&](std::size_t i) { return v[i] < 0 || v[i] >= n; };
    // In pieces whose test has no early exit (branch-free, a fifth of a binary write's time
    // before: every write runs this check), the entry found again only in a bad piece.
    constexpr std::size_t kPiece = 4096;
    for (std::size_t at = 0; at < a.size(); at += kPiece * step) {
      const auto end = std::min(a.size(), at + kPiece * step);
      bool any = false;
      if (step == 1)
        for (std::size_t i = at; i < end; ++i) any |= bad(i);
      else
        for (std::size_t i = at; i < end; i += step) any |= bad(i);
      if (!any) continue;
      for (std::size_t i = at; i < end; i += step)
        if (bad(i))
          fail(what + " entry " + std::to_string(i) + " is " + std::to_string(v[i]) +
               ", outside [0, " + std::to_string(n) + ")");
    }
  }
};

}  // namespace

void validate_mesh(const Mesh& m, const std::string& context, Checks checks) {
  const Checker c{context, checks == Checks::kFull};
  if (!m.points.valid()) c.fail("the mesh has no points array");
  if (m.points.dtype().code != 2 || m.points.ndim() != 2 || m.points.dim(1) < 1 ||
      m.points.dim(1) > 3)
    c.fail("points must be an (n, 1..3) float array");
  const auto np = m.num_points();
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    const auto& blk = m.cells[b];
    const auto what = "cells[" + std::to_string(b) + "] (" + blk.type + ")";
    c.int64(blk.connectivity, what + " connectivity");
    if (blk.ragged()) {
      if (blk.connectivity.ndim() != 1) c.fail(what + ": ragged connectivity must be 1-D");
      const auto total = static_cast<std::int64_t>(blk.connectivity.size());
      if (blk.face_offsets.valid()) {
        c.offsets(blk.face_offsets, total, what + " face_offsets");
        c.offsets(blk.offsets, blk.face_offsets.dim(0) - 1, what + " offsets");
      } else {
        c.offsets(blk.offsets, total, what + " offsets");
      }
    } else if (blk.connectivity.ndim() != 2 || blk.connectivity.dim(1) < 1) {
      c.fail(what + " connectivity must be (n, nodes_per_cell)");
    }
    c.ids_in_range(blk.connectivity, np, what + " connectivity");
  }
  for (const auto& [name, a] : m.point_data) {
    if (!a.valid() || a.ndim() < 1 || a.dim(0) != np)
      c.fail("point_data '" + name + "' has " + std::to_string(a.valid() ? a.dim(0) : 0) +
             " rows for " + std::to_string(np) + " points");
  }
  for (const auto& [name, arrays] : m.cell_data) {
    if (arrays.size() != m.cells.size())
      c.fail("cell_data '" + name + "' has " + std::to_string(arrays.size()) + " arrays for " +
             std::to_string(m.cells.size()) + " blocks");
    for (std::size_t b = 0; b < arrays.size(); ++b) {
      if (!arrays[b].valid() || arrays[b].ndim() < 1 || arrays[b].dim(0) != m.cells[b].size())
        c.fail("cell_data '" + name + "'[" + std::to_string(b) + "] has " +
               std::to_string(arrays[b].valid() ? arrays[b].dim(0) : 0) + " rows for " +
               std::to_string(m.cells[b].size()) + " cells");
    }
  }
  const auto nc = m.num_cells();
  for (const auto& r : m.regions) {
    const auto what = "region '" + r.name + "'";
    c.int64(r.entries, what + " entries");
    switch (r.kind) {
      case RegionKind::kPoint:
        c.ids_in_range(r.entries, np, what);
        break;
      case RegionKind::kCell:
        c.ids_in_range(r.entries, nc, what);
        break;
      case RegionKind::kSide:
        if (r.entries.ndim() != 2 || r.entries.dim(1) != 2)
          c.fail(what + ": side entries must be (n, 2) cell, facet pairs");
        c.ids_in_range(r.entries, nc, what + " cell", 2);
        break;
    }
  }
}

}  // namespace meshdock::mesh
