// Gmsh MSH 4.1 writer, ascii or binary (native little-endian).
//
// Gmsh attaches physical groups to entities, not elements, so each block is cut into runs of
// cells that share one set of physical tags (regions containing the cell, led by its
// gmsh:physical value when that is not a region's), and each run becomes an entity (its tag from
// gmsh:geometrical when constant over the run) and an element block. Files gmsh or meshdock
// wrote come back with the same blocks; any other cut is noted. Point regions ride on vertex
// elements: existing vertex cells carry them, points no vertex cell covers get new ones (noted).
// Node blocks follow gmsh:dim_tags when present. point_data / cell_data other than gmsh's own
// become $NodeData / $ElementData in float64 (other dtypes noted). $PhysicalNames: regions and
// field_data entries [tag, dim] (meshio's form of a physical name; gmsh_common.hpp).
#include <algorithm>
#include <map>
#include <set>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/gmsh_common.hpp"
#include "daemon/mesh/writers/out_file.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

using Tags = std::vector<int>;

struct Entity {
  int dim = 0, tag = 0;
  Tags physicals;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  bool has_box = false;
};

struct ElementRun {
  std::size_t entity;  // index into entities
  GmshType type{};
  const std::int64_t* conn = nullptr;  // meshio order, rows of type.nodes
  std::vector<std::int64_t> owned;     // for added vertex elements
  std::int64_t count = 0;
};

class MshWriter {
 public:
  MshWriter(const Mesh& m, const OutTarget& target, bool binary)
      : m_(m), target_(target), path_(target.path), binary_(binary) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    check_types();
    plan_entities();
    plan_nodes();
    OutFile out(target_);
    emit(out);
    out.commit();
    return std::move(notes_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw WriteError(path_ + ": " + what); }

