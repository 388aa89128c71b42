// Gmsh MSH 2.2 writer, ascii or binary (native little-endian, int32 ids). Every element has two
// tags: physical and elementary. The physical tag is the cell's gmsh:physical value when not 0,
// else the tag of the Cell region holding it (vertex cells: of the Point region holding their
// point); 2.2 has one physical tag per element, so a cell two groups claim keeps the first
// (noted: MSH 4.1 keeps both). Points of a Point region no vertex cell covers get vertex
// elements (noted), as gmsh keeps point groups. The elementary tag is gmsh:geometrical when
// present, else the physical tag, else 1. $PhysicalNames from regions and meshio's field_data
// [tag, dim]; point_data / cell_data other than gmsh's own as $NodeData / $ElementData
// (float64). An integer gmsh:partition (what the readers give partitioned files) goes into
// the tags instead, as gmsh -part writes 2.2: "physical elementary 1 partition" for a cell with
// a partition, two tags for one with 0. Blocks stay whole: 2.2 has no entities to split them
// by; consecutive blocks of one type read back as one (noted).
#include <algorithm>
#include <climits>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/gmsh_common.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Run {
  GmshType type{};
  const std::int64_t* conn = nullptr;
  std::int64_t count = 0;
  std::vector<std::int64_t> owned, phys;  // phys: one per element
  const Array* geom = nullptr;            // gmsh:geometrical part, when present
  const Array* part = nullptr;            // an integer gmsh:partition part, when present
};

class Msh22Writer {
 public:
  Msh22Writer(const Mesh& m, const OutTarget& target, bool binary)
      : m_(m), target_(target), path_(target.path), binary_(binary) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    if (m_.num_points() >= INT32_MAX || m_.num_cells() >= INT32_MAX / 2)
      fail("too many points or cells for MSH 2.2's int ids; write MSH 4.1");
    plan();
    const auto names = wr::physical_names(m_, path_, notes_);
    OutFile out(target_);
    wr::Sink s(out);
    s.put(binary_ ? "$MeshFormat\n2.2 1 8\n" : "$MeshFormat\n2.2 0 8\n");
    if (binary_) {
      s.le(std::int32_t{1});
      s.put('\n');
    }
    s.put("$EndMeshFormat\n");
    wr::emit_physical_names(s, names);
    nodes(s);
    elements(s);
    s.put(wr::periodic_section(m_, false, binary_, notes_));
    data(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw WriteError(path_ + ": " + what); }

  const Array* cell_part(const char* name, std::size_t b) const {
    auto it = m_.cell_data.find(name);
    return it == m_.cell_data.end() ? nullptr : &it->second[b];
  }

