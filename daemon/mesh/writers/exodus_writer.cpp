// Exodus II writer: a netCDF CDF-2 (64-bit offset) file laid out as Exodus's netCDF mapping
// names it (and as meshio 5.0's reader and read_exodus read it back): coordx / coordy / coordz
// (the points' dimension), one connect<k> per block with its elem_type, eb_prop1 and eb_names
// (a cell region that is exactly one block names it), point data as node variables of one time
// step (an (n, 3) array as <name>X / <name>Y / <name>Z and (n, 2) as <name>_R / <name>_Z, the
// names meshio's reader stacks back into <name>; other widths as <name>_1.. (noted)), cell data
// of one value a cell as element variables, point regions as node sets (ns_names, ns_prop1 from
// the tags), side regions as side sets (Exodus side = local facet + 1). Data is written as
// float64, connectivity as int32 (a mesh past int32 is a WriteError: CDF-2 has no int64).
// Ragged and polyhedron blocks, and types Exodus has no name for, are a WriteError naming the
// block; an empty block or set, field data, and other cell regions are noted.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// meshio type -> the Exodus name meshio's reader maps back to it (meshdock's reader reads the
// last three too; meshio 5.0 has no name for them).
constexpr std::pair<std::string_view, const char*> kExodusNames[] = {
    {"vertex", "SPHERE"},      {"line", "BAR2"},           {"line3", "BEAM3"},
    {"triangle", "TRI3"},      {"triangle6", "TRI6"},      {"quad", "QUAD4"},
    {"quad8", "QUAD8"},        {"quad9", "QUAD9"},         {"tetra", "TETRA"},
    {"tetra10", "TETRA10"},    {"hexahedron", "HEX8"},     {"hexahedron20", "HEX20"},
    {"hexahedron27", "HEX27"}, {"wedge", "WEDGE"},         {"pyramid", "PYRAMID"},
    {"wedge15", "WEDGE15"},    {"pyramid13", "PYRAMID13"}, {"wedge18", "WEDGE18"},
};

const char* exodus_name(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& [type, name] : kExodusNames)
    if (type == b.type) return name;
  return nullptr;
}

// nc_type codes and sizes of what is written.
constexpr std::int32_t kChar = 2, kInt = 4, kFloat = 5, kDouble = 6;
constexpr std::uint64_t kLenString = 33;

std::uint64_t pad4(std::uint64_t n) {
  return (n + 3) / 4 * 4;
}

// One netCDF variable: its dimensions (indices), type, text attributes and how its values are
// written (`count` values of `size` bytes a record, or in all).
struct NcVar {
  NcVar(std::string n, std::vector<std::size_t> d, std::int32_t t)
      : name(std::move(n)), dims(std::move(d)), type(t) {}
  std::string name;
  std::vector<std::size_t> dims;
  std::int32_t type = kDouble;
  std::vector<std::pair<std::string, std::string>> text_atts;
  bool record = false;
  std::uint64_t count = 0;
  std::function<void(wr::Sink&)> write;
  std::uint64_t begin = 0;
  std::uint64_t bytes() const { return count * (type == kChar ? 1 : type == kInt ? 4 : 8); }
};

