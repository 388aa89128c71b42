// TetGen writer: a mesh is a pair of files, x.node and x.ele, written from one target named either
// (as meshio 5.0's tetgen writer; read_tetgen and meshio read them back):
// - x.node: "<#points> 3 <#attributes> <#markers>", then "index x y z [attributes] [markers]" a
//   point, indices from 0 (meshio's base; TetGen takes the first index as the base). Attributes
//   are point_data "tetgen:attr1", "tetgen:attr2", ... and markers "tetgen:ref", "tetgen:ref2",
//   ... (read_tetgen's names), each while the next name is there and one value a point;
// - x.ele: "<#tets> <4|10> <#attributes>", then "index n1 .. n4|n10 [attributes]" a tet: every
//   block of the type of the first tetra or tetra10 block, one after another (an .ele file has
//   one node count), 10-node tets in TetGen -o2's order (tetgen_order.hpp, the reader's table
//   inverted); attributes are cell_data "tetgen:ref", "tetgen:ref2", ... as above.
// Values are the shortest text that reads back to each as float64 (meshio writes %.16e). Points of
// 1 or 2 coordinates are padded with 0 (noted). Every other block, array, field data and region is
// noted as not written; a mesh with no tetra or tetra10 block is a WriteError.
// The second file is the target's directory fd and the other name (base name + the other
// extension, one path component, so it is confined exactly as the first), with the same
// overwrite rule. Both temporaries are made (each checking its name) before either is written,
// so a FileExists for either name leaves both names untouched; then x.node is committed and
// x.ele. If the .ele commit fails (its name appeared meanwhile and overwrite is false, or I/O
// fails), the new x.node stays in place beside whatever x.ele there is, and the error names
// x.ele: a rename of two names is not atomic.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/tetgen_order.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// "tetgen:ref", "tetgen:ref2", ... (k from 0) as read_tetgen names them.
std::string ref_name(std::size_t k) {
  return "tetgen:ref" + (k == 0 ? std::string() : std::to_string(k + 1));
}