  void plan() {
    wr::note_point_dims(m_, "MSH 2.2", notes_);
    if (const auto it = m_.cell_data.find("gmsh:partition");
        it != m_.cell_data.end() && !it->second.empty() && it->second[0].dtype().code != 2) {
      partition_tags_ = true;
      notes_.push_back(
          "gmsh:partition is written as each element's partition tags (\"physical elementary 1 "
          "partition\", as gmsh -part writes MSH 2.2; 0: none), not as $ElementData");
    }
    std::vector<std::int64_t> base;  // first global cell number of each block
    std::int64_t total = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      Run r;
      r.type = wr::gmsh_type_of_block(m_, b, path_);
      r.conn = blk.connectivity.as<std::int64_t>();
      r.count = blk.size();
      r.phys.assign(static_cast<std::size_t>(r.count), 0);
      if (const auto* p = cell_part("gmsh:physical", b))
        for (std::int64_t i = 0; i < r.count; ++i)
          r.phys[static_cast<std::size_t>(i)] = int_at_any(*p, static_cast<std::size_t>(i));
      r.geom = cell_part("gmsh:geometrical", b);
      if (partition_tags_) r.part = cell_part("gmsh:partition", b);
      if (b > 0 && runs_.back().type.number == r.type.number) {
        // Readers (meshdock's, meshio's) split 2.2 elements at each change of type only.
        notes_.push_back("cells[" + std::to_string(b - 1) + "] and cells[" + std::to_string(b) +
                         "] (" + blk.type +
                         ") read back as one block: MSH 2.2 has no entities "
                         "to keep blocks of one type apart (MSH 4.1 keeps them)");
      }
      runs_.push_back(std::move(r));
      base.push_back(total);
      total += blk.size();
    }
    std::int64_t conflicts = 0;
    auto claim = [&](Run& r, std::int64_t i, std::int64_t tag) {
      auto& p = r.phys[static_cast<std::size_t>(i)];
      if (p == 0)
        p = tag;
      else if (p != tag)
        ++conflicts;
    };
    std::vector<std::vector<std::int64_t>> point_tags;  // only when there are point regions
    for (const auto& reg : m_.regions) {
      if (reg.kind == RegionKind::kSide) {
        notes_.push_back("side region '" + reg.name +
                         "' is not written: MSH has no (cell, facet) sets");
        continue;
      }
      const auto* e = reg.entries.as<std::int64_t>();
      if (reg.kind == RegionKind::kPoint) {
        point_tags.resize(static_cast<std::size_t>(m_.num_points()));
        for (std::size_t k = 0; k < reg.entries.size(); ++k)
          point_tags[static_cast<std::size_t>(e[k])].push_back(reg.tag);
        continue;
      }
      bool warned = false;
      for (std::size_t k = 0; k < reg.entries.size(); ++k) {
        const auto b = static_cast<std::size_t>(std::upper_bound(base.begin(), base.end(), e[k]) -
                                                base.begin() - 1);
        if (!warned && runs_[b].type.dim != reg.dim) {
          warned = true;
          notes_.push_back("region '" + reg.name + "' (dim " + std::to_string(reg.dim) +
                           ") holds cells of dimension " + std::to_string(runs_[b].type.dim) +
                           "; gmsh reads a physical group only on elements of its own dimension");
        }
        claim(runs_[b], e[k] - base[b], reg.tag);
      }
    }
    if (!point_tags.empty()) {
      std::vector<bool> covered(point_tags.size());
      for (auto& r : runs_) {
        if (r.type.dim != 0) continue;
        for (std::int64_t i = 0; i < r.count; ++i) {
          const auto p = static_cast<std::size_t>(r.conn[i]);
          covered[p] = true;
          for (auto t : point_tags[p]) claim(r, i, t);
        }
      }
      Run added;
      added.type = *gmsh_type_by_name("vertex");
      for (std::size_t p = 0; p < point_tags.size(); ++p) {
        if (covered[p]) continue;
        for (auto t : point_tags[p]) {  // one vertex element per group, as gmsh writes them
          added.owned.push_back(static_cast<std::int64_t>(p));
          added.phys.push_back(t);
        }
      }
      if (!added.owned.empty()) {
        notes_.push_back("added " + std::to_string(added.owned.size()) +
                         " vertex elements to carry point regions (gmsh keeps point groups on "
                         "vertices)");
        added.conn = added.owned.data();
        added.count = static_cast<std::int64_t>(added.owned.size());
        runs_.push_back(std::move(added));
      }
    }
    if (conflicts)
      notes_.push_back(std::to_string(conflicts) +
                       " cells belong to more than one physical group; MSH 2.2 keeps one tag per "
                       "element (the first), MSH 4.1 keeps them all");
  }

  static std::int64_t int_at_any(const Array& a, std::size_t i) {
    return a.dtype().code == 2 ? static_cast<std::int64_t>(value_at(a, i)) : int_at(a, i);
  }

  void nodes(wr::Sink& s) {
    const auto np = m_.num_points();
    s.put("$Nodes\n" + std::to_string(np) + "\n");
    for (std::int64_t i = 0; i < np; ++i) {
      if (binary_) {
        s.le(static_cast<std::int32_t>(i + 1));
        for (int k = 0; k < 3; ++k) s.le(wr::coord(m_, i, k));
      } else {
        s.text(i + 1);
        for (int k = 0; k < 3; ++k) {
          s.put(' ');
          s.text(wr::coord(m_, i, k));
        }
        s.put('\n');
      }
      s.maybe_flush();
    }
    if (binary_) s.put('\n');
    s.put("$EndNodes\n");
  }

  void elements(wr::Sink& s) {
    std::int64_t total = 0;
    for (const auto& r : runs_) total += r.count;
    s.put("$Elements\n" + std::to_string(total) + "\n");
    std::int32_t id = 1;
    std::vector<std::int64_t> row;
    for (const auto& r : runs_) {
      const auto npc = static_cast<std::size_t>(r.type.nodes);
      const auto perm = gmsh_to_meshio_order(r.type.name);  // meshio[j] = gmsh[perm[j]]
      row.resize(npc);
      const auto partition = [&](std::int64_t i) -> std::int64_t {
        return r.part ? int_at(*r.part, static_cast<std::size_t>(i)) : 0;
      };
      for (std::int64_t i = 0; i < r.count; ++i) {
        const auto part = partition(i);
        if (binary_ && (i == 0 || (part > 0) != (partition(i - 1) > 0))) {
          // One header per run of one type and tag count, as gmsh writes them.
          std::int64_t n = 1;
          while (i + n < r.count && (partition(i + n) > 0) == (part > 0)) ++n;
          s.le(static_cast<std::int32_t>(r.type.number));
          s.le(static_cast<std::int32_t>(n));
          s.le(std::int32_t{part > 0 ? 4 : 2});
        }
        const auto* c = r.conn + static_cast<std::size_t>(i) * npc;
        for (std::size_t j = 0; j < npc; ++j)
          row[perm.empty() ? j : static_cast<std::size_t>(perm[j])] = c[j];
        const auto phys = r.phys[static_cast<std::size_t>(i)];
        auto geom = r.geom ? int_at_any(*r.geom, static_cast<std::size_t>(i)) : 0;
        if (geom <= 0) geom = phys > 0 ? phys : 1;
        if (binary_) {
          s.le(id++);
          s.le(static_cast<std::int32_t>(phys));
          s.le(static_cast<std::int32_t>(geom));
          if (part > 0) {
            s.le(std::int32_t{1});
            s.le(static_cast<std::int32_t>(part));
          }
          for (auto v : row) s.le(static_cast<std::int32_t>(v + 1));
        } else {
          s.text(id++);
          s.put(' ');
          s.text(r.type.number);
          s.put(part > 0 ? " 4 " : " 2 ");
          s.text(phys);
          s.put(' ');
          s.text(geom);
          if (part > 0) {
            s.put(" 1 ");
            s.text(part);
          }
          for (auto v : row) {
            s.put(' ');
            s.text(v + 1);
          }
          s.put('\n');
        }
        s.maybe_flush();
      }
    }
    if (binary_) s.put('\n');
    s.put("$EndElements\n");
  }

  void data(wr::Sink& s) {
    for (const auto& [name, a] : m_.point_data) {
      if (name == "gmsh:dim_tags") {
        notes_.push_back("point_data 'gmsh:dim_tags' is not written: MSH 2.2 has no node entities");
        continue;
      }
      wr::emit_msh_data(s, binary_, false, name, {&a}, path_, notes_);
    }
    for (const auto& [name, parts] : m_.cell_data) {
      if (name == "gmsh:physical" || name == "gmsh:geometrical" ||
          (name == "gmsh:partition" && partition_tags_))
        continue;
      std::vector<const Array*> ps;
      for (const auto& p : parts) ps.push_back(&p);
      wr::emit_msh_data(s, binary_, true, name, ps, path_, notes_);
    }
  }

  const Mesh& m_;
  const OutTarget& target_;
  const std::string& path_;
  bool binary_;
  std::vector<Run> runs_;
  std::vector<std::string> notes_;
  bool partition_tags_ = false;  // an integer gmsh:partition: written in the element tags
};

}  // namespace

std::vector<std::string> write_msh22(const Mesh& m, const OutTarget& target, bool binary) {
  return Msh22Writer(m, target, binary).write();
}

}  // namespace meshdock::mesh