class ExodusWriter : wr::WriterState {
 public:
  ExodusWriter(const Mesh& m, const OutTarget& target) : WriterState(m, target, true) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    if (m_.num_points() >= std::numeric_limits<std::int32_t>::max())
      throw WriteError(path_ + ": " + std::to_string(m_.num_points()) +
                       " points: Exodus's int32 connectivity (CDF-2) numbers at most 2^31 - 2");
    plan();
    OutFile out(target_);
    wr::Sink s(out);
    emit(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  std::vector<std::pair<std::string, std::uint64_t>> dims_;  // length 0: the unlimited one
  std::vector<NcVar> vars_;
  std::vector<std::size_t> blocks_;  // the blocks written, in order
  std::vector<std::string> point_names_, elem_names_;

  std::size_t dim(std::string name, std::uint64_t length) {
    dims_.emplace_back(std::move(name), length);
    return dims_.size() - 1;
  }
  std::size_t dim_named(std::string_view name) const {
    for (std::size_t i = 0; i < dims_.size(); ++i)
      if (dims_[i].first == name) return i;
    return 0;
  }

  // A char variable of `rows` names, each padded with NULs to len_string.
  void names_var(std::string name, std::size_t rows_dim, std::vector<std::string> rows) {
    for (auto& r : rows)
      if (r.size() >= kLenString) {
        notes_.push_back("name '" + r + "' is cut to " + std::to_string(kLenString - 1) +
                         " characters (Exodus's len_string)");
        r.resize(kLenString - 1);
      }
    NcVar v{std::move(name), {rows_dim, dim_named("len_string")}, kChar};
    v.count = rows.size() * kLenString;
    v.write = [rows](wr::Sink& s) {
      for (const auto& r : rows) {
        s.put(r);
        s.put(std::string(kLenString - r.size(), '\0'));
      }
    };
    vars_.push_back(std::move(v));
  }

  // Ids must be unique (readers such as VTK's key blocks and sets by them): an entity keeps its
  // region's tag; the others (0) and a repeated tag take the smallest ids left.
  static void unique_ids(std::vector<std::int64_t>& ids) {
    std::set<std::int64_t> taken;
    for (auto& id : ids)
      if (id > 0 && !taken.insert(id).second) id = 0;
    std::int64_t next = 1;
    for (auto& id : ids) {
      if (id > 0) continue;
      while (taken.count(next)) ++next;
      id = next;
      taken.insert(id);
    }
  }

  void int_var(std::string name, std::size_t d, std::vector<std::int64_t> values) {
    NcVar v{std::move(name), {d}, kInt};
    v.count = values.size();
    v.write = [values](wr::Sink& s) {
      for (const auto x : values) s.be(static_cast<std::int32_t>(x));
    };
    vars_.push_back(std::move(v));
  }

  void plan() {
    const auto np = static_cast<std::uint64_t>(m_.num_points());
    const int pdim = static_cast<int>(m_.points.dim(1));
    dim("len_string", kLenString);
    dim("len_line", 81);
    dim("four", 4);
    const auto time = dim("time_step", 0);
    const auto num_dim = dim("num_dim", static_cast<std::uint64_t>(std::max(pdim, 1)));
    const std::size_t num_nodes = np ? dim("num_nodes", np) : 0;
    NcVar t{"time_whole", {time}, kDouble};
    t.record = true;
    t.count = 1;
    t.write = [](wr::Sink& s) { s.be(0.0); };
    vars_.push_back(std::move(t));
    auto rows = std::vector<std::string>{"X", "Y", "Z"};
    rows.resize(static_cast<std::size_t>(std::max(pdim, 1)));
    names_var("coor_names", num_dim, rows);
    static const char* const kCoord[] = {"coordx", "coordy", "coordz"};
    for (int k = 0; np && k < pdim && k < 3; ++k) {
      NcVar v{kCoord[k], {num_nodes}, kDouble};
      v.count = np;
      v.write = [this, k](wr::Sink& s) {
        s.run<double>(static_cast<std::size_t>(m_.num_points()), [&](double* out, std::size_t at,
                                                                     std::size_t n) {
          for (std::size_t i = 0; i < n; ++i)
            out[i] = wr::Sink::swapped(wr::coord(m_, static_cast<std::int64_t>(at + i), k));
        });
      };
      vars_.push_back(std::move(v));
    }
    plan_blocks();
    plan_point_data(time, num_nodes);
    plan_cell_data(time);
    plan_sets();
    wr::note_dropped(m_, "Exodus", notes_, wr::kFieldData);
  }

  void plan_blocks() {
    std::uint64_t elems = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      if (!exodus_name(blk))
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         ": Exodus has no element type meshdock writes for it");
      if (blk.size() == 0) {
        notes_.push_back(wr::block_name(m_, b) +
                         " is not written: it has no cells (a netCDF "
                         "dimension of length 0 is the unlimited one)");
        continue;
      }
      blocks_.push_back(b);
      elems += static_cast<std::uint64_t>(blk.size());
    }
    if (blocks_.empty()) return;
    dim("num_elem", elems);
    const auto num_el_blk = dim("num_el_blk", blocks_.size());
    std::vector<std::int64_t> ids(blocks_.size(), 0);  // 0: none yet
    std::vector<std::string> names(blocks_.size());
    // A cell region holding exactly one block's cells names it.
    std::vector<std::int64_t> starts(m_.cells.size() + 1, 0);
    for (std::size_t b = 0; b < m_.cells.size(); ++b)
      starts[b + 1] = starts[b] + m_.cells[b].size();
    for (const auto& r : m_.regions) {
      if (r.kind != RegionKind::kCell) continue;
      bool named = false;
      for (std::size_t k = 0; k < blocks_.size() && !named; ++k) {
        const auto b = blocks_[k];
        const auto n = m_.cells[b].size();
        if (r.entries.dim(0) != n || !names[k].empty()) continue;
        bool same = true;
        for (std::int64_t i = 0; i < n && same; ++i)
          same = int_at(r.entries, static_cast<std::size_t>(i)) == starts[b] + i;
        if (!same) continue;
        names[k] = r.name;
        ids[k] = r.tag > 0 && r.tag <= std::numeric_limits<std::int32_t>::max() ? r.tag : 0;
        named = true;
      }
      if (!named)
        notes_.push_back(wr::not_written("region '" + r.name + "'", "Exodus",
                                         "cell sets but one block's cells (eb_names)"));
    }
    unique_ids(ids);
    int_var("eb_prop1", num_el_blk, ids);
    vars_.back().text_atts.emplace_back("name", "ID");
    names_var("eb_names", num_el_blk, names);
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      const auto b = blocks_[k];
      const auto& blk = m_.cells[b];
      const auto kk = std::to_string(k + 1);
      const auto d1 = dim("num_el_in_blk" + kk, static_cast<std::uint64_t>(blk.size()));
      const auto d2 =
          dim("num_nod_per_el" + kk, static_cast<std::uint64_t>(blk.connectivity.dim(1)));
      NcVar v{"connect" + kk, {d1, d2}, kInt};
      v.text_atts.emplace_back("elem_type", exodus_name(blk));
      v.count = static_cast<std::uint64_t>(blk.connectivity.size());
      v.write = [&blk](wr::Sink& s) {
        if (!blk.ragged()) return wr::cell_ids<std::int32_t>(s, blk, {}, 1, true);
        wr::each_cell(blk, [&](const std::int64_t* c, std::size_t n) {
          for (std::size_t i = 0; i < n; ++i) s.be(static_cast<std::int32_t>(c[i] + 1));
          s.maybe_flush();
        });
      };
      vars_.push_back(std::move(v));
    }
  }

  // A record variable of one step: `n` values, value i from get(i).
  void record_var(std::string name, std::size_t time, std::size_t d, std::uint64_t n,
                  std::function<double(std::size_t)> get) {
    NcVar v{std::move(name), {time, d}, kDouble};
    v.record = true;
    v.count = n;
    v.write = [n, get](wr::Sink& s) {
      for (std::size_t i = 0; i < n; ++i) {
        s.be(get(i));
        s.maybe_flush();
      }
    };
    vars_.push_back(std::move(v));
  }

  void plan_point_data(std::size_t time, std::size_t num_nodes) {
    std::vector<std::pair<std::string, std::function<double(std::size_t)>>> comps;
    const auto np = static_cast<std::size_t>(m_.num_points());
    for (const auto& [name, a] : m_.point_data) {
      const auto w = a.ndim() == 1
                         ? 1
                         : static_cast<std::size_t>(a.size() / std::max<std::int64_t>(a.dim(0), 1));
      const Array* arr = &a;
      auto col = [arr, w](std::size_t k) {
        return [arr, w, k](std::size_t i) { return value_at(*arr, i * w + k); };
      };
      if (w == 1) {
        comps.emplace_back(name, col(0));
      } else if (w == 3 || w == 2) {
        const char* const* suffix = w == 3 ? kXyz : kRz;
        for (std::size_t k = 0; k < w; ++k) comps.emplace_back(name + suffix[k], col(k));
      } else {
        for (std::size_t k = 0; k < w; ++k)
          comps.emplace_back(name + "_" + std::to_string(k + 1), col(k));
        notes_.push_back("point_data '" + name + "' (" + std::to_string(w) +
                         " values a point) is written as " + std::to_string(w) +
                         " node variables " + name + "_1.." + name + "_" + std::to_string(w));
      }
    }
    if (comps.empty() || np == 0) return;
    const auto nv = dim("num_nod_var", comps.size());
    std::vector<std::string> names;
    for (const auto& c : comps) names.push_back(c.first);
    names_var("name_nod_var", nv, names);
    for (std::size_t k = 0; k < comps.size(); ++k)
      record_var("vals_nod_var" + std::to_string(k + 1), time, num_nodes, np, comps[k].second);
  }

  void plan_cell_data(std::size_t time) {
    std::vector<std::string> names;
    std::vector<const std::vector<Array>*> arrays;
    for (const auto& [name, per_block] : m_.cell_data) {
      bool ok = per_block.size() == m_.cells.size();
      for (const auto& a : per_block)
        ok = ok && (a.ndim() == 1 || a.size() == static_cast<std::size_t>(a.dim(0)));
      if (!ok || blocks_.empty()) {
        notes_.push_back(wr::not_written("cell_data '" + name + "'", "Exodus",
                                         "cell data but one value a cell"));
        continue;
      }
      names.push_back(name);
      arrays.push_back(&per_block);
    }
    if (names.empty()) return;
    const auto nv = dim("num_elem_var", names.size());
    names_var("name_elem_var", nv, names);
    for (std::size_t i = 0; i < names.size(); ++i) {
      for (std::size_t k = 0; k < blocks_.size(); ++k) {
        const Array* a = &(*arrays[i])[blocks_[k]];
        record_var("vals_elem_var" + std::to_string(i + 1) + "eb" + std::to_string(k + 1), time,
                   dim_named("num_el_in_blk" + std::to_string(k + 1)),
                   static_cast<std::uint64_t>(a->dim(0)),
                   [a](std::size_t c) { return value_at(*a, c); });
      }
    }
    std::vector<std::int64_t> tab(blocks_.size() * names.size(), 1);
    NcVar v{"elem_var_tab", {dim_named("num_el_blk"), nv}, kInt};
    v.count = tab.size();
    v.write = [tab](wr::Sink& s) {
      for (const auto x : tab) s.be(static_cast<std::int32_t>(x));
    };
    vars_.push_back(std::move(v));
  }

  void plan_sets() {
    std::vector<const Region*> ns, ss;
    for (const auto& r : m_.regions) {
      if (r.kind == RegionKind::kCell) continue;  // plan_blocks named or noted them
      if (r.entries.dim(0) == 0) {
        notes_.push_back("region '" + r.name + "' is not written: it is empty");
        continue;
      }
      (r.kind == RegionKind::kPoint ? ns : ss).push_back(&r);
    }
    // Exodus elements are numbered through the written blocks: a cell's number there.
    std::vector<std::int64_t> exo(m_.cells.size(), -1);
    std::int64_t next = 0;
    std::vector<std::int64_t> first(m_.cells.size() + 1, 0);
    for (std::size_t b = 0; b < m_.cells.size(); ++b) first[b + 1] = first[b] + m_.cells[b].size();
    for (const auto b : blocks_) {
      exo[b] = next;
      next += m_.cells[b].size();
    }
    auto sets = [&](const std::vector<const Region*>& rs, const char* count_dim, const char* prop,
                    const char* names_name) {
      const auto d = dim(count_dim, rs.size());
      std::vector<std::int64_t> ids;
      std::vector<std::string> names;
      for (const auto* r : rs) {
        ids.push_back(r->tag > 0 && r->tag <= std::numeric_limits<std::int32_t>::max() ? r->tag
                                                                                       : 0);
        names.push_back(r->name);
      }
      unique_ids(ids);
      int_var(prop, d, ids);
      vars_.back().text_atts.emplace_back("name", "ID");
      names_var(names_name, d, names);
    };
    if (!ns.empty()) {
      sets(ns, "num_node_sets", "ns_prop1", "ns_names");
      for (std::size_t k = 0; k < ns.size(); ++k) {
        const auto kk = std::to_string(k + 1);
        const Array* e = &ns[k]->entries;
        const auto d = dim("num_nod_ns" + kk, static_cast<std::uint64_t>(e->dim(0)));
        NcVar v{"node_ns" + kk, {d}, kInt};
        v.count = static_cast<std::uint64_t>(e->dim(0));
        v.write = [e](wr::Sink& s) {
          for (std::int64_t i = 0; i < e->dim(0); ++i)
            s.be(static_cast<std::int32_t>(int_at(*e, static_cast<std::size_t>(i)) + 1));
        };
        vars_.push_back(std::move(v));
      }
    }
    if (!ss.empty()) {
      sets(ss, "num_side_sets", "ss_prop1", "ss_names");
      for (std::size_t k = 0; k < ss.size(); ++k) {
        const auto kk = std::to_string(k + 1);
        const Array* e = &ss[k]->entries;
        const auto n = static_cast<std::uint64_t>(e->dim(0));
        std::vector<std::int64_t> el(n), side(n);
        for (std::size_t i = 0; i < n; ++i) {
          const auto c = int_at(*e, 2 * i);
          const auto b = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), c) -
                                                  first.begin() - 1);
          el[i] = exo[b] + (c - first[b]) + 1;
          side[i] = int_at(*e, 2 * i + 1) + 1;
        }
        const auto d = dim("num_side_ss" + kk, n);
        int_var("elem_ss" + kk, d, el);
        int_var("side_ss" + kk, d, side);
      }
    }
  }

  static constexpr const char* kXyz[] = {"X", "Y", "Z"};
  static constexpr const char* kRz[] = {"_R", "_Z"};

  // ---- the netCDF file -------------------------------------------------------------------

  static void name(std::string& h, std::string_view s) {
    be32(h, static_cast<std::uint32_t>(s.size()));
    h += s;
    h.append(pad4(s.size()) - s.size(), '\0');
  }
  static void be32(std::string& h, std::uint32_t v) {
    for (int i = 3; i >= 0; --i) h += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  static void be64(std::string& h, std::uint64_t v) {
    for (int i = 7; i >= 0; --i) h += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  static void text_att(std::string& h, std::string_view n, std::string_view value) {
    name(h, n);
    be32(h, kChar);
    be32(h, static_cast<std::uint32_t>(value.size()));
    h += value;
    h.append(pad4(value.size()) - value.size(), '\0');
  }

  std::string header() const {
    std::string h("CDF\x02", 4);
    be32(h, 1);  // numrecs: one time step
    be32(h, 10);
    be32(h, static_cast<std::uint32_t>(dims_.size()));
    for (const auto& [n, len] : dims_) {
      name(h, n);
      be32(h, static_cast<std::uint32_t>(len));
    }
    be32(h, 12);  // global attributes
    be32(h, 5);
    text_att(h, "title", "written by meshdock");
    for (const char* n : {"api_version", "version"}) {
      name(h, n);
      be32(h, kFloat);
      be32(h, 1);
      const float v = 5.1f;
      std::uint32_t u;
      std::memcpy(&u, &v, 4);
      be32(h, u);
    }
    for (const auto& [n, value] :
         {std::pair<const char*, int>{"floating_point_word_size", 8}, {"file_size", 1}}) {
      name(h, n);
      be32(h, kInt);
      be32(h, 1);
      be32(h, static_cast<std::uint32_t>(value));
    }
    be32(h, 11);
    be32(h, static_cast<std::uint32_t>(vars_.size()));
    for (const auto& v : vars_) {
      name(h, v.name);
      be32(h, static_cast<std::uint32_t>(v.dims.size()));
      for (const auto d : v.dims) be32(h, static_cast<std::uint32_t>(d));
      if (v.text_atts.empty()) {
        be32(h, 0);
        be32(h, 0);
      } else {
        be32(h, 12);
        be32(h, static_cast<std::uint32_t>(v.text_atts.size()));
        for (const auto& [n, value] : v.text_atts) text_att(h, n, value);
      }
      be32(h, static_cast<std::uint32_t>(v.type));
      // vsize, clipped to 2^32 - 1 as the format says for a bigger variable (readers compute it)
      be32(h, static_cast<std::uint32_t>(std::min<std::uint64_t>(pad4(v.bytes()), 0xFFFFFFFFu)));
      be64(h, v.begin);
    }
    return h;
  }

  void emit(wr::Sink& s) {
    // The header's size does not depend on the offsets in it: lay the data out after it.
    std::uint64_t at = header().size();
    for (auto& v : vars_)
      if (!v.record) {
        v.begin = at;
        at += pad4(v.bytes());
      }
    for (auto& v : vars_)
      if (v.record) {
        v.begin = at;
        at += pad4(v.bytes());
      }
    for (const auto& v : vars_)
      if (v.bytes() > 0xFFFFFFFFull * 4)
        throw WriteError(path_ + ": variable '" + v.name + "' is too big for CDF-2");
    s.put(header());
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& v : vars_) {
        if (v.record != (pass == 1)) continue;
        v.write(s);
        s.put(std::string(pad4(v.bytes()) - v.bytes(), '\0'));
        s.maybe_flush();
      }
    }
  }
};

}  // namespace

std::vector<std::string> write_exodus(const Mesh& m, const OutTarget& target) {
  return ExodusWriter(m, target).write();
}

}  // namespace meshdock::mesh
