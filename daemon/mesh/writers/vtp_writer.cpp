// VTK XML PolyData writer. PolyData keeps its cells in four sections, and its cell ids (and so
// its cell data) in their order: Verts, Lines, Polys, Strips. So the blocks are written in that
// order (vertex blocks, then line blocks, then triangle / quad / polygon blocks, each kept
// whole and in its own order; no strips), and everything that counts cells follows them: cell
// data is stacked in that order, the cell numbers of regions are renumbered to it, and
// meshdock:block_sizes (when a reader's runs of one cell type would not give the blocks back)
// gives the blocks in that order. Reading the file back gives the same blocks, in that order,
// with their data and regions (noted when the order changes). Polys hold no cell types: a
// polygon of 3 or 4 points reads back as a triangle or quad (noted). Volume and higher-order
// cells are a WriteError naming the block. The file itself is vtk_xml.hpp's.
#include <algorithm>
#include <array>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/vtk_xml.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// PolyData's cell sections, in the order of its cell ids (Strips, the fourth, is never written).
enum Section : int { kVerts = 0, kLines = 1, kPolys = 2 };
constexpr std::array<const char*, 3> kSectionNames = {"Verts", "Lines", "Polys"};

// One run of cells of the same type, as a VTK reader makes blocks of them: a written block is
// one run, but a ragged polygon block is one run per stretch of cells of one size.
struct Run {
  std::string type;  // what the reader names them: triangle, quad, polygon of k points
  std::int64_t cells = 0;
};

class VtpWriter {
 public:
  VtpWriter(const Mesh& m, const OutTarget& target, VtuEncoding enc, int level)
      : m_(m), path_(target.path), file_(m, target, enc, level, "VTP") {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    classify();
    file_.add_field_data(regions_in_order(), block_sizes());
    file_.add_points();
    std::array<std::int64_t, 3> count{};
    for (int s = kVerts; s <= kPolys; ++s) count[s] = add_section(static_cast<Section>(s));
    file_.add_point_data();
    file_.add_cell_data(order_);
    return file_.write("PolyData", "NumberOfPoints=\"" + std::to_string(m_.num_points()) +
                                       "\" NumberOfVerts=\"" + std::to_string(count[kVerts]) +
                                       "\" NumberOfLines=\"" + std::to_string(count[kLines]) +
                                       "\" NumberOfStrips=\"0\" NumberOfPolys=\"" +
                                       std::to_string(count[kPolys]) + "\"");
  }