  void check_types() {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      types_.push_back(wr::gmsh_type_of_block(m_, b, path_));
    }
    wr::note_point_dims(m_, "MSH", notes_);
  }

  const Array* cell_data_part(const char* name, std::size_t block) const {
    auto it = m_.cell_data.find(name);
    return it == m_.cell_data.end() ? nullptr : &it->second[block];
  }

  // ---- entities and element runs ------------------------------------------------------------
  void plan_entities() {
    // (cell, region) memberships, sorted by cell; vertex cells join point regions via their point.
    std::vector<std::pair<std::int64_t, int>> member;
    std::vector<std::vector<int>> point_regions_of;  // filled lazily for point regions
    bool any_point_region = false;
    for (std::size_t r = 0; r < m_.regions.size(); ++r) {
      const auto& reg = m_.regions[r];
      if (reg.kind == RegionKind::kSide) {
        notes_.push_back("side region '" + reg.name +
                         "' is not written: MSH has no (cell, facet) sets");
        continue;
      }
      if (reg.kind == RegionKind::kPoint) {
        any_point_region = true;
        continue;
      }
      const auto* e = reg.entries.as<std::int64_t>();
      for (std::size_t i = 0; i < reg.entries.size(); ++i) member.emplace_back(e[i], int(r));
    }
    if (any_point_region) {
      point_regions_of.resize(static_cast<std::size_t>(m_.num_points()));
      for (std::size_t r = 0; r < m_.regions.size(); ++r) {
        const auto& reg = m_.regions[r];
        if (reg.kind != RegionKind::kPoint) continue;
        const auto* e = reg.entries.as<std::int64_t>();
        for (std::size_t i = 0; i < reg.entries.size(); ++i)
          point_regions_of[static_cast<std::size_t>(e[i])].push_back(int(r));
      }
    }
    std::sort(member.begin(), member.end());
    member.erase(std::unique(member.begin(), member.end()), member.end());

    std::size_t mi = 0;
    std::int64_t global = 0;
    std::vector<bool> covered(any_point_region ? static_cast<std::size_t>(m_.num_points()) : 0);
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      const auto& type = types_[b];
      const auto* conn = blk.connectivity.as<std::int64_t>();
      const auto* phys = cell_data_part("gmsh:physical", b);
      const auto* geom = cell_data_part("gmsh:geometrical", b);
      const auto n = blk.size();
      Tags prev_tags;
      int prev_geom = -1;
      for (std::int64_t i = 0; i < n; ++i, ++global) {
        Tags tags;
        if (phys) {
          const auto v = static_cast<int>(value_at(*phys, static_cast<std::size_t>(i)));
          if (v != 0) tags.push_back(v);
        }
        auto add_region = [&](int r) {
          const auto& reg = m_.regions[static_cast<std::size_t>(r)];
          if (reg.dim != type.dim) region_dim_mismatch(reg, type.dim);
          const int t = static_cast<int>(reg.tag);
          if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
        };
        while (mi < member.size() && member[mi].first < global) ++mi;
        for (; mi < member.size() && member[mi].first == global; ++mi)
          add_region(member[mi].second);
        if (type.dim == 0 && any_point_region) {
          const auto p = static_cast<std::size_t>(conn[i]);
          covered[p] = true;
          for (int r : point_regions_of[p]) add_region(r);
        }
        const int g = geom ? static_cast<int>(value_at(*geom, static_cast<std::size_t>(i))) : -1;
        if (i == 0 || tags != prev_tags || g != prev_geom) {
          if (i > 0) {
            notes_.push_back("cells[" + std::to_string(b) + "] (" + blk.type + ") split at cell " +
                             std::to_string(i) + ": its physical groups or entity change there");
          }
          ElementRun run;
          run.entity = entity_for(type.dim, g, tags);
          run.type = type;
          run.conn = conn + i * type.nodes;
          runs_.push_back(std::move(run));
          prev_tags = tags;
          prev_geom = g;
        }
        ++runs_.back().count;
      }
    }
    if (any_point_region) add_vertex_elements(point_regions_of, covered);
  }

  void region_dim_mismatch(const Region& reg, int dim) {
    const auto key = reg.name + "/" + std::to_string(dim);
    if (!warned_dims_.insert(key).second) return;
    notes_.push_back("region '" + reg.name + "' (dim " + std::to_string(reg.dim) +
                     ") holds cells of dimension " + std::to_string(dim) +
                     "; gmsh reads a physical group only on entities of its own dimension");
  }

  // The entity (dim, geometrical tag) with physical tags `tags`; a new tag when the file's
  // own tag is taken by an entity with other physical groups (or there is none).
  std::size_t entity_for(int dim, int geom, const Tags& tags) {
    if (geom > 0) {
      auto it = entity_index_.find({dim, geom});
      if (it == entity_index_.end()) return add_entity(dim, geom, tags);
      if (entities_[it->second].physicals == tags) return it->second;
    }
    for (std::size_t e = 0; e < entities_.size(); ++e) {
      if (entities_[e].dim == dim && entities_[e].physicals == tags && geom <= 0) return e;
    }
    return add_entity(dim, next_tag(dim), tags);
  }

  int next_tag(int dim) const {
    int t = 0;
    for (const auto& [key, idx] : entity_index_)
      if (key.first == dim) t = std::max(t, key.second);
    return t + 1;
  }

  std::size_t add_entity(int dim, int tag, const Tags& tags) {
    Entity e;
    e.dim = dim;
    e.tag = tag;
    e.physicals = tags;
    entities_.push_back(e);
    entity_index_[{dim, tag}] = entities_.size() - 1;
    return entities_.size() - 1;
  }

  void add_vertex_elements(const std::vector<std::vector<int>>& regions_of,
                           const std::vector<bool>& covered) {
    std::map<Tags, std::vector<std::int64_t>> by_tags;
    for (std::size_t p = 0; p < regions_of.size(); ++p) {
      if (covered[p] || regions_of[p].empty()) continue;
      Tags tags;
      for (int r : regions_of[p])
        tags.push_back(static_cast<int>(m_.regions[static_cast<std::size_t>(r)].tag));
      by_tags[tags].push_back(static_cast<std::int64_t>(p));
    }
    for (auto& [tags, points] : by_tags) {
      notes_.push_back("added " + std::to_string(points.size()) +
                       " vertex elements to carry point region tags " + join(tags) +
                       " (gmsh keeps point groups on vertices)");
      ElementRun run;
      run.entity = add_entity(0, next_tag(0), tags);
      run.type = *gmsh_type_by_name("vertex");
      run.owned = std::move(points);
      run.conn = run.owned.data();
      run.count = static_cast<std::int64_t>(run.owned.size());
      runs_.push_back(std::move(run));
    }
  }

  static std::string join(const Tags& t) {
    std::string s;
    for (auto v : t) {
      if (!s.empty()) s += ',';
      s += std::to_string(v);
    }
    return s;
  }

  // ---- nodes ----------------------------------------------------------------------------------
  struct NodeBlock {
    int dim, tag;
    std::int64_t begin, end;
  };

  void plan_nodes() {
    const auto np = m_.num_points();
    auto it = m_.point_data.find("gmsh:dim_tags");
    if (it != m_.point_data.end() && it->second.ndim() == 2 && it->second.dim(1) == 2) {
      const auto& dt = it->second;
      for (std::int64_t i = 0; i < np; ++i) {
        const int dim = static_cast<int>(value_at(dt, static_cast<std::size_t>(2 * i)));
        const int tag = static_cast<int>(value_at(dt, static_cast<std::size_t>(2 * i + 1)));
        if (node_blocks_.empty() || node_blocks_.back().dim != dim ||
            node_blocks_.back().tag != tag)
          node_blocks_.push_back({dim, tag, i, i});
        node_blocks_.back().end = i + 1;
      }
    } else if (np > 0) {
      // One block, on the first entity of the highest dimension (or a new point entity).
      const Entity* top = nullptr;
      for (const auto& e : entities_)
        if (!top || e.dim > top->dim) top = &e;
      node_blocks_.push_back({top ? top->dim : 0, top ? top->tag : 1, 0, np});
    }
    for (const auto& nb : node_blocks_) {
      if (nb.dim < 0 || nb.dim > 3) fail("gmsh:dim_tags has dimension " + std::to_string(nb.dim));
      if (!entity_index_.count({nb.dim, nb.tag})) add_entity(nb.dim, nb.tag, {});
      auto& e = entities_[entity_index_[{nb.dim, nb.tag}]];
      for (auto i = nb.begin; i < nb.end; ++i) grow(e, i);
    }
    // A run's nodes grow its entity's box once each, not at every mention (a tet mesh names a
    // node ~20 times: boxing each mention was 40% of a binary write): seen[p] holds the last
    // entity (+ 1) that took node p. Runs of one entity apart may grow a node twice: harmless.
    std::vector<std::uint32_t> seen(static_cast<std::size_t>(np), 0);
    for (const auto& run : runs_) {
      auto& e = entities_[run.entity];
      const auto mark = static_cast<std::uint32_t>(run.entity + 1);
      for (std::int64_t k = 0; k < run.count * run.type.nodes; ++k) {
        auto& s = seen[static_cast<std::size_t>(run.conn[k])];
        if (s == mark) continue;
        s = mark;
        grow(e, run.conn[k]);
      }
    }
  }

  double coord(std::int64_t p, int k) const {
    const auto d = m_.points.dim(1);
    if (k >= d) return 0.0;
    return value_at(m_.points, static_cast<std::size_t>(p * d + k));
  }

  void grow(Entity& e, std::int64_t p) const {
    for (int k = 0; k < 3; ++k) {
      const double v = coord(p, k);
      if (!e.has_box || v < e.lo[k]) e.lo[k] = v;
      if (!e.has_box || v > e.hi[k]) e.hi[k] = v;
    }
    e.has_box = true;
  }

  // ---- output --------------------------------------------------------------------------------
  // Numbers: binary as the given C type, ascii as text followed by `sep`.
  template <typename T>
  void num(std::string& s, T v, char sep = ' ') const {
    if (binary_) {
      s.append(reinterpret_cast<const char*>(&v), sizeof v);
    } else {
      append_number(s, v);
      s += sep;
    }
  }
  void end_line(std::string& s) const {
    if (!binary_) {
      if (!s.empty() && s.back() == ' ') s.back() = '\n';
    }
  }
  // Binary only: n rows of `width` uint64, row i filled by fill(row, i), appended in pieces of
  // about 64 KiB rather than a value at a time.
  template <typename Fill>
  void rows(OutFile& out, std::string& s, std::int64_t n, std::size_t width, Fill&& fill) {
    const std::size_t per = std::max<std::size_t>(1, (64 << 10) / (8 * width));
    std::vector<std::uint64_t> buf;
    for (std::int64_t at = 0; at < n; at += static_cast<std::int64_t>(per)) {
      const auto k = std::min<std::int64_t>(static_cast<std::int64_t>(per), n - at);
      buf.resize(static_cast<std::size_t>(k) * width);
      for (std::int64_t i = 0; i < k; ++i)
        fill(buf.data() + static_cast<std::size_t>(i) * width, at + i);
      s.append(reinterpret_cast<const char*>(buf.data()), buf.size() * sizeof(std::uint64_t));
      flush(out, s);
    }
  }
  void flush(OutFile& out, std::string& s, bool force = false) const {
    if (force || s.size() > (1 << 20)) {
      out.put(s);
      s.clear();
    }
  }

  void emit(OutFile& out) {
    std::string s = binary_ ? "$MeshFormat\n4.1 1 8\n" : "$MeshFormat\n4.1 0 8\n";
    if (binary_) {
      const std::int32_t one = 1;
      s.append(reinterpret_cast<const char*>(&one), 4);
      s += '\n';
    }
    s += "$EndMeshFormat\n";
    emit_physical_names(s);
    emit_entities(s);
    flush(out, s, true);
    emit_nodes(out, s);
    emit_elements(out, s);
    s += wr::periodic_section(m_, true, binary_, notes_);
    emit_data(out, s);
    flush(out, s, true);
  }

  // Regions and meshio-style field_data [tag, dim] (gmsh_common.hpp); the names of groups no
  // element carries are written too, as gmsh does.
  void emit_physical_names(std::string& s) {
    const auto names = wr::physical_names(m_, path_, notes_);
    if (names.empty()) return;
    s += "$PhysicalNames\n" + std::to_string(names.size()) + "\n";
    for (const auto& n : names)
      s += std::to_string(n.dim) + " " + std::to_string(n.tag) + " \"" + n.name + "\"\n";
    s += "$EndPhysicalNames\n";
  }

  void emit_entities(std::string& s) {
    s += "$Entities\n";
    std::vector<std::size_t> by_dim[4];
    for (std::size_t e = 0; e < entities_.size(); ++e) by_dim[entities_[e].dim].push_back(e);
    for (int d = 0; d < 4; ++d) num(s, static_cast<std::uint64_t>(by_dim[d].size()));
    end_line(s);
    for (int d = 0; d < 4; ++d) {
      for (auto idx : by_dim[d]) {
        const auto& e = entities_[idx];
        num(s, static_cast<std::int32_t>(e.tag));
        for (int k = 0; k < 3; ++k) num(s, e.lo[k]);
        if (d > 0)
          for (int k = 0; k < 3; ++k) num(s, e.hi[k]);
        num(s, static_cast<std::uint64_t>(e.physicals.size()));
        for (auto p : e.physicals) num(s, static_cast<std::int32_t>(p));
        if (d > 0) num(s, std::uint64_t{0});  // bounding entities: not tracked
        end_line(s);
      }
    }
    if (binary_) s += '\n';
    s += "$EndEntities\n";
  }

  void emit_nodes(OutFile& out, std::string& s) {
    const auto np = m_.num_points();
    s += "$Nodes\n";
    num(s, static_cast<std::uint64_t>(node_blocks_.size()));
    num(s, static_cast<std::uint64_t>(np));
    num(s, std::uint64_t{np ? 1u : 0u});
    num(s, static_cast<std::uint64_t>(np));
    end_line(s);
    for (const auto& nb : node_blocks_) {
      num(s, static_cast<std::int32_t>(nb.dim));
      num(s, static_cast<std::int32_t>(nb.tag));
      num(s, std::int32_t{0});
      num(s, static_cast<std::uint64_t>(nb.end - nb.begin));
      end_line(s);
      if (binary_) {
        rows(out, s, nb.end - nb.begin, 1, [&](std::uint64_t* o, std::int64_t i) {
          *o = static_cast<std::uint64_t>(nb.begin + i + 1);
        });
      } else {
        for (auto i = nb.begin; i < nb.end; ++i) {
          num(s, static_cast<std::uint64_t>(i + 1), '\n');
          flush(out, s);
        }
      }
      if (binary_ && m_.points.dim(1) == 3 && m_.points.dtype() == kFloat64) {
        flush(out, s, true);
        out.write(m_.points.as<double>() + 3 * nb.begin,
                  static_cast<std::size_t>(nb.end - nb.begin) * 3 * sizeof(double));
        continue;
      }
      for (auto i = nb.begin; i < nb.end; ++i) {
        for (int k = 0; k < 3; ++k) num(s, coord(i, k));
        end_line(s);
        flush(out, s);
      }
    }
    if (binary_) s += '\n';
    s += "$EndNodes\n";
  }

  void emit_elements(OutFile& out, std::string& s) {
    std::int64_t total = 0;
    for (const auto& r : runs_) total += r.count;
    s += "$Elements\n";
    num(s, static_cast<std::uint64_t>(runs_.size()));
    num(s, static_cast<std::uint64_t>(total));
    num(s, std::uint64_t{total ? 1u : 0u});
    num(s, static_cast<std::uint64_t>(total));
    end_line(s);
    std::uint64_t tag = 1;
    std::vector<std::int64_t> row;
    for (const auto& run : runs_) {
      const auto& e = entities_[run.entity];
      num(s, static_cast<std::int32_t>(e.dim));
      num(s, static_cast<std::int32_t>(e.tag));
      num(s, static_cast<std::int32_t>(run.type.number));
      num(s, static_cast<std::uint64_t>(run.count));
      end_line(s);
      const auto npc = static_cast<std::size_t>(run.type.nodes);
      const auto perm = gmsh_to_meshio_order(run.type.name);  // meshio[j] = gmsh[perm[j]]
      if (binary_) {  // rows of the element tag and its nodes, built in pieces (no append each)
        rows(out, s, run.count, npc + 1, [&](std::uint64_t* o, std::int64_t i) {
          const auto* c = run.conn + static_cast<std::size_t>(i) * npc;
          o[0] = tag + static_cast<std::uint64_t>(i);
          for (std::size_t j = 0; j < npc; ++j)
            o[1 + (perm.empty() ? j : static_cast<std::size_t>(perm[j]))] =
                static_cast<std::uint64_t>(c[j] + 1);
        });
        tag += static_cast<std::uint64_t>(run.count);
        continue;
      }
      row.resize(npc);
      for (std::int64_t i = 0; i < run.count; ++i) {
        const auto* c = run.conn + static_cast<std::size_t>(i) * npc;
        for (std::size_t j = 0; j < npc; ++j)
          row[perm.empty() ? j : static_cast<std::size_t>(perm[j])] = c[j];
        num(s, tag++);
        for (auto v : row) num(s, static_cast<std::uint64_t>(v + 1));
        end_line(s);
        flush(out, s);
      }
    }
    if (binary_) s += '\n';
    s += "$EndElements\n";
  }

  void emit_data(OutFile& out, std::string& s) {
    for (const auto& [name, a] : m_.point_data) {
      if (name == "gmsh:dim_tags") continue;
      emit_data_section(out, s, false, name, {&a});
    }
    for (const auto& [name, parts] : m_.cell_data) {
      if (name == "gmsh:physical" || name == "gmsh:geometrical") continue;
      std::vector<const Array*> ps;
      for (const auto& p : parts) ps.push_back(&p);
      emit_data_section(out, s, true, name, ps);
    }
  }

  void emit_data_section(OutFile& out, std::string& s, bool elements, const std::string& name,
                         const std::vector<const Array*>& parts) {
    const char* kind = elements ? "ElementData" : "NodeData";
    const auto what = std::string(elements ? "cell_data '" : "point_data '") + name + "'";
    std::int64_t rows = 0, comps = 0;
    for (const auto* p : parts) {
      const std::int64_t c = p->dim(0) ? static_cast<std::int64_t>(p->size()) / p->dim(0) : 1;
      if (comps && c != comps) fail(what + " has different component counts per block");
      comps = c;
      rows += p->dim(0);
    }
    if (comps < 1 || comps > 9) {
      notes_.push_back(what + " is not written: " + std::to_string(comps) +
                       " components (MSH data holds 1..9)");
      return;
    }
    if (!parts.empty() && parts[0]->dtype() != kFloat64)
      notes_.push_back(what + " written as float64 (MSH data holds doubles only)");
    if (name.find('"') != std::string::npos || name.find('\n') != std::string::npos)
      fail(what + ": the name holds a quote or newline, which MSH cannot hold");
    s += "$" + std::string(kind) + "\n1\n\"" + name + "\"\n1\n0\n3\n0\n" + std::to_string(comps) +
         "\n" + std::to_string(rows) + "\n";
    std::int64_t tag = 1;
    for (const auto* p : parts) {
      for (std::int64_t i = 0; i < p->dim(0); ++i) {
        num(s, static_cast<std::int32_t>(tag++));
        for (std::int64_t k = 0; k < comps; ++k)
          num(s, value_at(*p, static_cast<std::size_t>(i * comps + k)));
        end_line(s);
        flush(out, s);
      }
    }
    if (binary_) s += '\n';
    s += "$End" + std::string(kind) + "\n";
  }

  const Mesh& m_;
  const OutTarget& target_;
  const std::string& path_;
  bool binary_;
  std::vector<GmshType> types_;
  std::vector<Entity> entities_;
  std::map<std::pair<int, int>, std::size_t> entity_index_;
  std::vector<ElementRun> runs_;
  std::vector<NodeBlock> node_blocks_;
  std::set<std::string> warned_dims_;
  std::vector<std::string> notes_;
};

}  // namespace

std::vector<std::string> write_msh(const Mesh& m, const OutTarget& target, bool binary) {
  return MshWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
