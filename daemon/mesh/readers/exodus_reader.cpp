// Exodus II (.e, .exo, .ex2: Sandia's SEACAS, Cubit, MOOSE, libMesh), read over meshdock's own
// netCDF classic parser (netcdf_classic.hpp: CDF-1, CDF-2, CDF-5), never libnetcdf / libhdf5.
// A netCDF-4 (HDF5) file is refused with a ReadError that says how to convert it.
// What is read, as meshio 5.0's exodus reader reads it (variables in file order):
// - coordx / coordy / coordz -> points (num_nodes, 3), 0 where a coordinate is missing (meshio
//   always gives 3 columns); the old `coord` (num_dim, num_nodes) -> points (num_nodes, num_dim).
// - connect<k> -> a block of the type its elem_type attribute names (meshio's names: TETRA,
//   HEX8, TRI6, SHELL4, BEAM, SPHERE, ...; a name without a node count takes the row's, so
//   "TETRA" with 10 nodes is tetra10, where meshio keeps "tetra" with 10 columns), 1-based ->
//   0-based, node order as written (as meshio: Exodus's HEX20 / WEDGE15 midside order is not
//   VTK's, and neither permutes it). TETRA4 / TET4 are tetra (meshio: "tetra4").
// - name_nod_var + vals_nod_var<k> (or the old vals_nod_var (time, num_nod_var, num_nodes)) ->
//   point_data of the FIRST time step (as meshio; the other steps are noted), float64; names
//   ending X, Y, Z (and _R, _Z) are stacked into one (n, 3) / (n, 2) array as meshio does.
// - name_elem_var + vals_elem_var<i>eb<j> -> cell_data of the first time step, one array per
//   block, float64; a block the truth table leaves out gets NaN (noted; meshio's concatenation
//   shifts the other blocks' values there).
// - ns_names + node_ns<k> -> point regions (meshio's point_sets), tagged ns_prop1; a node set
//   without a name is named node_ns<k> (meshio drops them all when ns_names is missing).
// - meshdock only, meshio ignores them: eb_names -> a cell region per named block (tag
//   eb_prop1); elem_ss<k> / side_ss<k> (+ ss_names, ss_prop1) -> side regions of (global cell,
//   Exodus side - 1) pairs.
// - Noted, not kept: node_num_map / elem_num_map (ids; meshio ignores them too), info_records
//   and qa_records (meshio's Mesh.info), every time step after the first, and one note listing
//   every other variable (global variables, distribution factors, ...).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/netcdf_classic.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

using netcdf::File;
using netcdf::Variable;

// Exodus element families (elem_type without its node count, upper case) and the meshio type
// for each node count.
struct Family {
  std::string_view names[2];
  struct {
    int nodes;
    const char* type;
  } types[3];
};

constexpr Family kFamilies[] = {
    {{"SPHERE", ""}, {{1, "vertex"}, {0, nullptr}, {0, nullptr}}},
    {{"BEAM", "BAR"}, {{2, "line"}, {3, "line3"}, {0, nullptr}}},
    {{"TRUSS", ""}, {{2, "line"}, {3, "line3"}, {0, nullptr}}},
    {{"SHELL", "QUAD"}, {{4, "quad"}, {8, "quad8"}, {9, "quad9"}}},
    {{"TRI", "TRIANGLE"}, {{3, "triangle"}, {6, "triangle6"}, {0, nullptr}}},
    {{"HEX", "HEXAHEDRON"}, {{8, "hexahedron"}, {20, "hexahedron20"}, {27, "hexahedron27"}}},
    {{"TETRA", "TET"}, {{4, "tetra"}, {10, "tetra10"}, {0, nullptr}}},
    {{"PYRAMID", "PYRA"}, {{5, "pyramid"}, {13, "pyramid13"}, {14, "pyramid14"}}},
    {{"WEDGE", ""}, {{6, "wedge"}, {15, "wedge15"}, {18, "wedge18"}}},
};