class TetgenWriter : wr::WriterState {
 public:
  TetgenWriter(const Mesh& m, const OutTarget& target) : WriterState(m, target, false) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    const std::string ext = format_of(target_.leaf);
    if (ext != "node" && ext != "ele")
      throw WriteError(path_ +
                       ": a TetGen mesh is written to a .node or .ele name (both x.node and "
                       "x.ele are written)");
    if (m_.points.dim(1) > 3)
      throw WriteError(path_ + ": points have " + std::to_string(m_.points.dim(1)) +
                       " coordinates; a TetGen point has 3");
    pick_blocks();
    pick_data();
    wr::note_point_dims(m_, "TetGen", notes_);
    const std::string sibling = tetgen_sibling(target_.leaf);
    const std::string& path = target_.path;
    const std::string shown = path.ends_with(target_.leaf)
                                  ? path.substr(0, path.size() - target_.leaf.size()) + sibling
                                  : sibling;
    OutTarget other{target_.dir_fd, sibling, shown, target_.overwrite};
    const OutTarget& node_target = ext == "node" ? target_ : other;
    const OutTarget& ele_target = ext == "node" ? other : target_;
    OutFile node(node_target);
    OutFile ele(ele_target);
    write_node(node);
    write_ele(ele);
    node.commit();
    ele.commit();
    return std::move(notes_);
  }

 private:
  void pick_blocks() {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& c = m_.cells[b];
      const bool tet = !c.ragged() && !c.face_offsets.valid() &&
                       ((c.type == "tetra" && c.connectivity.dim(1) == 4) ||
                        (c.type == "tetra10" && c.connectivity.dim(1) == 10));
      if (tet && (blocks_.empty() || c.type == m_.cells[blocks_[0]].type)) {
        blocks_.push_back(b);
        continue;
      }
      notes_.push_back(wr::block_name(m_, b) + " is not written: " +
                       (tet ? "a TetGen .ele file holds one node count, the " +
                                  m_.cells[blocks_[0]].type + " of " +
                                  wr::block_name(m_, blocks_[0])
                            : std::string("TetGen holds tetra and tetra10 cells only")));
    }
    if (blocks_.empty())
      throw WriteError(path_ +
                       ": the mesh has no tetra or tetra10 block, the only cells a TetGen mesh "
                       "holds; write it as VTU or MSH");
    per_ = m_.cells[blocks_[0]].connectivity.dim(1);
  }

  void pick_data() {
    std::vector<std::string> kept;
    // point_data name(k) for k = 0, 1, ... while it is there as one value a point.
    auto column = [&](auto name, std::vector<const Array*>& out) {
      for (std::size_t k = 0;; ++k) {
        const auto it = m_.point_data.find(name(k));
        if (it == m_.point_data.end() || it->second.ndim() != 1) return;
        out.push_back(&it->second);
        kept.push_back(it->first);
      }
    };
    column([](std::size_t k) { return "tetgen:attr" + std::to_string(k + 1); }, attrs_);
    column(ref_name, markers_);
    for (const auto& [name, a] : m_.point_data)
      if (std::find(kept.begin(), kept.end(), name) == kept.end())
        notes_.push_back(wr::not_written("point_data '" + name + "'", "TetGen",
                                         "point data but tetgen:attr1, 2, ... and tetgen:ref, "
                                         "ref2, ... (one value a point)"));
    kept.clear();
    for (std::size_t k = 0;; ++k) {
      const auto it = m_.cell_data.find(ref_name(k));
      if (it == m_.cell_data.end()) break;
      bool ok = true;
      for (const auto b : blocks_) ok = ok && it->second[b].ndim() == 1;
      if (!ok) break;
      cell_refs_.push_back(&it->second);
      kept.push_back(it->first);
    }
    for (const auto& [name, a] : m_.cell_data)
      if (std::find(kept.begin(), kept.end(), name) == kept.end())
        notes_.push_back(wr::not_written("cell_data '" + name + "'", "TetGen",
                                         "cell data but tetgen:ref, ref2, ... (one value a "
                                         "cell)"));
    wr::note_dropped(m_, "TetGen", notes_, wr::kFieldData | wr::kRegions);
  }

  void write_node(OutFile& out) {
    wr::Sink s(out);
    s.put("# written by meshdock\n");
    s.text(m_.num_points());
    s.put(" 3 ");
    s.text(attrs_.size());
    s.put(' ');
    s.text(markers_.size());
    s.put('\n');
    for (std::int64_t i = 0; i < m_.num_points(); ++i) {
      s.text(i);
      for (int k = 0; k < 3; ++k) {
        s.put(' ');
        s.text(wr::coord(m_, i, k));
      }
      for (const auto* a : attrs_) {
        s.put(' ');
        wr::text_f64(s, *a, static_cast<std::size_t>(i));
      }
      for (const auto* a : markers_) {
        s.put(' ');
        wr::text_f64(s, *a, static_cast<std::size_t>(i));
      }
      s.put('\n');
      s.maybe_flush();
    }
    s.flush();
  }

  void write_ele(OutFile& out) {
    wr::Sink s(out);
    std::int64_t n = 0;
    for (const auto b : blocks_) n += m_.cells[b].size();
    s.put("# written by meshdock\n");
    s.text(n);
    s.put(' ');
    s.text(per_);
    s.put(' ');
    s.text(cell_refs_.size());
    s.put('\n');
    std::int64_t id = 0;
    for (const auto b : blocks_) {
      const auto* c = m_.cells[b].connectivity.as<std::int64_t>();
      for (std::int64_t r = 0; r < m_.cells[b].size(); ++r, c += per_) {
        s.text(id++);
        for (std::int64_t k = 0; k < per_; ++k) {
          s.put(' ');
          s.text(c[per_ == 10 ? kFromTetgen10[k] : k]);
        }
        for (const auto* refs : cell_refs_) {
          s.put(' ');
          wr::text_f64(s, (*refs)[b], static_cast<std::size_t>(r));
        }
        s.put('\n');
        s.maybe_flush();
      }
    }
    s.flush();
  }

  std::vector<std::size_t> blocks_;  // the blocks written, all of one type
  std::int64_t per_ = 4;
  std::vector<const Array*> attrs_, markers_;
  std::vector<const std::vector<Array>*> cell_refs_;
};

}  // namespace

std::string tetgen_sibling(const std::string& leaf) {
  const std::string ext = format_of(leaf);
  if (ext != "node" && ext != "ele") return {};
  return leaf.substr(0, leaf.size() - ext.size()) + (ext == "node" ? "ele" : "node");
}

std::vector<std::string> write_tetgen(const Mesh& m, const OutTarget& target) {
  return TetgenWriter(m, target).write();
}

}  // namespace meshdock::mesh