 private:
  // The section of every block (WriteError for the first that PolyData cannot hold), and the
  // order the blocks are written in: by section, in their own order within one.
  void classify() {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      if (blk.type == "vertex") {
        section_.push_back(kVerts);
      } else if (blk.type == "line") {
        section_.push_back(kLines);
      } else if (wr::is_face_block(blk) || blk.type == "pixel") {
        section_.push_back(kPolys);
        if (blk.type == "pixel")
          file_.notes.push_back(
              wr::block_name(m_, b) +
              " written as quads (its points 0, 1, 3, 2): PolyData has no pixels");
        else if (blk.type == "polygon")
          note_polygon_types(b);
      } else {
        file_.fail(wr::block_name(m_, b) +
                   " cannot be written to VTP, which holds vertices, lines and polygons only "
                   "(PolyData has no volume or higher-order cells); write it as VTU");
      }
    }
    order_ = wr::block_order(m_);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return section_[a] < section_[b]; });
    if (!std::is_sorted(section_.begin(), section_.end())) {
      std::string list;
      for (std::size_t k = 0; k < order_.size() && k < 16; ++k)
        list += (k ? ", " : "") + std::to_string(order_[k]);
      if (order_.size() > 16) list += ", ...";
      file_.notes.push_back(
          "blocks written in PolyData's order (vertices, lines, polygons): "
          "they read back as cells[" +
          list + "] of this mesh, cell data and regions with them");
    }
  }

  // A polygon block reads back as the reader's runs: triangles and quads named as such.
  void note_polygon_types(std::size_t b) {
    const auto runs = runs_of(b);
    if (runs.empty() || (runs.size() == 1 && runs[0].type == "polygon")) return;
    std::string types;
    for (const auto& r : runs)
      if (types.find(r.type) == std::string::npos) types += (types.empty() ? "" : ", ") + r.type;
    file_.notes.push_back(wr::block_name(m_, b) + " reads back as " + std::to_string(runs.size()) +
                          (runs.size() == 1 ? " block" : " blocks") + " (" + types +
                          "): VTP's Polys hold no cell types, a reader names polygons by size");
  }

  std::vector<Run> runs_of(std::size_t b) const {
    const auto& blk = m_.cells[b];
    std::vector<Run> runs;
    if (blk.type != "polygon") {
      runs.push_back({blk.type == "pixel" ? "quad" : blk.type, blk.size()});
      return runs;
    }
    std::size_t last = 0;
    wr::each_cell(blk, [&](const std::int64_t*, std::size_t n) {
      if (runs.empty() || n != last) {
        runs.push_back({n == 3 ? "triangle" : n == 4 ? "quad" : "polygon", 0});
        last = n;
      }
      ++runs.back().cells;
    });
    return runs;
  }

  // The cells of every run, in file order, when a reader's runs of one type would merge two of
  // them (VTU's rule, with runs for blocks); empty when the runs alone give the blocks back.
  std::vector<std::int64_t> block_sizes() const {
    std::vector<Run> all;
    for (const auto b : order_)
      for (auto& r : runs_of(b))
        if (r.cells) all.push_back(std::move(r));
    bool merges = false;
    for (std::size_t k = 1; k < all.size(); ++k) merges |= all[k].type == all[k - 1].type;
    std::vector<std::int64_t> sizes;
    if (merges)
      for (const auto& r : all) sizes.push_back(r.cells);
    return sizes;
  }

  // The regions with their cell numbers (cell and side regions) renumbered to the file's order.
  std::vector<Region> regions_in_order() const {
    if (std::is_sorted(order_.begin(), order_.end())) return m_.regions;
    const std::size_t nb = m_.cells.size();
    std::vector<std::int64_t> old_base(nb), new_base(nb);
    std::int64_t at = 0;
    for (std::size_t b = 0; b < nb; ++b) {
      old_base[b] = at;
      at += m_.cells[b].size();
    }
    at = 0;
    for (const auto b : order_) {
      new_base[b] = at;
      at += m_.cells[b].size();
    }
    auto renumber = [&](std::int64_t c) {
      const auto b = static_cast<std::size_t>(
          std::upper_bound(old_base.begin(), old_base.end(), c) - old_base.begin() - 1);
      return new_base[b] + (c - old_base[b]);
    };
    std::vector<Region> out = m_.regions;
    for (auto& r : out) {
      if (r.kind == RegionKind::kPoint) continue;
      const auto* src = r.entries.as<std::int64_t>();
      std::vector<std::int64_t> e(src, src + r.entries.size());
      const std::size_t stride = r.kind == RegionKind::kSide ? 2 : 1;  // (cell, facet) pairs
      for (std::size_t i = 0; i < e.size(); i += stride) e[i] = renumber(e[i]);
      r.entries = Array::from_vector(e, r.entries.shape());
    }
    return out;
  }

  // One cell section (connectivity and end offsets of its blocks in order); its cell count.
  std::int64_t add_section(Section s) {
    std::vector<std::int64_t> conn, ends;
    for (const auto b : order_) {
      if (section_[b] != s) continue;
      const auto& blk = m_.cells[b];
      const bool pixel = blk.type == "pixel";
      if (!pixel && !blk.ragged()) {  // rows as they are: one copy, offsets by arithmetic
        const auto* c = blk.connectivity.as<std::int64_t>();
        const auto base = static_cast<std::int64_t>(conn.size());
        const auto npc = blk.connectivity.dim(1);
        conn.insert(conn.end(), c, c + blk.connectivity.size());
        for (std::int64_t i = 1; i <= blk.size(); ++i) ends.push_back(base + i * npc);
        continue;
      }
      wr::each_cell(blk, [&](const std::int64_t* c, std::size_t n) {
        if (pixel)
          conn.insert(conn.end(), {c[0], c[1], c[3], c[2]});
        else
          conn.insert(conn.end(), c, c + n);
        ends.push_back(static_cast<std::int64_t>(conn.size()));
      });
    }
    const auto cells = static_cast<std::int64_t>(ends.size());
    if (cells == 0) return 0;
    const std::string name = kSectionNames[static_cast<std::size_t>(s)];
    auto& arrays = file_.section(name);
    arrays.push_back(file_.array("connectivity", Array::from_vector(conn), name + " connectivity"));
    arrays.push_back(file_.array("offsets", Array::from_vector(ends), name + " offsets"));
    return cells;
  }

  const Mesh& m_;
  const std::string& path_;
  wr::VtkXmlFile file_;
  std::vector<Section> section_;    // of each block
  std::vector<std::size_t> order_;  // the blocks in file order
};

}  // namespace

std::vector<std::string> write_vtp(const Mesh& m, const OutTarget& target, VtuEncoding encoding,
                                   int zlib_level) {
  return VtpWriter(m, target, encoding, zlib_level).write();
}

}  // namespace meshdock::mesh