// The meshio type of a block whose elem_type is `name` and whose rows have `nodes` entries;
// null when meshdock has none.
const char* block_type(std::string name, std::int64_t nodes) {
  for (auto& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto digits = name.find_first_of("0123456789");
  const std::string family = name.substr(0, digits);
  if (digits != std::string::npos) {
    // The count in the name must be the row's.
    const std::string count = name.substr(digits);
    if (count.find_first_not_of("0123456789") != std::string::npos || count.size() > 3 ||
        std::stoi(count) != nodes)
      return nullptr;
  }
  for (const auto& f : kFamilies) {
    if (family != f.names[0] && (f.names[1].empty() || family != f.names[1])) continue;
    for (const auto& t : f.types)
      if (t.type && t.nodes == nodes) return t.type;
  }
  return nullptr;
}

// The number after `prefix` in a variable name ("connect12" -> 12), 0 when it is not one.
std::int64_t number_after(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size() ||
      name.size() > prefix.size() + 9)
    return 0;
  std::int64_t n = 0;
  for (const char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

// "vals_elem_var<i>eb<j>" -> (i, j); (0, 0) when it is not one.
std::pair<std::int64_t, std::int64_t> elem_var_name(std::string_view name) {
  constexpr std::string_view kPrefix = "vals_elem_var";
  if (name.substr(0, kPrefix.size()) != kPrefix) return {0, 0};
  const auto eb = name.find("eb", kPrefix.size());
  if (eb == std::string_view::npos) return {0, 0};
  const auto i = number_after(std::string(name.substr(0, eb)), kPrefix);
  const auto j = number_after(std::string("eb") + std::string(name.substr(eb + 2)), "eb");
  return {i, j};
}

class ExodusReader {
 public:
  ExodusReader(const File& f, MappedFile& file) : f_(f), file_(file) {}

  Mesh read() {
    if (const auto* d = f_.find_dim("num_nodes")) nodes_ = static_cast<std::int64_t>(d->length);
    read_points();
    read_blocks();
    read_point_data();
    read_cell_data();
    read_node_sets();
    read_block_names();
    read_side_sets();
    note_rest();
    return std::move(m_);
  }

 private:
  const File& f_;
  MappedFile& file_;
  Mesh m_;
  std::int64_t nodes_ = 0;
  std::set<std::string> used_;  // variables read or noted by name
  // Blocks by their Exodus number k (connect<k>): the meshdock block and its first global cell
  // in Exodus's own order (block 1 first), for side sets' element numbers.
  std::map<std::int64_t, std::size_t> block_of_;
  std::vector<std::string> time_notes_;

  [[noreturn]] void fail(const Variable& v, const std::string& what) const {
    f_.fail(v.header_at, "exodus: variable '" + v.name + "': " + what);
  }
  const Variable* use(std::string_view name) {
    const auto* v = f_.find(name);
    if (v) used_.insert(v->name);
    return v;
  }
  void expect_values(const Variable& v, std::uint64_t n, const char* what) const {
    if (v.values != n)
      fail(v, "holds " + std::to_string(v.values) + " values" + (v.record ? " a step" : "") +
                  "; expected " + std::to_string(n) + " (" + what + ")");
  }
  // Where a variable's values lie, mapped now (the file is mapped lazily).
  void populate(const Variable& v) const {
    file_.populate(static_cast<std::size_t>(v.begin),
                   static_cast<std::size_t>(v.begin + v.values * netcdf::type_size(v.type)));
  }

  // A variable's pages leave this process's memory once read (they stay in the page cache):
  // the reader's peak is then what it builds, not that plus the file.
  void release(const Variable& v) const {
    file_.release(static_cast<std::size_t>(v.begin),
                  static_cast<std::size_t>(v.begin + v.values * netcdf::type_size(v.type)));
  }

  // Connectivity decoded in runs of 1 MiB of the file, each mapped just before and released just
  // after (int32 connectivity becomes int64: mapped whole, the file's copy of it sat beside an
  // array twice its size, 1.6x the arrays at the peak for a 1M-tet file).
  bool read_indices(const Variable& v, std::int64_t* out, std::uint64_t limit) const {
    const auto size = netcdf::type_size(v.type);
    if (v.type != netcdf::Type::kInt && v.type != netcdf::Type::kInt64) {
      populate(v);
      const bool ok = f_.read_indices(v, out, limit);
      release(v);
      return ok;
    }
    constexpr std::uint64_t kRun = std::uint64_t{1} << 20;
    const std::uint64_t per_run = kRun / size;
    bool ok = true;
    for (std::uint64_t first = 0; first < v.values; first += per_run) {
      const auto count = std::min(per_run, v.values - first);
      const auto begin = static_cast<std::size_t>(v.begin + first * size);
      const auto end = begin + static_cast<std::size_t>(count * size);
      file_.populate(begin, end);
      ok &= f_.read_indices(v, out, limit, first, count);
      file_.release(begin, end);
    }
    return ok;
  }

  void read_points() {
    if (const auto* v = use("coord"); v && !f_.find("coordx")) {
      // The old layout: (num_dim, num_nodes).
      const auto s = f_.shape(*v);
      if (s.size() != 2 || s[1] != nodes_) fail(*v, "is not (num_dim, num_nodes)");
      std::vector<double> c(static_cast<std::size_t>(v->values));
      populate(*v);
      f_.read_as(*v, c.data());
      m_.points = Array::of<double>({nodes_, s[0]});
      auto* p = m_.points.as<double>();
      for (std::int64_t i = 0; i < nodes_; ++i)
        for (std::int64_t k = 0; k < s[0]; ++k) p[i * s[0] + k] = c[k * nodes_ + i];
      return;
    }
    // Checked before the points are allocated: num_nodes is a dimension, which no data need
    // back, so only a coordinate variable of that length shows the file holds that many.
    static constexpr const char* kNames[] = {"coordx", "coordy", "coordz"};
    const Variable* coords[3] = {use(kNames[0]), use(kNames[1]), use(kNames[2])};
    for (const auto* v : coords) {
      if (!v) continue;
      if (v->record) fail(*v, "is a record variable; expected (num_nodes)");
      expect_values(*v, static_cast<std::uint64_t>(nodes_), "num_nodes");
    }
    if (nodes_ > 0 && !coords[0] && !coords[1] && !coords[2])
      f_.fail(0, "exodus: num_nodes is " + std::to_string(nodes_) +
                     " but there is no coordx, coordy, coordz or coord variable");
    m_.points = Array::of<double>({nodes_, 3});
    auto* p = m_.points.as<double>();
    std::fill(p, p + nodes_ * 3, 0.0);
    for (int k = 0; k < 3; ++k) {
      if (!coords[k]) continue;
      populate(*coords[k]);
      f_.read_strided(*coords[k], p + k, 3);
      release(*coords[k]);
    }
  }

  void read_blocks() {
    for (const auto& v : f_.vars()) {
      const auto k = number_after(v.name, "connect");
      if (k == 0) continue;
      used_.insert(v.name);
      const auto s = f_.shape(v);
      if (s.size() != 2 || v.record) fail(v, "is not (num_el_in_blk, num_nod_per_el)");
      const auto elem_type = f_.text_attribute(v, "elem_type");
      const char* type = block_type(elem_type, s[1]);
      if (!type)
        fail(v, "elem_type '" + elem_type + "' with " + std::to_string(s[1]) +
                    " nodes an element is not a cell type meshdock reads");
      if (block_of_.count(k)) fail(v, "a second connect" + std::to_string(k));
      Array conn = Array::of<std::int64_t>({s[0], s[1]});
      auto* out = conn.as<std::int64_t>();
      const auto limit = static_cast<std::uint64_t>(nodes_);
      const auto n = static_cast<std::size_t>(v.values);
      const bool bad = !read_indices(v, out, limit);
      if (bad) [[unlikely]] {
        for (std::size_t i = 0; i < n; ++i)
          if (static_cast<std::uint64_t>(out[i]) >= limit)
            fail(v, "element " + std::to_string(i / static_cast<std::size_t>(s[1]) + 1) +
                        " refers to node " + std::to_string(out[i] + 1) +
                        "; nodes are numbered 1.." + std::to_string(nodes_));
      }
      block_of_[k] = m_.cells.size();
      m_.cells.push_back(CellBlock::fixed(type, std::move(conn)));
    }
  }

  // Record 0 of a record variable as float64, noting the steps left out (once per kind).
  bool first_step(const Variable& v, double* out, const char* kind) {
    if (!v.record) {
      f_.read_as(v, out);
      return true;
    }
    if (f_.records() == 0) {
      time_notes_.push_back("exodus: " + f_.path() + ": " + kind + " '" + v.name +
                            "' has no time step written; not read");
      return false;
    }
    f_.read_as(v, out, 0);
    return true;
  }

  std::vector<std::string> names(const char* var) {
    const auto* v = use(var);
    return v ? f_.strings(*v) : std::vector<std::string>{};
  }

  // meshio's categorize: <name>X with <name>Y and <name>Z (none at index 0) -> one (n, 3)
  // array <name>; <name>_R with <name>_Z -> (n, 2); the rest as they are.
  void stack_point_data(const std::vector<std::string>& names, std::vector<Array>& arrays) {
    std::vector<bool> done(names.size(), false);
    auto index = [&](const std::string& n) -> std::size_t {
      const auto it = std::find(names.begin(), names.end(), n);
      return it == names.end() ? 0 : static_cast<std::size_t>(it - names.begin());
    };
    auto put = [&](const std::string& name, std::vector<std::size_t> cols) {
      for (const auto c : cols) {
        if (arrays[c].valid()) continue;
        time_notes_.push_back("exodus: " + f_.path() + ": node variable '" + names[c] +
                              "' has no values read (no vals_nod_var" + std::to_string(c + 1) +
                              " step); point_data '" + name + "' not made");
        return;
      }
      if (cols.size() == 1) {
        m_.point_data[name] = arrays[cols[0]];
        return;
      }
      const auto w = static_cast<std::int64_t>(cols.size());
      Array a = Array::of<double>({nodes_, w});
      auto* p = a.as<double>();
      for (std::int64_t k = 0; k < w; ++k) {
        const auto* src = arrays[cols[static_cast<std::size_t>(k)]].as<double>();
        for (std::int64_t i = 0; i < nodes_; ++i) p[i * w + k] = src[i];
      }
      m_.point_data[name] = std::move(a);
    };
    for (std::size_t k = 0; k < names.size(); ++k) {
      if (done[k]) continue;
      const auto& n = names[k];
      done[k] = true;
      if (!n.empty() && n.back() == 'X') {
        const auto base = n.substr(0, n.size() - 1);
        const auto iy = index(base + "Y"), iz = index(base + "Z");
        if (iy && iz) {
          done[iy] = done[iz] = true;
          put(base, {k, iy, iz});
          continue;
        }
      } else if (n.size() >= 2 && n.substr(n.size() - 2) == "_R") {
        const auto base = n.substr(0, n.size() - 2);
        if (const auto iz = index(base + "_Z")) {
          done[iz] = true;
          put(base, {k, iz});
          continue;
        }
      }
      put(n, {k});
    }
  }

  void read_point_data() {
    const auto names = this->names("name_nod_var");
    std::vector<Array> arrays(names.size());
    bool any = false;
    for (const auto& v : f_.vars()) {
      const auto n = static_cast<std::size_t>(nodes_);
      if (v.name == "vals_nod_var") {
        // The old layout: (time_step, num_nod_var, num_nodes).
        used_.insert(v.name);
        expect_values(v, names.size() * n, "num_nod_var * num_nodes");
        std::vector<double> all(names.size() * n);
        if (!first_step(v, all.data(), "node variable")) continue;
        for (std::size_t k = 0; k < names.size(); ++k) {
          arrays[k] = Array::of<double>({nodes_});
          std::copy_n(all.data() + k * n, n, arrays[k].as<double>());
        }
        any = true;
        continue;
      }
      const auto k = number_after(v.name, "vals_nod_var");
      if (k == 0) continue;
      used_.insert(v.name);
      if (static_cast<std::size_t>(k) > names.size())
        fail(v, "node variable " + std::to_string(k) + " of the " + std::to_string(names.size()) +
                    " name_nod_var names");
      expect_values(v, n, "num_nodes");
      Array a = Array::of<double>({nodes_});
      if (!first_step(v, a.as<double>(), "node variable")) continue;
      arrays[static_cast<std::size_t>(k - 1)] = std::move(a);
      any = true;
    }
    stack_point_data(names, arrays);
    if (any && f_.records() > 1)
      time_notes_.push_back("exodus: " + f_.path() + ": " + std::to_string(f_.records()) +
                            " time steps; point and cell data are read from the first only (as "
                            "meshio)");
  }

  void read_cell_data() {
    const auto names = this->names("name_elem_var");
    use("elem_var_tab");  // the truth table: the variables present say the same
    // (variable, block number) -> values of the first step.
    std::map<std::pair<std::int64_t, std::int64_t>, Array> values;
    for (const auto& v : f_.vars()) {
      const auto [i, j] = elem_var_name(v.name);
      if (i == 0 || j == 0) continue;
      used_.insert(v.name);
      const auto b = block_of_.find(j);
      if (static_cast<std::size_t>(i) > names.size() || b == block_of_.end())
        fail(v, "names element variable " + std::to_string(i) + " (of " +
                    std::to_string(names.size()) + ") on block " + std::to_string(j) +
                    ", which the file does not have");
      const auto cells = m_.cells[b->second].size();
      expect_values(v, static_cast<std::uint64_t>(cells), "the block's elements");
      Array a = Array::of<double>({cells});
      if (first_step(v, a.as<double>(), "element variable")) values[{i, j}] = std::move(a);
    }
    if (values.empty()) return;
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::vector<Array> per_block(m_.cells.size());
      std::vector<std::string> missing;
      bool any = false;
      for (const auto& [j, b] : block_of_) {
        const auto it = values.find({static_cast<std::int64_t>(i + 1), j});
        if (it != values.end()) {
          per_block[b] = it->second;
          any = true;
          continue;
        }
        per_block[b] = Array::of<double>({m_.cells[b].size()});
        std::fill_n(per_block[b].as<double>(), m_.cells[b].size(), std::nan(""));
        missing.push_back(std::to_string(j));
      }
      if (!any) continue;
      if (!missing.empty()) {
        std::string list;
        for (const auto& s : missing) list += (list.empty() ? "" : ", ") + s;
        m_.notes.push_back("exodus: " + f_.path() + ": element variable '" + names[i] +
                           "' is not defined on blocks " + list + " (its truth table); NaN there");
      }
      m_.cell_data[names[i]] = std::move(per_block);
    }
  }

  std::vector<std::int64_t> ints(const char* var) {
    const auto* v = use(var);
    std::vector<std::int64_t> out;
    if (!v || v->record) return out;
    out.resize(static_cast<std::size_t>(v->values));
    f_.read_as(*v, out.data());
    return out;
  }

  static std::int64_t tag_of(const std::vector<std::int64_t>& prop, std::int64_t k) {
    return static_cast<std::size_t>(k) <= prop.size() ? prop[static_cast<std::size_t>(k - 1)] : k;
  }
  static std::string name_of(const std::vector<std::string>& names, std::int64_t k) {
    return static_cast<std::size_t>(k) <= names.size() ? names[static_cast<std::size_t>(k - 1)]
                                                       : std::string();
  }

  void read_node_sets() {
    const auto names = this->names("ns_names");
    const auto prop = ints("ns_prop1");
    for (const auto& v : f_.vars()) {
      const auto k = number_after(v.name, "node_ns");
      if (k == 0) continue;
      used_.insert(v.name);
      if (v.record || v.dims.size() != 1) fail(v, "is not (num_nod_ns)");
      Region r;
      r.name = name_of(names, k);
      if (r.name.empty()) r.name = v.name;
      r.kind = RegionKind::kPoint;
      r.tag = tag_of(prop, k);
      r.entries = Array::of<std::int64_t>({static_cast<std::int64_t>(v.values)});
      auto* e = r.entries.as<std::int64_t>();
      f_.read_as(v, e);
      for (std::uint64_t i = 0; i < v.values; ++i) {
        if (e[i] < 1 || e[i] > nodes_)
          fail(v, "entry " + std::to_string(i + 1) + " is node " + std::to_string(e[i]) +
                      "; nodes are numbered 1.." + std::to_string(nodes_));
        --e[i];
      }
      m_.regions.push_back(std::move(r));
    }
  }

  // First global cell of each block in meshdock's order.
  std::vector<std::int64_t> block_starts() const {
    std::vector<std::int64_t> s(m_.cells.size() + 1, 0);
    for (std::size_t b = 0; b < m_.cells.size(); ++b) s[b + 1] = s[b] + m_.cells[b].size();
    return s;
  }

  void read_block_names() {
    const auto names = this->names("eb_names");
    const auto prop = ints("eb_prop1");
    const auto starts = block_starts();
    for (const auto& [k, b] : block_of_) {
      const auto name = name_of(names, k);
      if (name.empty()) continue;
      Region r;
      r.name = name;
      r.kind = RegionKind::kCell;
      r.dim = cell_dim(m_.cells[b].type);
      r.tag = tag_of(prop, k);
      const auto n = m_.cells[b].size();
      r.entries = Array::of<std::int64_t>({n});
      auto* e = r.entries.as<std::int64_t>();
      for (std::int64_t i = 0; i < n; ++i) e[i] = starts[b] + i;
      m_.regions.push_back(std::move(r));
    }
  }

  void read_side_sets() {
    const auto names = this->names("ss_names");
    const auto prop = ints("ss_prop1");
    // Exodus numbers elements 1..num_elem through its blocks in their own order (block 1
    // first); meshdock's global cell numbers follow the blocks in file order.
    const auto starts = block_starts();
    std::vector<std::pair<std::int64_t, std::size_t>> exo;  // (Exodus first element, block)
    std::int64_t first = 0;
    for (const auto& [k, b] : block_of_) {
      exo.emplace_back(first, b);
      first += m_.cells[b].size();
    }
    for (const auto& v : f_.vars()) {
      const auto k = number_after(v.name, "elem_ss");
      if (k == 0) continue;
      used_.insert(v.name);
      const auto* sides = use("side_ss" + std::to_string(k));
      if (!sides || sides->values != v.values || v.record || sides->record)
        fail(v, "has no side_ss" + std::to_string(k) + " of its length");
      const auto n = static_cast<std::int64_t>(v.values);
      std::vector<std::int64_t> el(static_cast<std::size_t>(n)), side(el.size());
      f_.read_as(v, el.data());
      f_.read_as(*sides, side.data());
      Region r;
      r.name = name_of(names, k);
      if (r.name.empty()) r.name = v.name;
      r.kind = RegionKind::kSide;
      r.tag = tag_of(prop, k);
      r.entries = Array::of<std::int64_t>({n, 2});
      auto* e = r.entries.as<std::int64_t>();
      for (std::int64_t i = 0; i < n; ++i) {
        const auto x = el[static_cast<std::size_t>(i)] - 1;
        if (x < 0 || x >= first)
          fail(v, "entry " + std::to_string(i + 1) + " is element " + std::to_string(x + 1) +
                      "; elements are numbered 1.." + std::to_string(first));
        const auto it = std::upper_bound(exo.begin(), exo.end(), std::make_pair(x, SIZE_MAX));
        const auto& [from, b] = *(it - 1);
        e[2 * i] = starts[b] + (x - from);
        e[2 * i + 1] = side[static_cast<std::size_t>(i)] - 1;
      }
      m_.regions.push_back(std::move(r));
    }
  }

  void note_rest() {
    const std::string at = "exodus: " + f_.path() + ": ";
    for (auto& n : time_notes_) m_.notes.push_back(std::move(n));
    for (const char* map : {"node_num_map", "elem_num_map"}) {
      if (use(map))
        m_.notes.push_back(at + map + " (the file's own ids) is not applied: points and cells " +
                           "are numbered in file order (as meshio)");
    }
    std::size_t info = 0, qa = 0;
    if (const auto* v = use("info_records")) info = f_.shape(*v).empty() ? 0 : f_.shape(*v)[0];
    if (const auto* v = use("qa_records")) qa = f_.shape(*v).empty() ? 0 : f_.shape(*v)[0];
    if (info || qa)
      m_.notes.push_back(at + std::to_string(info) + " info records and " + std::to_string(qa) +
                         " QA records are not kept (meshio's Mesh.info holds them)");
    used_.insert("time_whole");  // the steps' times: the note above says which step was read
    std::string rest;
    for (const auto& v : f_.vars())
      if (!used_.count(v.name)) rest += (rest.empty() ? "" : ", ") + v.name;
    if (!rest.empty()) m_.notes.push_back(at + "variables not read: " + rest);
  }
};

constexpr std::string_view kHdf5Magic("\x89HDF\r\n\x1a\n", 8);

}  // namespace

Mesh read_exodus(const InFile& in) {
  if (peek_file(in, 8) == kHdf5Magic)
    throw ReadError(in.path +
                    ": a netCDF-4 (HDF5) file; meshdock reads Exodus II in the netCDF classic "
                    "formats only (CDF-1, CDF-2, CDF-5). Convert it with `nccopy -k cdf5 " +
                    in.path +
                    " out.exo` (or -k 64-bit-offset), or write it classic (VTK's "
                    "vtkExodusIIWriter, netCDF4 format=\"NETCDF3_64BIT_OFFSET\")");
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        const File f(data, file.path());
        return ExodusReader(f, file).read();
      },
      Access::map_lazily);
}

}  // namespace meshdock::mesh
