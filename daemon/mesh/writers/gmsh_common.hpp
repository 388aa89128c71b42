// Shared by the MSH 4.1 and 2.2 writers: which physical groups get a name ($PhysicalNames), the
// $NodeData / $ElementData sections, whose layout the two versions share, and $Periodic.
#pragma once

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/error.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/writers/write_util.hpp"

namespace meshdock::mesh::wr {

struct PhysicalName {
  int dim;
  std::int64_t tag;
  std::string name;
};

// field_data `a` as meshio keeps a Gmsh physical name: two integral values [tag, dim], tag > 0,
// dim 0..3; false otherwise.
inline bool physical_name_entry(const Array& a, std::int64_t& tag, int& dim) {
  if (a.size() != 2 || a.dtype().code > 2 || (a.dtype().code == 2 && a.dtype().bits < 32))
    return false;
  const double t = value_at(a, 0), d = value_at(a, 1);
  if (t != std::floor(t) || d != std::floor(d) || t < 1 || t > 2147483647.0 || d < 0 || d > 3)
    return false;
  tag = static_cast<std::int64_t>(t);
  dim = static_cast<int>(d);
  return true;
}

// read_msh's field data for $Periodic: gmsh:periodic (links, 4) [dim, tag, master tag, node
// pairs], gmsh:periodic_affine (links, 16), gmsh:periodic_nodes (pairs, 2) [point, master].
inline bool is_periodic_key(const std::string& name) {
  return name.starts_with("gmsh:periodic");
}

// Those arrays as a $Periodic section: MSH 4.1 ("numAffine values"; binary: int32 / size_t /
// double) or 2.2 (an "Affine" line; text even in a binary file, as gmsh writes it); node tags are
// point index + 1, as the writers number nodes. "" when there are none; when they do not fit
// together (shapes, dtypes, counts, points out of range) "" and a note saying why.
inline std::string periodic_section(const Mesh& m, bool v41, bool binary,
                                    std::vector<std::string>& notes) {
  const auto find = [&](const char* k) {
    const auto it = m.field_data.find(k);
    return it == m.field_data.end() ? nullptr : &it->second;
  };
  const Array* links = find("gmsh:periodic");
  const Array* affine = find("gmsh:periodic_affine");
  const Array* nodes = find("gmsh:periodic_nodes");
  if (!links && !affine && !nodes) return {};
  const auto refuse = [&](const std::string& why) {
    notes.push_back("field_data 'gmsh:periodic*' is not written as $Periodic: " + why);
    return std::string();
  };
  const auto is_int = [](const Array* a) { return a && wr::is_integer(*a); };
  if (!is_int(links) || links->ndim() != 2 || links->dim(1) != 4)
    return refuse("gmsh:periodic is no (links, 4) integer array");
  if (!is_int(nodes) || nodes->ndim() != 2 || nodes->dim(1) != 2)
    return refuse("gmsh:periodic_nodes is no (pairs, 2) integer array");
  const auto k = links->dim(0);
  if (affine && (affine->dtype() != kFloat64 || affine->ndim() != 2 || affine->dim(0) != k ||
                 affine->dim(1) != 16))
    return refuse("gmsh:periodic_affine is no (links, 16) float64 array");
  std::int64_t pairs = 0;
  for (std::int64_t l = 0; l < k; ++l) {
    const auto dim = int_at(*links, static_cast<std::size_t>(4 * l));
    const auto n = int_at(*links, static_cast<std::size_t>(4 * l + 3));
    if (dim < 0 || dim > 3 || n < 0)
      return refuse("link " + std::to_string(l) + " has dim " + std::to_string(dim) + " and " +
                    std::to_string(n) + " node pairs");
    pairs += n;
  }
  if (pairs != nodes->dim(0))
    return refuse("the links count " + std::to_string(pairs) +
                  " node pairs, gmsh:periodic_nodes holds " + std::to_string(nodes->dim(0)));
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const auto p = int_at(*nodes, i);
    if (p < 0 || p >= m.num_points())
      return refuse("gmsh:periodic_nodes names point " + std::to_string(p) + " of " +
                    std::to_string(m.num_points()));
  }
  std::string s = "$Periodic\n";
  const bool bin = v41 && binary;
  const auto raw = [&](auto v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
  const auto word = [&](auto v, char sep) {
    if (bin) return raw(v);
    append_number(s, v);
    s += sep;
  };
  word(static_cast<std::uint64_t>(k), '\n');
  std::size_t at = 0;
  for (std::int64_t l = 0; l < k; ++l) {
    for (int c = 0; c < 3; ++c)
      word(static_cast<std::int32_t>(int_at(*links, static_cast<std::size_t>(4 * l + c))),
           c == 2 ? '\n' : ' ');
    const double* a = affine ? affine->as<double>() + 16 * l : nullptr;
    const bool has = a && !std::isnan(a[0]);
    if (v41) {
      word(static_cast<std::uint64_t>(has ? 16 : 0), has ? ' ' : '\n');
    } else if (has) {
      s += "Affine ";
    }
    if (has)
      for (int c = 0; c < 16; ++c) word(a[c], c == 15 ? '\n' : ' ');
    const auto n = int_at(*links, static_cast<std::size_t>(4 * l + 3));
    word(static_cast<std::uint64_t>(n), '\n');
    for (std::int64_t i = 0; i < n; ++i, at += 2) {
      word(static_cast<std::uint64_t>(int_at(*nodes, at) + 1), ' ');
      word(static_cast<std::uint64_t>(int_at(*nodes, at + 1) + 1), '\n');
    }
  }
  if (bin) s += '\n';
  s += "$EndPeriodic\n";
  return s;
}

// The names to write: every Point / Cell region (one per (dim, tag): later ones noted), then
// every field_data entry of meshio's form [tag, dim] that names a group nothing named yet (so a
// meshio mesh keeps its names). Other field data, and Side regions, are noted as not written.
// Throws WriteError for a name MSH cannot hold (a quote or newline).
inline std::vector<PhysicalName> physical_names(const Mesh& m, const std::string& path,
                                                std::vector<std::string>& notes) {
  std::vector<PhysicalName> out;
  std::set<std::pair<int, std::int64_t>> seen;
  auto check = [&](const std::string& name) {
    if (name.find('"') != std::string::npos || name.find('\n') != std::string::npos)
      throw WriteError(path + ": physical name '" + name +
                       "' holds a quote or newline, which MSH cannot hold");
  };
  for (const auto& r : m.regions) {
    if (r.kind == RegionKind::kSide) continue;  // the writers note these themselves
    if (!seen.insert({r.dim, r.tag}).second) {
      notes.push_back("region '" + r.name + "' shares dim " + std::to_string(r.dim) + " and tag " +
                      std::to_string(r.tag) + " with an earlier one; MSH keeps one name");
      continue;
    }
    check(r.name);
    out.push_back({r.dim, r.tag, r.name});
  }
  for (const auto& [name, a] : m.field_data) {
    std::int64_t tag = 0;
    int dim = 0;
    if (is_periodic_key(name)) continue;  // $Periodic (periodic_section)
    if (!physical_name_entry(a, tag, dim)) {
      notes.push_back(not_written("field_data '" + name + "'", "MSH",
                                  "field data but physical names [tag, dim]"));
      continue;
    }
    bool implied = false;
    for (const auto& r : m.regions) implied |= r.name == name && r.tag == tag && r.dim == dim;
    if (implied) continue;
    if (!seen.insert({dim, tag}).second) {
      notes.push_back("field_data '" + name + "' names physical group (dim " + std::to_string(dim) +
                      ", tag " + std::to_string(tag) +
                      "), which a region or another entry names already; MSH keeps one name");
      continue;
    }
    check(name);
    out.push_back({dim, tag, name});
  }
  return out;
}

inline void emit_physical_names(Sink& s, const std::vector<PhysicalName>& names) {
  if (names.empty()) return;
  s.put("$PhysicalNames\n" + std::to_string(names.size()) + "\n");
  for (const auto& n : names)
    s.put(std::to_string(n.dim) + " " + std::to_string(n.tag) + " \"" + n.name + "\"\n");
  s.put("$EndPhysicalNames\n");
}

// One $NodeData / $ElementData section (float64, int32 tags 1..rows in binary); noted and
// skipped when it has no 1..9 components; throws for differing component counts per block or
// a name with a quote or newline.
inline void emit_msh_data(Sink& s, bool binary, bool elements, const std::string& name,
                          const std::vector<const Array*>& parts, const std::string& path,
                          std::vector<std::string>& notes) {
  const char* kind = elements ? "ElementData" : "NodeData";
  const auto what = std::string(elements ? "cell_data '" : "point_data '") + name + "'";
  std::int64_t rows = 0, comps = 0;
  for (const auto* p : parts) {
    const std::int64_t c = p->dim(0) ? static_cast<std::int64_t>(p->size()) / p->dim(0) : 1;
    if (comps && c != comps)
      throw WriteError(path + ": " + what + " has different component counts per block");
    comps = c;
    rows += p->dim(0);
  }
  if (comps < 1 || comps > 9) {
    notes.push_back(what + " is not written: " + std::to_string(comps) +
                    " components (MSH data holds 1..9)");
    return;
  }
  if (!parts.empty() && parts[0]->dtype() != kFloat64)
    notes.push_back(what + " written as float64 (MSH data holds doubles only)");
  if (name.find('"') != std::string::npos || name.find('\n') != std::string::npos)
    throw WriteError(path + ": " + what +
                     ": the name holds a quote or newline, which MSH cannot hold");
  s.put("$" + std::string(kind) + "\n1\n\"" + name + "\"\n1\n0\n3\n0\n" + std::to_string(comps) +
        "\n" + std::to_string(rows) + "\n");
  std::int32_t tag = 1;
  for (const auto* p : parts) {
    for (std::int64_t i = 0; i < p->dim(0); ++i) {
      if (binary) {
        s.le(tag++);
        for (std::int64_t k = 0; k < comps; ++k)
          s.le(value_at(*p, static_cast<std::size_t>(i * comps + k)));
      } else {
        s.text(tag++);
        for (std::int64_t k = 0; k < comps; ++k) {
          s.put(' ');
          s.text(value_at(*p, static_cast<std::size_t>(i * comps + k)));
        }
        s.put('\n');
      }
      s.maybe_flush();
    }
  }
  if (binary) s.put('\n');
  s.put("$End" + std::string(kind) + "\n");
}

// The Gmsh element type of block `b` of `m`; a WriteError naming the file (`path`) and the block
// when it has none (ragged blocks, types Gmsh lacks, a node count that does not match).
inline GmshType gmsh_type_of_block(const Mesh& m, std::size_t b, const std::string& path) {
  const auto& blk = m.cells[b];
  const auto t = gmsh_type_of(blk);
  if (!t)
    throw WriteError(path + ": cells[" + std::to_string(b) + "] (" + blk.type + ", " +
                     (blk.ragged() ? std::string("ragged")
                                   : std::to_string(blk.connectivity.dim(1)) + " nodes") +
                     ") has no Gmsh element type; write it as VTU");
  return *t;
}

}  // namespace meshdock::mesh::wr
