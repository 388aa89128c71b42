// Gmsh MSH, read the way meshio reads it: 4.1, 4.0, 3.0, 2.2 / 2.1 / 2.0, ASCII and binary (either
// endianness), and the legacy MSH 1 ($NOD / $ELM, ascii). Points in file order, connectivity
// mapped from node tags to 0-based indices and permuted from Gmsh's node order to meshio's, one
// block per (entity, type) for 4.x and per run of one type for 3.0 / 2.x / 1, cell_data
// gmsh:physical / gmsh:geometrical, point_data gmsh:dim_tags (4.1), field_data name -> [tag, dim]
// from $PhysicalNames, one region per named physical group, and $NodeData / $ElementData as
// point_data / cell_data (float64, mapped through node / element tags). The version on the
// $MeshFormat line is a number ("2.200000" is 2.2); "4" is 4.0, as gmsh itself reads it.
// Partitioned 4.x files read as their unpartitioned twin: groups and model entities from
// $PartitionedEntities, gmsh:partition added, the interface / ghost elements gmsh adds dropped
// (noted); partitioned 3.0 files likewise, from the partitions after each element's nodes
// (3.0 names no parent entity), and partitioned 2.2 files from each element's tags (gmsh writes
// no interface or ghost elements there). A 4.x file with no $Nodes / $Elements (gmsh -0) is an
// empty mesh.
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/parallel.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

struct PhysicalName {
  int dim;
  std::int64_t tag;
  std::string name;
};

// Node tag -> 0-based point index. Dense when tags are compact, hashed otherwise, so a file
// with tag 10^12 cannot make us allocate terabytes.
class TagMap {
 public:
  // `what` names the tags in errors ("node", "element"). `points` (nodes only; 3 per tag): a tag
  // defined twice at the same coordinates is the same node written twice (gmsh 4.11 does that
  // for the nodes two recombined volumes share): the later definition is used, the earlier left
  // unreferenced, as meshio reads it, and counted in duplicates(). Anywhere else, or without
  // `points`, a tag defined twice is an error.
  void build(std::span<const std::int64_t> tags, Cursor& c, const char* what = "node",
             const double* points = nullptr) {
    duplicates_ = 0;
    // Tags first, first + 1, ... (what gmsh and meshio write): the index is an offset away.
    count_ = static_cast<std::int64_t>(tags.size());
    first_ = tags.empty() ? 0 : tags.front();
    consecutive_ = first_ >= 0;
    for (std::size_t i = 0; consecutive_ && i < tags.size(); ++i)
      consecutive_ = static_cast<std::uint64_t>(tags[i]) - static_cast<std::uint64_t>(first_) == i;
    if (consecutive_) return;
    std::int64_t max_tag = 0;
    for (auto t : tags) {
      if (t < 0) c.fail(std::string("negative ") + what + " tag " + std::to_string(t));
      max_tag = std::max(max_tag, t);
    }
    // Row i defines tag again after row `before`.
    const auto again = [&](std::int64_t before, std::size_t i) {
      const auto at = [&](std::size_t r) {
        std::string out = "(";
        for (int k = 0; k < 3; ++k) {
          char buf[32];
          const auto end = std::to_chars(buf, buf + sizeof buf, points[3 * r + k]).ptr;
          out.append(buf, end).append(k < 2 ? ", " : ")");
        }
        return out;
      };
      const auto b = static_cast<std::size_t>(before);
      // The cursor is past the section by now: the message says which of its rows.
      const std::string twice = std::string(what) + " tag " + std::to_string(tags[i]) +
                                " is defined twice (" + what + "s " + std::to_string(b + 1) +
                                " and " + std::to_string(i + 1) + " of the section)";
      if (!points) c.fail(twice);
      if (std::memcmp(points + 3 * b, points + 3 * i, 3 * sizeof(double)) != 0)
        c.fail(twice + ", at " + at(b) + " and at " + at(i));
      if (duplicates_++ == 0) first_duplicate_ = tags[i];
    };
    dense_ = max_tag <= static_cast<std::int64_t>(4 * tags.size() + 1024);
    if (dense_) {
      index_.assign(static_cast<std::size_t>(max_tag) + 1, -1);
      for (std::size_t i = 0; i < tags.size(); ++i) {
        auto& slot = index_[static_cast<std::size_t>(tags[i])];
        if (slot >= 0) again(slot, i);
        slot = static_cast<std::int64_t>(i);
      }
    } else {
      hashed_.reserve(tags.size());
      for (std::size_t i = 0; i < tags.size(); ++i) {
        auto [it, fresh] = hashed_.emplace(tags[i], static_cast<std::int64_t>(i));
        if (!fresh) {
          again(it->second, i);
          it->second = static_cast<std::int64_t>(i);
        }
      }
    }
  }
  // Tags build() found defined twice at the same coordinates, and the first of them.
  std::size_t duplicates() const { return duplicates_; }
  std::int64_t first_duplicate() const { return first_duplicate_; }
  // -1 when the tag is not a node.
  std::int64_t find(std::int64_t tag) const {
    if (consecutive_) {
      // Unsigned, so a tag below first_ wraps to a huge value (no signed overflow).
      const auto i = static_cast<std::uint64_t>(tag) - static_cast<std::uint64_t>(first_);
      return i < static_cast<std::uint64_t>(count_) ? static_cast<std::int64_t>(i) : -1;
    }
    if (dense_) {
      return tag >= 0 && static_cast<std::size_t>(tag) < index_.size()
                 ? index_[static_cast<std::size_t>(tag)]
                 : -1;
    }
    auto it = hashed_.find(tag);
    return it == hashed_.end() ? -1 : it->second;
  }
  // Maps the node tags of n binary rows [element tag, npc node tags] (8 bytes each, native
  // order) to indices in out (n * npc). False when a tag is not a node (out is then partial).
  bool map_rows(const char* rows, std::size_t n, std::size_t npc, std::int64_t* out) const {
    if (consecutive_) {
      switch (npc) {  // the common shapes with a constant row length, which the loop unrolls
        case 4:
          return map_consecutive<4>(rows, n, 4, out);
        case 3:
          return map_consecutive<3>(rows, n, 3, out);
        case 8:
          return map_consecutive<8>(rows, n, 8, out);
        default:
          return map_consecutive<0>(rows, n, npc, out);
      }
    }
    const std::size_t stride = (npc + 1) * 8;
    for (std::size_t e = 0; e < n; ++e) {
      for (std::size_t k = 0; k < npc; ++k) {
        std::int64_t tag;
        std::memcpy(&tag, rows + e * stride + (k + 1) * 8, 8);
        const auto idx = find(tag);
        if (idx < 0) return false;
        out[e * npc + k] = idx;
      }
    }
    return true;
  }

 private:
  // No branch per value: a tag out of range is noted, and the rows are judged once at the end.
  template <std::size_t N>
  bool map_consecutive(const char* rows, std::size_t n, std::size_t npc, std::int64_t* out) const {
    if constexpr (N != 0) npc = N;
    const std::size_t stride = (npc + 1) * 8;
    const auto first = static_cast<std::uint64_t>(first_);
    const auto count = static_cast<std::uint64_t>(count_);
    bool bad = false;
    for (std::size_t e = 0; e < n; ++e) {
      for (std::size_t k = 0; k < npc; ++k) {
        std::uint64_t tag;
        std::memcpy(&tag, rows + e * stride + (k + 1) * 8, 8);
        const std::uint64_t i = tag - first;  // unsigned: a tag below first wraps past count
        bad |= i >= count;
        out[e * npc + k] = static_cast<std::int64_t>(i);
      }
    }
    return !bad;
  }

  bool consecutive_ = false;
  std::int64_t first_ = 0, count_ = 0;
  bool dense_ = true;
  std::vector<std::int64_t> index_;
  std::unordered_map<std::int64_t, std::int64_t> hashed_;
  std::size_t duplicates_ = 0;
  std::int64_t first_duplicate_ = 0;
};

// An entity of $PartitionedEntities: a piece, in one partition, of a model entity (the parent,
// of the same dimension, or higher for the interfaces gmsh adds between partitions).
struct PartitionedEntity {
  int parent_dim = 0;
  int parent_tag = 0;
  int partition = 0;        // the first listed (an entity on a partition boundary lists several)
  std::vector<int> others;  // the partitions listed after it
  std::vector<int> physicals;
};

// A block of elements as read, before node tags are mapped.
struct RawBlock {
  GmshType type;
  int entity_dim = 0;
  int entity_tag = 0;
  Array conn;      // (n, nodes) int64, still node *tags*
  Array physical;  // 2.2 only: int32 per element, the arrays cell_data gets
  Array geometrical;
  Array partition;  // partitioned 3.0 / 2.2 only: int64 per element, cell_data gmsh:partition
  std::vector<std::int64_t> element_tags;  // only when the file has $ElementData
  std::size_t at = 0;          // byte offset where the block starts (line computed on errors only)
  const char* rows = nullptr;  // 4.1: the block's element rows (binary) / text (ascii)
  bool mapped = false;         // conn already holds point indices (binary 4.1, mapped as read)
};

// One $NodeData / $ElementData section: entity tags and their values, before tags are mapped.
struct DataSection {
  std::string name;
  bool elements = false;
  std::int64_t components = 1;
  std::int64_t step = 0;
  std::size_t at = 0;  // byte offset of the section, for errors
  std::vector<std::int64_t> tags;
  std::vector<double> values;  // tags.size() * components
};

// The versions read, as the errors list them.
constexpr const char* kVersionsRead = "4.1, 4.0, 3.0, 2.2, 2.1, 2.0 and 1 (no $MeshFormat)";

// The version on the $MeshFormat line as a number times 10 (41, 40, 22, 21, 20, 30, ...): gmsh
// writes it with printf ("2.2", "4", "2.200000"); -1 when it is not a number.
int version_number(std::string_view text) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !(v >= 0 && v < 1000)) return -1;
  const double tenths = v * 10;
  const auto rounded = static_cast<int>(tenths + 0.5);
  // Only a version with one decimal is one gmsh wrote ("2.25" is not 2.2 or 2.3).
  return rounded - tenths < 1e-6 && tenths - rounded < 1e-6 ? rounded : -1;
}

class MshReader {
 public:
  // `file`, when the data is a mapped file, lets the parse drop the pages it is done with.
  MshReader(std::string_view data, const std::string& name, MappedFile* file = nullptr)
      : c_(data, name, file ? file->progress() : nullptr), file_(file) {}

  Mesh read() {
    bool have_format = false, have_nodes = false, have_elements = false;
    // A UTF-8 byte-order mark (Windows editors write one) marks the encoding and is none of the
    // file's text: skipped at byte 0 only, as the XML and surface readers do, lines counted as
    // the file's. msh_access finds $MeshFormat past it.
    c_.seek(utf8_bom(c_.data()));
    while (true) {
      const auto header = c_.nonempty_line();
      if (header.empty()) break;
      if (header.front() != '$') {
        c_.fail("expected a section header like $Nodes, found '" +
                std::string(header.substr(0, 40)) + "'");
      }
      release_behind();
      const std::string section(header.substr(1));
      if (section == "MeshFormat") {
        // A second one is read again, as before (gmsh appends views to a mesh file after a
        // $MeshFormat of their own); MSH 1 has none.
        if (version_ == 1) c_.fail("$MeshFormat in an MSH 1 file (after $NOD)");
        read_format();
        have_format = true;
        continue;
      }
      if (!have_format) {
        // MSH 1 has no $MeshFormat: its sections are $NOD and $ELM.
        if (section == "NOD" && version_ == 0) version_ = 1;
        if (version_ == 1) {
          if (section == "NOD") {
            if (have_nodes) c_.fail("a second $NOD section");
            read_nodes1();
            have_nodes = true;
          } else if (section == "ELM") {
            if (!have_nodes) c_.fail("$ELM comes before $NOD");
            if (have_elements) c_.fail("a second $ELM section");
            read_elements2(true);
            have_elements = true;
          } else {
            skip_section(section);
            mesh_.notes.push_back("skipped section $" + section);
          }
          continue;
        }
        // $Comments (or any section gmsh does not know) may come first; one gmsh reads
        // means the $MeshFormat line is missing.
        static const std::set<std::string> kNeedFormat = {
            "PhysicalNames",   "Entities",    "Nodes", "Elements",
            "NodeData",        "ElementData", "ELM",   "PartitionedEntities",
            "ElementNodeData", "Periodic"};
        if (kNeedFormat.count(section))
          c_.fail("the file does not start with $MeshFormat (found $" + section + ")");
        skip_section(section);
        if (section != "Comments") mesh_.notes.push_back("skipped section $" + section);
        continue;
      }
      if (section == "PhysicalNames") {
        read_physical_names();
      } else if (section == "PartitionedEntities" && v4_) {
        read_partitioned_entities();
      } else if (section == "ParametricNodes") {
        // MSH 2.2 with Mesh.SaveParametric writes this instead of $Nodes.
        c_.fail(
            "parametric nodes ($ParametricNodes, gmsh's Mesh.SaveParametric) are not supported");
      } else if (section == "Entities") {
        if (v4_)
          read_entities();
        else if (version_ == 30)
          read_entities3();
        else
          skip_section(section);
      } else if (section == "Nodes") {
        v4_ ? read_nodes4() : version_ == 30 ? read_nodes3() : read_nodes2();
        have_nodes = true;
      } else if (section == "Elements") {
        if (!have_nodes) c_.fail("$Elements comes before $Nodes");
        // 2.x and 3.0 gather a section's rows per block and move them into the blocks at its
        // end (flush_pending), once: a second section would meet blocks already moved.
        if (have_elements && !v4_)
          c_.fail("a second $Elements section (a " + std::string(version_ == 30 ? "3.0" : "2.x") +
                  " file has one)");
        v4_ ? read_elements4() : version_ == 30 ? read_elements3() : read_elements2();
        have_elements = true;
      } else if (section == "Periodic") {
        if (streams()) populate_rest();
        read_periodic();
      } else if (section == "NodeData" || section == "ElementData") {
        if (!have_nodes || (section == "ElementData" && !have_elements))
          c_.fail("$" + section + " comes before the entities it refers to");
        if (streams()) populate_rest();  // values are read through the mapping
        read_data(section == "ElementData");
      } else {
        // Gmsh: "any section with an unrecognized header is simply ignored".
        skip_section(section);
        if (section != "Comments") mesh_.notes.push_back("skipped section $" + section);
      }
    }
    if (!have_format && version_ != 1)
      throw ReadError(c_.file() + ": empty file or no $MeshFormat");
    if (v4_ && have_entities_ && !have_nodes && !have_elements) {
      // A geometry-only file (gmsh -0): 4.x writes no $Nodes / $Elements where 2.2 writes empty
      // ones. Read as the empty mesh its 2.2 twin gives, with the physical names.
      mesh_.points = Array::of<double>({0, 3});
      mesh_.notes.push_back("no $Nodes or $Elements section (a geometry-only file): an empty mesh");
      finish();
      return std::move(mesh_);
    }
    if (!have_nodes)
      throw ReadError(c_.file() + (version_ == 1 ? ": no $NOD section" : ": no $Nodes section"));
    if (!have_elements)
      throw ReadError(c_.file() + (version_ == 1 ? ": no $ELM section" : ": no $Elements section"));
    release_behind();  // the whole file: what finish() allocates comes on top of the arrays only
    finish();
    return std::move(mesh_);
  }

 private:
  // ---- sections ---------------------------------------------------------------------------
  void read_format() {
    const auto version = c_.token();
    format_at_ = c_.offset();
    format_text_ = std::string(version.substr(0, 20));
    const int file_type = c_.number<int>("file-type");
    const int data_size = c_.number<int>("data-size");
    c_.next_line();
    version_ = version_number(version);
    if (version_ == 41 || version_ == 40) {
      v4_ = true;
    } else if (version_ == 22 || version_ == 21 || version_ == 20 || version_ == 30) {
      v4_ = false;
    } else {
      c_.fail("MSH version " + std::string(version.substr(0, 20)) + " is not supported (" +
              kVersionsRead + " are read)");
    }
    if (file_type != 0 && file_type != 1)
      c_.fail("file-type " + std::to_string(file_type) + " is not 0 (ascii) or 1 (binary)");
    binary_ = file_type == 1;
    if (data_size != 8)
      c_.fail("data-size " + std::to_string(data_size) + " is not supported (8 is)");
    if (binary_) {
      const auto one = c_.binary_one<std::int32_t>(false, "endianness marker");
      if (one == 1) {
        swap_ = false;
      } else if (Cursor::byteswap(one) == 1) {
        swap_ = true;
      } else {
        c_.fail_at_byte("endianness marker is " + std::to_string(one) + ", expected 1");
      }
      c_.next_line();
    }
    c_.expect_line("$EndMeshFormat");
    // Binary 4.1 was mapped without its pages (msh_access). In native order it streams its node
    // and element blocks with pread and maps the rest as it goes; swapped, it parses through the
    // mapping, so all of it is mapped now, in one call (a no-op for the other accesses).
    if (!streams()) populate_rest();
  }

  // Binary 4.1 in native byte order, read from a file: big blocks come through read_at.
  bool streams() const { return file_ && binary_ && version_ == 41 && !swap_; }
  void populate_rest() const {
    if (file_) file_->populate(c_.offset(), c_.data().size());
  }

  // $Periodic: links "dim tag masterTag", an optional affine transform (16 values) and (node,
  // master node) tag pairs, in three layouts (gmsh's writers; meshio reads the same):
  //   text (2.x and 3.0, in text even in their binary files, and 4.0 ascii): an optional
  //     "Affine v1 .. v16" line before the pair count;
  //   4.1 (ascii and binary: counts and node tags size_t, entity tags int): "numAffine values",
  //     0 or 16, before the pair count;
  //   4.0 binary: link count and entity and node tags int, pair count long, a long -1 and the
  //     16 values before it where there is a transform.
  // Kept as node tags until finish() maps them to points (the section may come before $Nodes).
  void read_periodic() {
    const bool v41 = version_ == 41;
    const bool bin = binary_ && v4_;  // int_value and its kin follow binary_
    const auto count = [&](const char* what) -> std::uint64_t {
      if (!bin) return c_.number<std::uint64_t>(what);
      return v41 ? size_t_value(what) : non_negative(int_value(what), what);
    };
    // The fewest bytes a link and a node pair take, for checked_count.
    const std::size_t link_bytes = bin ? (v41 ? 28 : 20) : 8, pair_bytes = bin ? (v41 ? 16 : 8) : 4;
    const auto links =
        checked_count(count("number of periodic links"), link_bytes, "periodic link count");
    for (std::size_t l = 0; l < links; ++l) {
      std::array<std::int64_t, 4> link{};
      for (int k = 0; k < 3; ++k)
        link[k] = bin ? int_value("periodic entity") : c_.number<std::int64_t>("periodic entity");
      if (link[0] < 0 || link[0] > 3)
        c_.fail("periodic entity dimension " + std::to_string(link[0]) + " is not 0..3");
      std::array<double, 16> affine;
      affine.fill(std::numeric_limits<double>::quiet_NaN());
      std::uint64_t pairs = 0;
      if (v41) {
        read_affine(affine, count("number of affine values"), bin);
        pairs = count("number of periodic nodes");
      } else if (bin) {
        pairs = read_affine40(affine);
      } else {
        const auto at = c_.offset();
        if (c_.token() == "Affine")
          read_affine(affine, 16, false);
        else
          c_.seek(at);
        pairs = count("number of periodic nodes");
      }
      const auto n = checked_count(pairs, pair_bytes, "periodic node count");
      for (std::size_t i = 0; i < 2 * n; ++i) periodic_tags_.push_back(periodic_node(bin, v41));
      link[3] = static_cast<std::int64_t>(n);
      periodic_links_.push_back(link);
      periodic_affine_.insert(periodic_affine_.end(), affine.begin(), affine.end());
    }
    c_.expect_line("$EndPeriodic");
  }
  // `n` affine values (0 or 16: a transform is a 4x4 matrix) into `affine`.
  void read_affine(std::array<double, 16>& affine, std::uint64_t n, bool bin) {
    if (n != 0 && n != 16)
      c_.fail(std::to_string(n) + " affine values (a periodic link has 0 or 16)");
    for (std::uint64_t k = 0; k < n; ++k)
      affine[k] = bin ? double_value("affine value") : c_.number<double>("affine value");
  }
  // 4.0 binary: the long before the pairs is their count, or -1 when 16 affine values and then
  // the count follow. Returns the count.
  std::uint64_t read_affine40(std::array<double, 16>& affine) {
    const auto first = c_.binary_one<std::int64_t>(swap_, "number of periodic nodes");
    if (first >= 0) return static_cast<std::uint64_t>(first);
    if (first != -1)
      c_.fail("periodic node count " + std::to_string(first) +
              " is negative (-1 marks 16 affine values)");
    read_affine(affine, 16, true);
    return non_negative(c_.binary_one<std::int64_t>(swap_, "number of periodic nodes"),
                        "number of periodic nodes");
  }
  std::int64_t periodic_node(bool bin, bool v41) {
    if (!bin) return c_.number<std::int64_t>("periodic node");
    return v41 ? static_cast<std::int64_t>(size_t_value("periodic node"))
               : int_value("periodic node");
  }
  std::uint64_t non_negative(std::int64_t n, const char* what) {
    if (n < 0) c_.fail(std::string(what) + " " + std::to_string(n) + " is negative");
    return static_cast<std::uint64_t>(n);
  }

  // The links as field data: gmsh:periodic (links, 4) [dim, tag, master tag, node pairs],
  // gmsh:periodic_affine (links, 16) (NaN where the file gives none), gmsh:periodic_nodes
  // (pairs, 2) [point, master point]; pairs naming a node the file does not hold are dropped
  // (noted: gmsh lists the nodes of entities it did not save).
  void assemble_periodic() {
    if (periodic_links_.empty()) return;
    std::vector<std::int64_t> nodes;
    nodes.reserve(periodic_tags_.size());
    std::size_t dropped = 0, at = 0;
    for (auto& link : periodic_links_) {
      std::int64_t kept = 0;
      for (std::int64_t i = 0; i < link[3]; ++i, at += 2) {
        const auto a = node_map_.find(periodic_tags_[at]);
        const auto b = node_map_.find(periodic_tags_[at + 1]);
        if (a < 0 || b < 0) {
          ++dropped;
          continue;
        }
        nodes.push_back(a);
        nodes.push_back(b);
        ++kept;
      }
      link[3] = kept;
    }
    const auto k = static_cast<std::int64_t>(periodic_links_.size());
    std::vector<std::int64_t> flat;
    for (const auto& link : periodic_links_) flat.insert(flat.end(), link.begin(), link.end());
    mesh_.field_data["gmsh:periodic"] = Array::from_vector(flat, {k, 4});
    mesh_.field_data["gmsh:periodic_affine"] = Array::from_vector(periodic_affine_, {k, 16});
    const auto n = static_cast<std::int64_t>(nodes.size() / 2);
    mesh_.field_data["gmsh:periodic_nodes"] = Array::from_vector(nodes, {n, 2});
    if (dropped) {
      mesh_.notes.push_back("$Periodic: dropped " + std::to_string(dropped) +
                            " node pairs naming nodes the file does not hold");
    }
  }

  void read_physical_names() {
    const auto n = c_.number<std::int64_t>("number of physical names");
    if (n < 0 || static_cast<std::size_t>(n) > c_.remaining() / 6)
      c_.fail("physical name count " + std::to_string(n) + " is larger than the file");
    for (std::int64_t i = 0; i < n; ++i) {
      const int dim = c_.number<int>("physical dimension");
      const auto tag = c_.number<std::int64_t>("physical tag");
      auto name = Cursor::trim(c_.rest_of_line());
      if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
        name = name.substr(1, name.size() - 2);
      if (dim < 0 || dim > 3) c_.fail("physical dimension " + std::to_string(dim) + " is not 0..3");
      names_.push_back({dim, tag, std::string(name)});
    }
    c_.expect_line("$EndPhysicalNames");
  }

  std::uint64_t size_t_value(const char* what) {
    return binary_ ? c_.binary_one<std::uint64_t>(swap_, what) : c_.number<std::uint64_t>(what);
  }
  std::int32_t int_value(const char* what) {
    return binary_ ? c_.binary_one<std::int32_t>(swap_, what) : c_.number<std::int32_t>(what);
  }
  double double_value(const char* what) {
    return binary_ ? c_.binary_one<double>(swap_, what) : c_.number<double>(what);
  }
  // A count from the file, checked against the bytes left: each item needs at least
  // `min_bytes` (so a hostile header cannot make us allocate what the file cannot hold).
  std::size_t checked_count(std::uint64_t n, std::size_t min_bytes, const char* what) {
    if (n > c_.remaining() / min_bytes) {
      c_.fail(std::string(what) + " " + std::to_string(n) + " is more than the remaining " +
              std::to_string(c_.remaining()) + " bytes can hold");
    }
    return static_cast<std::size_t>(n);
  }

  void read_entities() {
    have_entities_ = true;
    each_entity("entity", binary_ ? 20 : 4, [&](int d, int tag) {
      read_entity_rest(d, entity_physicals_[{d, tag}]);
    });
    c_.expect_line("$EndEntities");
  }

  // The body of $Entities and $PartitionedEntities: the counts of points, curves, surfaces and
  // volumes, then each entity's tag, and read_rest(dim, tag) reads what follows it. `kind`
  // names the counts and tags in errors; an entity takes at least `min_bytes`.
  template <class F>
  void each_entity(const std::string& kind, std::size_t min_bytes, F&& read_rest) {
    const auto count = kind + " count", tag = kind + " tag";
    std::uint64_t counts[4];
    for (auto& n : counts) n = size_t_value(count.c_str());
    for (int d = 0; d < 4; ++d) {
      const auto n = checked_count(counts[d], min_bytes, count.c_str());
      for (std::size_t i = 0; i < n; ++i) read_rest(d, int_value(tag.c_str()));
    }
  }

  // What follows the tags of an entity in $Entities and $PartitionedEntities: its box (4.1
  // gives a point its coordinates, 4.0 a degenerate box like every entity's), its physical tags
  // (appended to `physicals`) and, but for points, its bounding entities (skipped).
  void read_entity_rest(int dim, std::vector<int>& physicals) {
    for (int k = 0; k < (dim == 0 && version_ == 41 ? 3 : 6); ++k) double_value("bounding box");
    const auto np = checked_count(size_t_value("number of physical tags"), binary_ ? 4 : 1,
                                  "physical tag count");
    for (std::size_t k = 0; k < np; ++k) physicals.push_back(int_value("physical tag"));
    if (dim > 0) {
      const auto nb = checked_count(size_t_value("number of bounding entities"), binary_ ? 4 : 1,
                                    "bounding entity count");
      for (std::size_t k = 0; k < nb; ++k) int_value("bounding entity");
    }
  }

  // $PartitionedEntities (gmsh -part, 4.1 and 4.0): numPartitions; numGhostEntities and
  // (ghostEntityTag partition) pairs; counts of points, curves, surfaces, volumes; per entity
  // "tag parentDim parentTag numPartitions partitionTag... box numPhysicals physical..." and,
  // but for points, "numBounds bound...". The box is a point's X Y Z in 4.1, 6 values
  // otherwise; binary: tags int, counts size_t, box double. Once this section is read, the
  // node and element blocks name these entities, not the model's ones of $Entities.
  void read_partitioned_entities() {
    num_partitions_ = size_t_value("number of partitions");
    const auto ng = checked_count(size_t_value("number of ghost entities"), binary_ ? 8 : 4,
                                  "ghost entity count");
    for (std::size_t i = 0; i < ng; ++i) {
      ghost_tags_.insert(int_value("ghost entity tag"));
      int_value("ghost entity partition");
    }
    each_entity("partitioned entity", binary_ ? 40 : 10, [&](int d, int tag) {
      PartitionedEntity e;
      e.parent_dim = int_value("parent dimension");
      e.parent_tag = int_value("parent tag");
      if (e.parent_dim < d || e.parent_dim > 3)
        c_.fail("partitioned entity (" + std::to_string(d) + ", " + std::to_string(tag) +
                ") has parent dimension " + std::to_string(e.parent_dim) + ", not " +
                std::to_string(d) + "..3");
      const auto np =
          checked_count(size_t_value("number of partitions"), binary_ ? 4 : 1, "partition count");
      for (std::size_t k = 0; k < np; ++k) {
        const int part = int_value("partition tag");
        if (k == 0)
          e.partition = part;
        else
          e.others.push_back(part);
      }
      read_entity_rest(d, e.physicals);
      partitioned_[{d, tag}] = std::move(e);
    });
    c_.expect_line("$EndPartitionedEntities");
    partitioned_file_ = true;
  }

  // The partitioned entity (dim, tag) of a partitioned file; nullptr when there is none.
  const PartitionedEntity* partitioned_entity(int dim, int tag) const {
    if (!partitioned_file_) return nullptr;
    const auto it = partitioned_.find({dim, tag});
    return it == partitioned_.end() ? nullptr : &it->second;
  }

  // Partitioned files only: whether a block read is left out of the mesh. Gmsh adds elements
  // of its own there (an unpartitioned save of the same mesh has none): with
  // Mesh.PartitionCreateTopology (the default), elements on the interfaces between partitions,
  // whose entity is a piece of a *higher*-dimensional model entity (the parent); with
  // Mesh.PartitionCreateGhostCells, copies of other partitions' elements on ghost entities.
  bool drop_partition_block(const RawBlock& blk) {
    if (!partitioned_file_) return false;
    const auto n = static_cast<std::size_t>(blk.conn.dim(0));
    if (const auto* e = partitioned_entity(blk.entity_dim, blk.entity_tag)) {
      if (e->parent_dim == blk.entity_dim) return false;
      dropped_interface_ += n;
      return true;
    }
    if (!ghost_tags_.count(blk.entity_tag)) return false;
    dropped_ghost_ += n;
    return true;
  }

  void read_nodes4() {
    if (version_ == 40) return read_nodes40();
    const auto blocks = size_t_value("number of node blocks");
    const auto total =
        checked_count(size_t_value("number of nodes"), binary_ ? 32 : 8, "node count");
    size_t_value("min node tag");
    size_t_value("max node tag");
    mesh_.points = Array::of<double>({static_cast<std::int64_t>(total), 3});
    auto dim_tags = Array::of<std::int64_t>({static_cast<std::int64_t>(total), 2});
    tags_.assign(total, 0);
    double* pts = mesh_.points.as<double>();
    std::int64_t* dt = dim_tags.as<std::int64_t>();
    std::size_t idx = 0;
    const auto nblocks = checked_count(blocks, binary_ ? 20 : 8, "node block count");
    for (std::size_t b = 0; b < nblocks; ++b) {
      const auto [dim, entity] = block_entity();
      const auto n = node_block_count(b, total - idx);
      if (binary_) {
        c_.need(n * 32, "node block");
        // size_t tags land directly in the int64 tag array (same width; one memcpy per block).
        binary_into(tags_.data() + idx, n, "node tags");
        binary_into(pts + 3 * idx, 3 * n, "node coordinates");
      } else {
        for (std::size_t i = 0; i < n; ++i) tags_[idx + i] = c_.number<std::int64_t>("node tag");
        for (std::size_t i = 0; i < 3 * n; ++i) pts[3 * idx + i] = c_.number<double>("coordinate");
      }
      // A partitioned file's node sits on a partitioned entity: the model entity it is a piece
      // of is what the unpartitioned file names.
      const auto* pe = partitioned_entity(dim, entity);
      if (partitioned_file_ && !pe && ghost_tags_.count(entity)) ghost_nodes_ += n;
      for (std::size_t i = 0; i < n; ++i) {
        dt[2 * (idx + i)] = pe ? pe->parent_dim : dim;
        dt[2 * (idx + i) + 1] = pe ? pe->parent_tag : entity;
      }
      idx += n;
    }
    end_nodes4(idx, total);
    mesh_.point_data["gmsh:dim_tags"] = std::move(dim_tags);
  }

  // A 4.x block's entity, (dimension, tag): 4.1 writes "dim tag", 4.0 "tag dim".
  std::pair<int, int> block_entity() {
    if (version_ == 41) {
      const int dim = int_value("entity dimension");
      return {dim, int_value("entity tag")};
    }
    const int tag = int_value("entity tag");
    return {int_value("entity dimension"), tag};
  }

  // The rest of a 4.x node block's header, "parametric numNodes": the count, which must fit in
  // the `left` nodes the $Nodes header leaves.
  std::uint64_t node_block_count(std::size_t block, std::size_t left) {
    const int parametric = int_value("parametric flag");
    const auto n = size_t_value("nodes in block");
    if (parametric != 0) c_.fail("parametric nodes are not supported");
    if (n > left)
      c_.fail("node block " + std::to_string(block) + " holds " + std::to_string(n) +
              " nodes, more than the " + std::to_string(left) + " the header leaves");
    return n;
  }

  // The tag -> point map of the $Nodes just read (tags_, mesh_.points).
  void build_node_map() {
    node_map_.build(tags_, c_, "node", mesh_.points.as<double>());
    if (const auto n = node_map_.duplicates())
      mesh_.notes.push_back("msh: " + std::to_string(n) + " node tag" + (n > 1 ? "s are" : " is") +
                            " defined twice at the same coordinates (the first: " +
                            std::to_string(node_map_.first_duplicate()) +
                            "); cells use the later definition, the earlier points are left "
                            "unreferenced, as meshio reads them");
  }

  // The end line of a 1 / 2.x / 3.0 section of `total` rows (its count): a section longer than
  // its count gets a message that says which count.
  void expect_end(std::string_view line, std::uint64_t total, const char* rows) {
    c_.expect_line(line, "after the " + std::to_string(total) + " " + rows + " its count gives");
  }

  // The end of a 4.x $Nodes: its blocks held the `total` its header promised.
  void end_nodes4(std::size_t idx, std::size_t total) {
    if (idx != total)
      c_.fail("$Nodes header promises " + std::to_string(total) + " nodes but its blocks hold " +
              std::to_string(idx));
    c_.expect_line("$EndNodes");
    build_node_map();
  }

  // MSH 4.0: "numEntityBlocks numNodes", then blocks "tagEntity dimEntity parametric numNodes"
  // (int int int size_t) of "tag x y z" rows (binary: int32 tag, 3 doubles). No
  // gmsh:dim_tags, as meshio's 4.0 reader gives none.
  void read_nodes40() {
    const auto blocks = size_t_value("number of node blocks");
    const auto total =
        checked_count(size_t_value("number of nodes"), binary_ ? 28 : 8, "node count");
    mesh_.points = Array::of<double>({static_cast<std::int64_t>(total), 3});
    tags_.assign(total, 0);
    double* pts = mesh_.points.as<double>();
    std::size_t idx = 0;
    const auto nblocks = checked_count(blocks, binary_ ? 20 : 8, "node block count");
    for (std::size_t b = 0; b < nblocks; ++b) {
      block_entity();
      const auto n = node_block_count(b, total - idx);
      for (std::size_t i = 0; i < n; ++i, ++idx) read_node_row(idx, pts);
    }
    end_nodes4(idx, total);
  }

  // One "tag x y z" row of 4.0, 3.0, 2.x and 1 into tags_[i] and point i of `pts` (binary:
  // int32 tag, 3 doubles).
  void read_node_row(std::size_t i, double* pts) {
    if (binary_) {
      tags_[i] = c_.binary_one<std::int32_t>(swap_, "node tag");
      c_.binary(pts + 3 * i, 3, swap_, "node coordinates");
    } else {
      tags_[i] = c_.number<std::int64_t>("node tag");
      for (int k = 0; k < 3; ++k) pts[3 * i + k] = c_.number<double>("coordinate");
    }
  }

  // MSH 1: "$NOD", the node count, "tag x y z" rows, "$ENDNOD" (ascii only).
  void read_nodes1() {
    const auto total = checked_count(c_.number<std::uint64_t>("number of nodes"), 8, "node count");
    mesh_.points = Array::of<double>({static_cast<std::int64_t>(total), 3});
    double* pts = mesh_.points.as<double>();
    tags_.assign(total, 0);
    for (std::size_t i = 0; i < total; ++i) read_node_row(i, pts);  // ascii: MSH 1 has no binary
    expect_end("$ENDNOD", total, "nodes");
    build_node_map();
  }

  // $Nodes of 2.x and 3.0: a count, then one row per node, "tag x y z" (binary: int32 tag, 3
  // doubles) and what `rest` reads after the coordinates; min_row: a row's fewest bytes.
  template <class Rest>
  void read_tagged_nodes(std::size_t min_row_binary, std::size_t min_row_ascii, Rest rest) {
    const auto total = checked_count(c_.number<std::uint64_t>("number of nodes"),
                                     binary_ ? min_row_binary : min_row_ascii, "node count");
    c_.next_line();
    mesh_.points = Array::of<double>({static_cast<std::int64_t>(total), 3});
    double* pts = mesh_.points.as<double>();
    tags_.assign(total, 0);
    for (std::size_t i = 0; i < total; ++i) {
      read_node_row(i, pts);
      rest();
    }
    expect_end("$EndNodes", total, "nodes");
    build_node_map();
  }

  void read_nodes2() {
    read_tagged_nodes(28, 8, [] {});
  }

  GmshType element_type(int number) {
    auto t = gmsh_type(number);
    if (!t) c_.fail("unknown Gmsh element type " + std::to_string(number));
    return *t;
  }

  // ---- $NodeData / $ElementData ------------------------------------------------------------
  // Header lines are ascii in every variant: string tags (the first is the name), real tags
  // (time), integer tags (time step, components, entity count[, partition]); then one row per
  // entity: tag (int32 in binary) and `components` doubles.
  void read_data(bool elements) {
    DataSection d;
    d.elements = elements;
    d.at = c_.offset();
    const auto nstrings =
        checked_count(c_.number<std::uint64_t>("number of string tags"), 2, "string tag count");
    c_.next_line();
    for (std::size_t i = 0; i < nstrings; ++i) {
      auto s = Cursor::trim(c_.rest_of_line());
      if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
      if (i == 0) d.name = std::string(s);
    }
    if (d.name.empty()) c_.fail("data section has no name (first string tag)");
    const auto nreals =
        checked_count(c_.number<std::uint64_t>("number of real tags"), 2, "real tag count");
    for (std::size_t i = 0; i < nreals; ++i) c_.number<double>("real tag");
    const auto nints =
        checked_count(c_.number<std::uint64_t>("number of integer tags"), 2, "integer tag count");
    std::vector<std::int64_t> ints;
    for (std::size_t i = 0; i < nints; ++i) ints.push_back(c_.number<std::int64_t>("integer tag"));
    if (ints.size() < 3)
      c_.fail("data section '" + d.name + "' has " + std::to_string(ints.size()) +
              " integer tags; time step, components and count are needed");
    d.step = ints[0];
    d.components = ints[1];
    if (d.components < 1 || d.components > 9)
      c_.fail("data section '" + d.name + "' has " + std::to_string(d.components) +
              " components (1..9 allowed)");
    const auto comps = static_cast<std::size_t>(d.components);
    const auto n = checked_count(static_cast<std::uint64_t>(std::max<std::int64_t>(ints[2], 0)),
                                 binary_ ? 4 + 8 * comps : 2 * (1 + comps), "data entry count");
    if (ints[2] < 0) c_.fail("negative data entry count " + std::to_string(ints[2]));
    d.tags.resize(n);
    d.values.resize(n * comps);
    if (binary_) {
      c_.next_line();
      for (std::size_t i = 0; i < n; ++i) {
        d.tags[i] = c_.binary_one<std::int32_t>(swap_, "data entity tag");
        c_.binary(d.values.data() + i * comps, comps, swap_, "data values");
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        d.tags[i] = c_.number<std::int64_t>("data entity tag");
        for (std::size_t k = 0; k < comps; ++k)
          d.values[i * comps + k] = c_.number<double>("data value");
      }
    }
    c_.expect_line(elements ? "$EndElementData" : "$EndNodeData");
    data_.push_back(std::move(d));
  }

  // Element tags are kept only when element data will need them: the rest of the file is
  // searched once, after the elements (searching before them scanned the whole element
  // section, a third of a binary read).
  bool later_element_data() const {
    const auto rest = c_.data().substr(c_.offset());
    static constexpr std::string_view kKey = "$ElementData";
    return memmem(rest.data(), rest.size(), kKey.data(), kKey.size()) != nullptr;
  }

  void read_elements4() {
    if (version_ == 40) return read_elements40();
    const auto nblocks = checked_count(size_t_value("number of element blocks"), binary_ ? 20 : 8,
                                       "element block count");
    const auto total = size_t_value("number of elements");
    size_t_value("min element tag");
    size_t_value("max element tag");
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < nblocks; ++b) {
      RawBlock blk = element_block(8);
      const auto n = static_cast<std::size_t>(blk.conn.dim(0));
      const std::size_t per = 1 + static_cast<std::size_t>(blk.type.nodes);
      std::int64_t* out = blk.conn.as<std::int64_t>();
      const std::size_t npc = static_cast<std::size_t>(blk.type.nodes);
      blk.rows = c_.data().data() + c_.offset();
      if (binary_) {
        // Checked once for the whole block, then one fixed-size copy per element that skips
        // the element tag.
        const char* src = c_.raw(n * per * 8, "element block");
        if ((streams() || n >= kParallelRows) && !swap_ &&
            copy_mapped_parallel(src, n, per, npc, out)) {
          blk.mapped = true;
        } else {
          // A loop of 8-byte loads, not a memcpy call per element (npc is not a constant, so
          // memcpy was a libc call for every 32 bytes: 40% of a binary read).
          const bool swap = swap_;
          for (std::size_t e = 0; e < n; ++e) {
            const char* row = src + (e * per + 1) * 8;
            for (std::size_t k = 0; k < npc; ++k) {
              std::int64_t v;
              std::memcpy(&v, row + k * 8, 8);
              out[e * npc + k] = swap ? Cursor::byteswap(v) : v;
            }
            if ((e + 1) % kReleaseRows == 0) release_range(src, row);
          }
        }
      } else if (b + 1 < nblocks || n < kParallelRows || !ascii_rows_parallel(n, npc, out)) {
        ascii_rows(n, npc, out);
      }
      seen += n;
      (drop_partition_block(blk) ? dropped_ : blocks_).push_back(std::move(blk));
    }
    end_elements4(seen, total);
    if (later_element_data()) element_tags4();
  }

  // A 4.x element block's header, its entity and "typeEle numElements", as a block whose conn
  // has the count's rows; a row takes at least 1 + nodes tags of `tag_bytes` in binary.
  RawBlock element_block(std::size_t tag_bytes) {
    RawBlock blk;
    std::tie(blk.entity_dim, blk.entity_tag) = block_entity();
    blk.type = element_type(int_value("element type"));
    blk.at = c_.offset();
    const std::size_t per = 1 + static_cast<std::size_t>(blk.type.nodes);
    const auto n = checked_count(size_t_value("elements in block"),
                                 binary_ ? tag_bytes * per : 2 * per, "element count");
    blk.conn = Array::of<std::int64_t>({static_cast<std::int64_t>(n), blk.type.nodes});
    return blk;
  }

  // The end of a 4.x $Elements: its blocks held the `total` its header promised.
  void end_elements4(std::uint64_t seen, std::uint64_t total) {
    if (seen != total)
      c_.fail("$Elements header promises " + std::to_string(total) +
              " elements but its blocks hold " + std::to_string(seen));
    c_.expect_line("$EndElements");
  }

  // MSH 4.0: "numEntityBlocks numElements", then blocks "tagEntity dimEntity typeEle
  // numElements" (int int int size_t) of "tag node..." rows (binary: int32 each). The element
  // tags are kept (4.0 is rare and small; $ElementData may refer to them).
  void read_elements40() {
    const auto nblocks = checked_count(size_t_value("number of element blocks"), binary_ ? 20 : 8,
                                       "element block count");
    const auto total = size_t_value("number of elements");
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < nblocks; ++b) {
      RawBlock blk = element_block(4);
      const auto n = static_cast<std::size_t>(blk.conn.dim(0));
      const std::size_t npc = static_cast<std::size_t>(blk.type.nodes);
      const std::size_t per = 1 + npc;
      blk.element_tags.resize(n);
      std::int64_t* out = blk.conn.as<std::int64_t>();
      if (binary_) {
        const char* rows = c_.raw(n * per * 4, "element block");
        for (std::size_t i = 0; i < n * per; ++i) {
          std::int32_t v;
          std::memcpy(&v, rows + i * 4, 4);
          if (swap_) v = Cursor::byteswap(v);
          if (i % per == 0)
            blk.element_tags[i / per] = v;
          else
            out[i / per * npc + i % per - 1] = v;
        }
      } else {
        for (std::size_t e = 0; e < n; ++e) {
          blk.element_tags[e] = c_.number<std::int64_t>("element tag");
          for (std::size_t k = 0; k < npc; ++k)
            out[e * npc + k] = c_.number<std::int64_t>("node tag");
        }
      }
      seen += n;
      (drop_partition_block(blk) ? dropped_ : blocks_).push_back(std::move(blk));
    }
    end_elements4(seen, total);
  }

  // Constant per-block columns (gmsh:physical, gmsh:geometrical): big ones on every core, where
  // faulting in the fresh pages is the cost.
  static void fill(std::int64_t* out, std::int64_t n, std::int64_t value) {
    const auto total = static_cast<std::size_t>(n);
    const std::size_t chunks = total >= kParallelRows ? 8 : 1;
    parallel_for(chunks, 0, [&](std::size_t c) {
      std::fill(out + total * c / chunks, out + total * (c + 1) / chunks, value);
    });
  }

  // A binary 4.1 block: rows copied and node tags mapped to indices in one pass, a big one over
  // every core (the pass is bound by faulting in the output, which the cores share). From a file,
  // the rows are streamed through a small buffer with pread rather than read through the mapping
  // (see MappedFile::read_at). False when a node tag is unknown: the serial copy and map_nodes
  // then give the exact error.
  bool copy_mapped_parallel(const char* src, std::size_t n, std::size_t per, std::size_t npc,
                            std::int64_t* out) {
    const std::size_t kChunks = n >= kParallelRows ? 16 : 1;  // a small block: this thread
    constexpr std::size_t kWindow = 1u << 16;                 // bytes: on the stack, stays in L2
    const std::size_t row_bytes = per * 8;
    const std::size_t window_rows = std::max<std::size_t>(1, kWindow / row_bytes);
    const auto src_at = static_cast<std::size_t>(src - c_.data().data());
    std::atomic<bool> ok{true};
    parallel_for(kChunks, 0, [&](std::size_t c) {
      const std::size_t begin = n * c / kChunks, end = n * (c + 1) / kChunks;
      alignas(8) std::array<char, kWindow> window;
      for (std::size_t r = begin; r < end && ok.load(std::memory_order_relaxed);) {
        const std::size_t rows =
            std::min(file_ && row_bytes <= kWindow ? window_rows : end - r, end - r);
        const char* at = src + r * row_bytes;
        if (file_ && row_bytes <= kWindow) {
          file_->read_at(src_at + r * row_bytes, rows * row_bytes, window.data());
          at = window.data();
        }
        if (!node_map_.map_rows(at, rows, npc, out + r * npc)) ok = false;
        r += rows;
      }
      // Whatever of these rows is in memory (a file that was read, or pages a fallback touched)
      // is dropped, as elsewhere; for rows streamed from a lazy mapping this costs nothing.
      release_range(src + begin * row_bytes, src + end * row_bytes);
    });
    return ok;
  }

  // n rows of "tag node...": the node tags go to out (n * npc), the element tags are skipped.
  void ascii_rows(std::size_t n, std::size_t npc, std::int64_t* out) {
    for (std::size_t e = 0; e < n; ++e) {
      c_.number<std::uint64_t>("element tag");
      for (std::size_t k = 0; k < npc; ++k) out[e * npc + k] = c_.number<std::int64_t>("node tag");
      if ((e + 1) % kReleaseRows == 0) release_behind();
    }
  }

  // count binary values into out. A big run in native order is read from the file with pread
  // (MappedFile::read_at), so the mapping's pages are never touched; otherwise it is copied
  // from the mapping.
  template <typename T>
  void binary_into(T* out, std::size_t count, const char* what) {
    constexpr std::size_t kReadAtBytes = 1u << 16;
    if (!file_ || swap_ || count * sizeof(T) < kReadAtBytes) {
      c_.binary(out, count, swap_, what);
      return;
    }
    const std::size_t at = c_.offset();
    c_.raw(count * sizeof(T), what);  // checks the bytes are there and steps past them
    file_->read_at(at, count * sizeof(T), reinterpret_cast<char*>(out));
  }

  // ---- memory: file pages the parse is done with leave the process (see MappedFile) ------
  static constexpr std::size_t kReleaseRows = 1u << 16;
  void release_behind() {
    if (file_) file_->release_before(c_.offset());
  }
  void release_range(const char* begin, const char* end) const {
    if (file_)
      file_->release(static_cast<std::size_t>(begin - c_.data().data()),
                     static_cast<std::size_t>(end - c_.data().data()));
  }

  // The last element block of an ascii 4.1 file, when it is big (the volume elements of a
  // typical mesh), parses on every core. Its text runs to $EndElements; it is cut at line
  // starts, and since gmsh numbers the elements of a block consecutively, the element tag that
  // opens each piece says which row it starts at. Each piece checks that its tags run on one by
  // one and that it ends where the next begins; anything else (tags out of order, a bad number,
  // a row split over lines) returns false and the serial parse runs from the start, to give the
  // exact error. On success the cursor is at $EndElements.
  static constexpr std::size_t kParallelRows = 1u << 16;
  bool ascii_rows_parallel(std::size_t n, std::size_t npc, std::int64_t* out) {
    const std::string_view data = c_.data();
    const std::size_t begin = c_.offset();
    // Searched from the end: what follows the elements ($NodeData, ...) is usually short, and a
    // forward search would stop at every newline of the rows.
    const std::size_t end = data.rfind("\n$EndElements");
    if (end == std::string_view::npos || end < begin) return false;
    constexpr std::size_t kPieces = 16;
    std::array<std::size_t, kPieces + 1> cut{}, row{};
    cut[0] = begin;
    cut[kPieces] = end + 1;
    for (std::size_t k = 1; k < kPieces; ++k) {
      const auto nl = data.find('\n', begin + (end - begin) * k / kPieces);
      cut[k] =
          std::max(std::min(nl == std::string_view::npos ? end + 1 : nl + 1, end + 1), cut[k - 1]);
    }
    std::uint64_t first_tag = 0;
    try {
      for (std::size_t k = 0; k < kPieces; ++k) {
        Cursor peek(data.substr(0, cut[k + 1]), c_.file());
        peek.seek(cut[k]);
        peek.skip_ws();
        if (peek.at_end()) {
          row[k] = k ? row[k - 1] : 0;  // an empty piece (a very long line before it)
          continue;
        }
        const auto tag = peek.number<std::uint64_t>("element tag");
        if (k == 0) first_tag = tag;
        if (tag < first_tag || tag - first_tag > n || (k && tag - first_tag < row[k - 1]))
          return false;
        row[k] = tag - first_tag;
      }
    } catch (const ReadError&) {
      return false;
    }
    row[kPieces] = n;
    std::atomic<bool> ok{true};
    InOrder order(kPieces);
    try {
      parallel_for(kPieces, 0, [&](std::size_t k) {
        Cursor piece(data.substr(0, cut[k + 1]), c_.file());
        piece.seek(cut[k]);
        for (std::size_t e = row[k]; e < row[k + 1]; ++e) {
          if (piece.number<std::uint64_t>("element tag") != first_tag + e) {
            ok = false;
            return;
          }
          for (std::size_t j = 0; j < npc; ++j)
            out[e * npc + j] = piece.number<std::int64_t>("node tag");
          if ((e + 1 - row[k]) % kReleaseRows == 0)
            release_range(data.data() + cut[k], data.data() + piece.offset());
        }
        piece.skip_ws();
        if (!piece.at_end()) ok = false;  // more on the piece's lines than its rows
        release_range(data.data() + cut[k], data.data() + cut[k + 1]);
        // and what this piece shares with its neighbours, once they are done too
        order.done(k, [&](std::size_t front) {
          if (file_) file_->release_before(cut[front]);
        });
      });
    } catch (const ReadError&) {
      return false;
    }
    if (!ok) return false;
    c_.seek(end + 1);
    return true;
  }

  // The element tags of every 4.1 block, read again from its rows (which parsed once already).
  void element_tags4() {
    const auto resume = c_.offset();
    for (auto* list : {&blocks_, &dropped_})
      for (auto& blk : *list) {
        const auto n = static_cast<std::size_t>(blk.conn.dim(0));
        const std::size_t per = 1 + static_cast<std::size_t>(blk.type.nodes);
        blk.element_tags.resize(n);
        if (binary_) {
          for (std::size_t e = 0; e < n; ++e) {
            std::uint64_t t;
            std::memcpy(&t, blk.rows + e * per * 8, 8);
            blk.element_tags[e] = static_cast<std::int64_t>(swap_ ? Cursor::byteswap(t) : t);
          }
        } else {
          c_.seek(static_cast<std::size_t>(blk.rows - c_.data().data()));
          for (std::size_t e = 0; e < n; ++e) {
            blk.element_tags[e] =
                static_cast<std::int64_t>(c_.number<std::uint64_t>("element tag"));
            for (std::size_t k = 1; k < per; ++k) c_.number<std::int64_t>("node tag");
          }
        }
      }
    c_.seek(resume);
  }

  // 2.x, or MSH 1 ($ELM) when `v1`: an ascii row is "tag type ntags tag... node..." in 2.x and
  // "tag type physical elementary nnodes node..." in MSH 1.
  void read_elements2(bool v1 = false) {
    const auto total = checked_count(c_.number<std::uint64_t>("number of elements"),
                                     binary_ ? 8 : 6, "element count");
    c_.next_line();
    std::size_t done = 0;
    if (binary_) return read_elements2_binary(total);
    const bool keep_tags = later_element_data();  // ascii 2.2 keeps them while it parses
    while (done < total) {
      const auto element_tag = c_.number<std::int64_t>("element tag");
      const auto type = element_type(c_.number<int>("element type"));
      std::int32_t tags[2] = {0, 0};
      std::int32_t partition = 0;
      if (v1) {
        tags[0] = c_.number<std::int32_t>("physical tag");
        tags[1] = c_.number<std::int32_t>("elementary tag");
        const auto nodes = c_.number<std::int64_t>("number of nodes");
        if (nodes != type.nodes)
          c_.fail("a " + std::string(type.name) + " element has " + std::to_string(type.nodes) +
                  " nodes, not " + std::to_string(nodes));
      } else {
        const int ntags = c_.number<int>("number of tags");
        if (ntags < 0 || ntags > 64) c_.fail("element has " + std::to_string(ntags) + " tags");
        std::int32_t more[2] = {0, 0};  // 2.2: the partition count and the first partition
        for (int k = 0; k < ntags; ++k) {
          const auto v = c_.number<std::int32_t>("element tag value");
          if (k < 2)
            tags[k] = v;
          else if (k < 4)
            more[k - 2] = v;
        }
        if (const char* bad = partition_tags_error(ntags, more[0], more[1]))
          odd_partition_tags(c_.file() + ":" + std::to_string(c_.line()) + ": element " +
                             std::to_string(element_tag) + ": " + bad);
        else
          partition = version_ == 22 && ntags > 3 ? more[1] : 0;
      }
      auto& blk = block_for(type);
      if (keep_tags) blk.element_tags.push_back(element_tag);
      pending_tags_.back().first.push_back(tags[0]);
      pending_tags_.back().second.push_back(tags[1]);
      if (partition) {
        // Partitions are gathered from the first partitioned element on: the block's earlier
        // elements (none in gmsh's files) get 0.
        auto& parts = pending_parts_.back();
        parts.resize(pending_tags_.back().first.size() - 1, 0);
        parts.push_back(partition);
        ++partitioned2_;
      }
      auto& p = pending_.back();
      for (int k = 0; k < type.nodes; ++k) p.push_back(c_.number<std::int64_t>("node tag"));
      ++done;
    }
    expect_end(v1 ? "$ENDELM" : "$EndElements", total, "elements");
    flush_pending();
    note_partitions2(total);
  }

  // MSH 2.2 tags after physical and elementary, when there are more than 3: "numPartitions
  // partition ghost..." (gmsh -part N: the element's partition, then the other partitions it
  // touches, negated, with -part_ghosts), so numPartitions is the count of those after it. What
  // is wrong with them, or nullptr. gmsh writes a parent (or two domains) after the partitions
  // only for element types no reader here takes (sub-elements, polygons, borders), which fail on
  // their type first; other writers put tags of their own there, which gmsh and meshio read
  // past: such an element gets no partition (odd_partition_tags), and the file still reads.
  // 2.0 / 2.1 (and 3 tags in 2.2) are not checked: gmsh reads their third tag as a partition in
  // 2.0 / 2.1 (this reader does not) and ignores it alone in 2.2.
  const char* partition_tags_error(std::int64_t ntags, std::int64_t count,
                                   std::int64_t partition) const {
    if (version_ != 22 || ntags <= 3) return nullptr;
    if (count != ntags - 3)
      return "its partition count (the third tag) is not the number of tags after it (a "
             "partitioned MSH 2.2 element has 3 + numPartitions tags)";
    if (partition <= 0)
      return "its partition (the fourth tag) is not positive (gmsh numbers partitions from 1 "
             "and lists the element's own first)";
    return nullptr;
  }

  // An element whose tags after the elementary one are not gmsh's partition layout (`where`:
  // file, line or byte, element, and what is wrong): read without a partition, noted once.
  void odd_partition_tags(std::string where) {
    if (!odd_tags_++) first_odd_tags_ = std::move(where);
  }

  // What reading a partitioned 2.2 file (gmsh -part N -format msh22) of `total` elements
  // changed, in Mesh.notes. gmsh writes no interface or ghost elements in 2.2: nothing dropped.
  void note_partitions2(std::size_t total) {
    if (odd_tags_)
      mesh_.notes.push_back(std::to_string(odd_tags_) +
                            " elements have tags after the elementary tag that are not gmsh's "
                            "partition tags (the first: " +
                            first_odd_tags_ + "): read without a partition, those tags ignored");
    if (!partitioned2_) return;
    mesh_.notes.push_back(
        "partitioned MSH 2.2 (numPartitions, partition, ghost partitions... after each "
        "element's physical and elementary tags): gmsh:partition holds each element's partition "
        "(the ghost partitions gmsh lists after it are not kept)");
    if (total > partitioned2_ + odd_tags_)
      mesh_.notes.push_back(std::to_string(total - partitioned2_ - odd_tags_) +
                            " elements have no partition tags (3 tags or fewer): gmsh:partition "
                            "gives them 0");
    if (odd_tags_) mesh_.notes.push_back("gmsh:partition gives 0 to the elements with odd tags");
  }

  // Row by row readers (ascii 2.x, MSH 1, 3.0): the block for an element of type t, a new one
  // at each change of type (as meshio splits 2.2).
  RawBlock& block_for(const GmshType& t) {
    if (blocks_.empty() || blocks_.back().type.number != t.number) {
      RawBlock blk;
      blk.type = t;
      blk.at = c_.offset();
      blocks_.push_back(std::move(blk));
      pending_.emplace_back();
      pending_tags_.emplace_back();
      pending_parts_.emplace_back();
    }
    return blocks_.back();
  }
  // ... and their rows, moved into the blocks' arrays once the section is read.
  void flush_pending() {
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      auto& blk = blocks_[b];
      const auto n = static_cast<std::int64_t>(pending_tags_[b].first.size());
      blk.conn = Array::of<std::int64_t>({n, blk.type.nodes});
      std::memcpy(blk.conn.data(), pending_[b].data(), pending_[b].size() * sizeof(std::int64_t));
      std::vector<std::int64_t>().swap(pending_[b]);
      blk.physical = Array::from_vector(pending_tags_[b].first);
      blk.geometrical = Array::from_vector(pending_tags_[b].second);
      if (partitioned3_) blk.partition = Array::from_vector(pending_parts_[b]);
      if (partitioned2_) {
        pending_parts_[b].resize(static_cast<std::size_t>(n), 0);
        blk.partition = Array::from_vector(pending_parts_[b]);
      }
    }
  }

  // ---- MSH 3.0 (gmsh 3's -format msh3; gmsh itself still reads and writes it) -------------
  // $Entities is ascii in both modes: counts of points, curves, surfaces, volumes; a point is
  // "tag numPhysicals physical...", the others "tag numBounds bound... numPhysicals physical...".
  void read_entities3() {
    std::uint64_t counts[4];
    for (auto& n : counts) n = c_.number<std::uint64_t>("entity count");
    for (int d = 0; d < 4; ++d) {
      const auto n = checked_count(counts[d], 4, "entity count");
      for (std::size_t i = 0; i < n; ++i) {
        const int tag = c_.number<int>("entity tag");
        if (d > 0) {
          const auto nb = checked_count(c_.number<std::uint64_t>("number of bounding entities"), 2,
                                        "bounding entity count");
          for (std::size_t k = 0; k < nb; ++k) c_.number<int>("bounding entity");
        }
        const auto np = checked_count(c_.number<std::uint64_t>("number of physical tags"), 2,
                                      "physical tag count");
        auto& tags = entity_physicals_[{d, tag}];
        for (std::size_t k = 0; k < np; ++k) tags.push_back(c_.number<int>("physical tag"));
      }
    }
    c_.expect_line("$EndEntities");
  }

  // $Nodes: count, then "tag x y z entity" and, when entity is not 0, "dim" and dim parametric
  // coordinates (binary: int32 tag, 3 doubles, int32 entity[, int32 dim, dim doubles]).
  void read_nodes3() {
    const auto at = c_.offset();
    try {
      read_nodes3_rows();
    } catch (const ReadError& e) {
      const auto row = binary_ ? std::nullopt : row_of_2x(at);
      if (!row) throw;
      // A 2.x body under a 3.0 header reads its first node's next tag as the entity and fails
      // nodes later (at $EndNodes for a small file): the message says what disagrees.
      throw ReadError(std::string(e.what()) + " (the $MeshFormat on line " +
                      std::to_string(c_.line_at(format_at_)) + " says " + format_text_ +
                      ", whose node rows are 'tag x y z entity [dim u v w]', but the first, on " +
                      "line " + std::to_string(c_.line_at(*row)) +
                      ", has the 4 values of an MSH 2.x row)");
    }
  }

  // The offset of the first node row of the ascii $Nodes whose count starts at `at` when that
  // row has the 4 values of 2.x ("tag x y z"). Only an error's message asks.
  std::optional<std::size_t> row_of_2x(std::size_t at) const {
    Cursor c(c_.data(), c_.file());
    c.seek(at);
    c.nonempty_line();  // the count
    c.skip_ws();
    const auto first = c.offset();
    const auto row = c.rest_of_line();
    int values = 0;
    for (std::size_t i = 0; i < row.size();) {
      while (i < row.size() && (row[i] == ' ' || row[i] == '\t' || row[i] == '\r')) ++i;
      if (i == row.size()) break;
      ++values;
      while (i < row.size() && row[i] != ' ' && row[i] != '\t' && row[i] != '\r') ++i;
    }
    return values == 4 ? std::optional(first) : std::nullopt;
  }

  void read_nodes3_rows() {
    read_tagged_nodes(32, 10, [&] {
      int dim = 0;
      if (binary_) {
        if (c_.binary_one<std::int32_t>(swap_, "node entity") != 0)
          dim = c_.binary_one<std::int32_t>(swap_, "node entity dimension");
      } else if (c_.number<std::int64_t>("node entity") != 0) {
        dim = c_.number<int>("node entity dimension");
      }
      if (dim < 0 || dim > 3)
        c_.fail("node entity dimension " + std::to_string(dim) + " is not 0..3");
      for (int k = 0; k < dim; ++k) {
        if (binary_)
          c_.raw(8, "parametric coordinate");
        else
          c_.number<double>("parametric coordinate");
      }
    });
  }

  // $Elements: count, then "tag type entity numData data..." (binary: int32 each); data starts
  // with the nodes (what follows them, partitions and the like, is skipped). Physical tags come
  // from the element's entity in $Entities (the first, as in 4.x; 0 when none), the entity is
  // gmsh:geometrical; blocks split at each change of type, as in 2.x.
  void read_elements3() {
    const auto total = checked_count(c_.number<std::uint64_t>("number of elements"),
                                     binary_ ? 16 : 8, "element count");
    c_.next_line();
    const auto value = [&](const char* what) -> std::int64_t {
      return binary_ ? c_.binary_one<std::int32_t>(swap_, what) : c_.number<std::int64_t>(what);
    };
    for (std::size_t done = 0; done < total; ++done) {
      const auto element_tag = value("element tag");
      const auto type = element_type(static_cast<int>(
          std::clamp<std::int64_t>(value("element type"), -1, std::numeric_limits<int>::max())));
      const auto entity = value("element entity");
      const auto ndata = value("number of element data");
      if (ndata < type.nodes || ndata > type.nodes + 1024)
        c_.fail("a " + std::string(type.name) + " element has " + std::to_string(ndata) +
                " data values, not its " + std::to_string(type.nodes) + " nodes and a few more");
      if (entity < std::numeric_limits<int>::min() || entity > std::numeric_limits<int>::max())
        c_.fail("element entity " + std::to_string(entity) + " is out of range");
      auto& blk = block_for(type);
      blk.element_tags.push_back(element_tag);
      const auto it = entity_physicals_.find({type.dim, static_cast<int>(entity)});
      pending_tags_.back().first.push_back(
          it == entity_physicals_.end() || it->second.empty() ? 0 : it->second.front());
      pending_tags_.back().second.push_back(static_cast<std::int32_t>(entity));
      auto& p = pending_.back();
      for (int k = 0; k < type.nodes; ++k) p.push_back(value("node tag"));
      pending_parts_.back().push_back(partition3(ndata - type.nodes, value));
    }
    expect_end("$EndElements", total, "elements");
    if (partitioned3_) drop_unpartitioned3();
    flush_pending();
    if (partitioned3_) {
      std::erase_if(blocks_, [](const RawBlock& b) { return b.conn.dim(0) == 0; });
      note_partitions3();
    }
  }

  // Reads the `extra` data values after an element's nodes; returns its partition, 0 when it
  // has none. gmsh writes "numPartitions partition ghostPartition..." there (numPartitions = 1 +
  // the ghosts) for a partitioned mesh, nothing for the elements it adds on the interfaces
  // between partitions.
  template <class Value>
  std::int64_t partition3(std::int64_t extra, Value& value) {
    std::int64_t first = 0, partition = 0;
    for (std::int64_t k = 0; k < extra; ++k) {
      const auto v = value("element data");
      if (k == 0) first = v;
      if (k == 1) partition = v;
    }
    if (extra < 2 || first != extra - 1 || partition <= 0) return 0;
    ++partitioned3_;
    return partition;
  }

  // A partitioned 3.0 file: its elements without a partition (gmsh's on the interfaces, which
  // the unpartitioned mesh has none of) go to dropped_ (so $ElementData values for them are
  // skipped, as for 4.x), the others keep their partition for gmsh:partition.
  void drop_unpartitioned3() {
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      auto& blk = blocks_[b];
      auto& parts = pending_parts_[b];
      auto& [physical, geometrical] = pending_tags_[b];
      auto& conn = pending_[b];
      const auto npc = static_cast<std::size_t>(blk.type.nodes);
      RawBlock gone;
      gone.type = blk.type;
      std::size_t kept = 0;
      for (std::size_t e = 0; e < parts.size(); ++e) {
        if (parts[e] == 0) {
          gone.element_tags.push_back(blk.element_tags[e]);
          continue;
        }
        blk.element_tags[kept] = blk.element_tags[e];
        physical[kept] = physical[e];
        geometrical[kept] = geometrical[e];
        parts[kept] = parts[e];
        std::copy_n(conn.begin() + static_cast<std::ptrdiff_t>(e * npc), npc,
                    conn.begin() + static_cast<std::ptrdiff_t>(kept * npc));
        ++kept;
      }
      blk.element_tags.resize(kept);
      physical.resize(kept);
      geometrical.resize(kept);
      parts.resize(kept);
      conn.resize(kept * npc);
      dropped3_ += gone.element_tags.size();
      if (!gone.element_tags.empty()) dropped_.push_back(std::move(gone));
    }
  }

  // What reading a partitioned 3.0 file (gmsh -part N -format msh3) changed, in Mesh.notes.
  void note_partitions3() {
    mesh_.notes.push_back(
        "partitioned MSH 3.0 (partitions after each element's nodes): gmsh:partition holds each "
        "element's partition (the ghost partitions gmsh lists after it are not kept); "
        "gmsh:geometrical names gmsh's partition entities, as 3.0 names no model entity they are "
        "pieces of");
    if (dropped3_)
      mesh_.notes.push_back("dropped " + std::to_string(dropped3_) +
                            " elements without a partition (gmsh's on the interfaces between "
                            "partitions); the unpartitioned mesh has none");
  }

  // MSH 2.2 binary: element headers (type, count, ntags) each followed by count rows of int32.
  // Pass 1 walks the headers only, so each block's arrays are allocated once at their final
  // size; pass 2 converts the rows straight into them (no growing vectors, no second copy).
  void read_elements2_binary(std::size_t total) {
    struct Run {
      GmshType type;
      std::size_t count, ntags, at;
      const char* rows;
      std::size_t block;
    };
    std::vector<Run> runs;
    std::vector<std::size_t> block_rows, block_first_run;
    bool partitioned = false;  // a 2.2 run with partition tags: every block gets gmsh:partition
    for (std::size_t done = 0; done < total;) {
      const auto type = element_type(c_.binary_one<std::int32_t>(swap_, "element type"));
      const auto count = c_.binary_one<std::int32_t>(swap_, "element count");
      const auto ntags = c_.binary_one<std::int32_t>(swap_, "number of tags");
      if (count <= 0 || static_cast<std::size_t>(count) > total - done)
        c_.fail_at_byte("element header count " + std::to_string(count) + " does not fit the " +
                        std::to_string(total - done) + " elements left");
      if (ntags < 0 || ntags > 64)
        c_.fail_at_byte("element header has " + std::to_string(ntags) + " tags");
      const std::size_t per =
          1 + static_cast<std::size_t>(ntags) + static_cast<std::size_t>(type.nodes);
      const auto n = static_cast<std::size_t>(count);
      const std::size_t at = c_.offset();
      const char* rows = c_.raw(per * 4 * n, "elements");
      if (runs.empty() || runs.back().type.number != type.number) {
        block_rows.push_back(0);
        block_first_run.push_back(runs.size());
      }
      runs.push_back({type, n, static_cast<std::size_t>(ntags), at, rows, block_rows.size() - 1});
      block_rows.back() += n;
      done += n;
      partitioned |= version_ == 22 && ntags > 3;
    }
    expect_end("$EndElements", total, "elements");
    const bool keep_tags = later_element_data();
    const std::size_t first = blocks_.size();
    for (std::size_t b = 0; b < block_rows.size(); ++b) {
      const Run& r = runs[block_first_run[b]];
      RawBlock blk;
      blk.type = r.type;
      blk.at = r.at;
      const auto n = static_cast<std::int64_t>(block_rows[b]);
      blk.conn = Array::of<std::int64_t>({n, r.type.nodes});
      blk.physical = Array::of<std::int32_t>({n});
      blk.geometrical = Array::of<std::int32_t>({n});
      if (keep_tags) blk.element_tags.resize(block_rows[b]);
      if (partitioned) blk.partition = Array::of<std::int64_t>({n});
      blocks_.push_back(std::move(blk));
    }
    std::vector<std::size_t> filled(block_rows.size(), 0);
    const auto get = [&](const char* p) {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return swap_ ? Cursor::byteswap(v) : v;
    };
    for (const Run& r : runs) {
      RawBlock& blk = blocks_[first + r.block];
      const std::size_t npc = static_cast<std::size_t>(r.type.nodes);
      const std::size_t per = 1 + r.ntags + npc;
      std::size_t row = filled[r.block];
      std::int64_t* out = blk.conn.as<std::int64_t>() + row * npc;
      auto* physical = blk.physical.as<std::int32_t>();
      auto* geometrical = blk.geometrical.as<std::int32_t>();
      auto* partition = partitioned ? blk.partition.as<std::int64_t>() : nullptr;
      for (std::size_t e = 0; e < r.count; ++e, ++row) {
        const char* src = r.rows + e * per * 4;
        if (keep_tags) blk.element_tags[row] = get(src);
        physical[row] = r.ntags > 0 ? get(src + 4) : 0;
        geometrical[row] = r.ntags > 1 ? get(src + 8) : 0;
        const char* nodes = src + (1 + r.ntags) * 4;
        for (std::size_t k = 0; k < npc; ++k) *out++ = get(nodes + k * 4);
        if (partition) partition[row] = partition2_binary(src, r.ntags, get);
        if ((e + 1) % kReleaseRows == 0) release_range(r.rows, src);
      }
      filled[r.block] = row;
    }
    note_partitions2(total);
  }

  // The partition of a binary 2.2 row [tag, ntags tags, nodes]: 0 with 3 tags or fewer.
  template <class Get>
  std::int32_t partition2_binary(const char* src, std::size_t ntags, const Get& get) {
    if (ntags <= 3) return 0;
    const std::int32_t part = get(src + 16);
    if (const char* bad =
            partition_tags_error(static_cast<std::int64_t>(ntags), get(src + 12), part)) {
      odd_partition_tags(c_.file() + ": element " + std::to_string(get(src)) + " (byte " +
                         std::to_string(src - c_.data().data()) + " of the file): " + bad);
      return 0;
    }
    ++partitioned2_;
    return part;
  }

  void skip_section(const std::string& section) {
    const std::string end = "$End" + section;
    auto pos = c_.data().find(end, c_.offset());
    if (pos == std::string_view::npos) c_.fail("section $" + section + " has no " + end);
    c_.seek(pos);
    c_.next_line();
  }

  // ---- assembly ---------------------------------------------------------------------------
  void finish() {
    const bool any_physical = v4_ ? [&] {
      for (const auto& [k, v] : entity_physicals_) if (!v.empty()) return true;
      for (const auto& [k, e] : partitioned_) if (!e.physicals.empty()) return true;
      return false;
    }() : true;
    if (partitioned_file_) note_partitions();
    assemble_periodic();
    std::int64_t base = 0;
    std::vector<std::int64_t> block_base;
    for (auto& blk : blocks_) {
      map_nodes(blk);  // or, when read mapped already, only reordered
      const auto n = blk.conn.dim(0);
      block_base.push_back(base);
      base += n;
      if (v4_) {
        const auto& phys = physicals_of(blk);
        if (any_physical) {
          auto a = Array::of<std::int64_t>({n});
          fill(a.as<std::int64_t>(), n, phys.empty() ? 0 : phys.front());
          mesh_.cell_data["gmsh:physical"].push_back(std::move(a));
        }
        // In a partitioned file, the model entity the element's partitioned entity is a piece of
        // (blocks on pieces of higher-dimensional entities were dropped), and its partition.
        const auto* pe = partitioned_entity(blk.entity_dim, blk.entity_tag);
        auto g = Array::of<std::int64_t>({n});
        fill(g.as<std::int64_t>(), n, pe ? pe->parent_tag : blk.entity_tag);
        mesh_.cell_data["gmsh:geometrical"].push_back(std::move(g));
        if (partitioned_file_) {
          auto p = Array::of<std::int64_t>({n});
          fill(p.as<std::int64_t>(), n, pe ? pe->partition : 0);
          mesh_.cell_data["gmsh:partition"].push_back(std::move(p));
        }
      } else {
        mesh_.cell_data["gmsh:physical"].push_back(blk.physical);
        mesh_.cell_data["gmsh:geometrical"].push_back(blk.geometrical);
        if (partitioned3_ || partitioned2_)
          mesh_.cell_data["gmsh:partition"].push_back(blk.partition);
      }
    }
    for (const auto& pn : names_) {
      mesh_.field_data[pn.name] = Array::from_vector(std::vector<std::int64_t>{pn.tag, pn.dim});
      Region r;
      r.name = pn.name;
      r.dim = pn.dim;
      r.tag = pn.tag;
      r.kind = pn.dim == 0 ? RegionKind::kPoint : RegionKind::kCell;
      std::vector<std::int64_t> entries;
      std::set<std::int64_t> points;
      for (std::size_t b = 0; b < blocks_.size(); ++b) {
        const auto& blk = blocks_[b];
        if (blk.type.dim != pn.dim) continue;
        const auto n = blk.conn.dim(0);
        for (std::int64_t e = 0; e < n; ++e) {
          const bool member = v4_ ? contains(physicals_of(blk), pn.tag)
                                  : blk.physical.as<std::int32_t>()[e] == pn.tag;
          if (!member) continue;
          if (r.kind == RegionKind::kPoint) {
            for (int k = 0; k < blk.type.nodes; ++k)
              points.insert(blk.conn.as<std::int64_t>()[e * blk.type.nodes + k]);
          } else {
            entries.push_back(block_base[b] + e);
          }
        }
      }
      if (r.kind == RegionKind::kPoint) entries.assign(points.begin(), points.end());
      r.entries = Array::from_vector(entries);
      mesh_.regions.push_back(std::move(r));
    }
    assemble_data(block_base);
    for (auto& blk : blocks_)
      mesh_.cells.push_back(CellBlock::fixed(blk.type.name, std::move(blk.conn)));
  }

  // gmsh:partition holds one partition per element. The entities gmsh lists several for are
  // the interfaces, whose elements are dropped; an element kept on one (another writer's file)
  // loses the partitions after the first, and the note says how many and where.
  void note_several_partitions() {
    std::size_t n = 0;
    const PartitionedEntity* first = nullptr;
    std::pair<int, int> where;
    for (const auto& blk : blocks_) {
      const auto* pe = partitioned_entity(blk.entity_dim, blk.entity_tag);
      if (!pe || pe->others.empty()) continue;
      n += static_cast<std::size_t>(blk.conn.dim(0));
      if (!first) first = pe, where = {blk.entity_dim, blk.entity_tag};
    }
    if (!n) return;
    std::string parts = std::to_string(first->partition);
    for (int p : first->others) parts += " " + std::to_string(p);
    mesh_.notes.push_back(std::to_string(n) +
                          " elements lie on partitioned entities that list several partitions: "
                          "gmsh:partition holds the first, the others are not kept (the first such "
                          "entity: (" +
                          std::to_string(where.first) + ", " + std::to_string(where.second) +
                          "), partitions " + parts + ")");
  }

  // What a partitioned file's reading changed, in Mesh.notes.
  void note_partitions() {
    mesh_.notes.push_back(
        "partitioned mesh (" + std::to_string(num_partitions_) +
        " partitions, $PartitionedEntities): gmsh:physical from each element's partitioned "
        "entity; gmsh:geometrical" +
        std::string(version_ == 41 ? " and gmsh:dim_tags name" : " names") +
        " the model entity it is a piece of; gmsh:partition holds the element's partition (an "
        "entity's first)");
    note_several_partitions();
    if (dropped_interface_)
      mesh_.notes.push_back("dropped " + std::to_string(dropped_interface_) +
                            " elements gmsh added on the interfaces between partitions "
                            "(Mesh.PartitionCreateTopology; their entity's parent has a higher "
                            "dimension); the unpartitioned mesh has none");
    if (dropped_ghost_)
      mesh_.notes.push_back(
          "dropped " + std::to_string(dropped_ghost_) +
          " ghost elements (Mesh.PartitionCreateGhostCells: copies of elements of other "
          "partitions)" +
          (ghost_nodes_ ? "; their " + std::to_string(ghost_nodes_) +
                              " nodes on ghost entities stay as points (gmsh:dim_tags names the "
                              "ghost entity)"
                        : std::string()));
  }

  // Data sections -> point_data / cell_data (float64; (n,) or (n, components)). Entities a
  // section does not list get NaN, and a note says how many; when one name comes in several
  // time steps the last is kept, with a note.
  void assemble_data(const std::vector<std::int64_t>& block_base) {
    std::map<std::string, std::size_t> last;  // (elements ? "e:" : "n:") + name -> section
    for (std::size_t i = 0; i < data_.size(); ++i) {
      const auto key = (data_[i].elements ? "e:" : "n:") + data_[i].name;
      if (auto it = last.find(key); it != last.end()) {
        mesh_.notes.push_back(
            "$" + std::string(data_[i].elements ? "Element" : "Node") + "Data '" + data_[i].name +
            "': time step " + std::to_string(data_[it->second].step) +
            " replaced by a later section (step " + std::to_string(data_[i].step) + ")");
      }
      last[key] = i;
    }
    TagMap element_map, dropped_map;
    bool have_element_map = false;
    for (const auto& [key, i] : last) {
      const auto& d = data_[i];
      const auto comps = d.components;
      const std::int64_t rows = d.elements ? num_elements() : mesh_.points.dim(0);
      std::vector<std::int64_t> shape = {rows};
      if (comps > 1) shape.push_back(comps);
      Array a = Array::of<double>(shape);
      double* out = a.as<double>();
      std::fill_n(out, rows * comps, std::numeric_limits<double>::quiet_NaN());
      const TagMap* map = &node_map_;
      if (d.elements) {
        if (!have_element_map) {
          std::vector<std::int64_t> tags;
          for (const auto& blk : blocks_)
            tags.insert(tags.end(), blk.element_tags.begin(), blk.element_tags.end());
          element_map.build(tags, c_, "element");
          tags.clear();
          for (const auto& blk : dropped_)
            tags.insert(tags.end(), blk.element_tags.begin(), blk.element_tags.end());
          dropped_map.build(tags, c_, "element");
          have_element_map = true;
        }
        map = &element_map;
      }
      std::vector<bool> seen(static_cast<std::size_t>(rows), false);
      std::size_t skipped = 0;
      for (std::size_t e = 0; e < d.tags.size(); ++e) {
        const auto idx = map->find(d.tags[e]);
        if (idx < 0 && d.elements && dropped_map.find(d.tags[e]) >= 0) {
          ++skipped;  // a value for a dropped partition-interface or ghost element
          continue;
        }
        if (idx < 0) {
          throw ReadError(c_.file() + ":" + std::to_string(c_.line_at(d.at)) + ": $" +
                          (d.elements ? "ElementData '" : "NodeData '") + d.name + "' refers to " +
                          (d.elements ? "element" : "node") + " tag " + std::to_string(d.tags[e]) +
                          ", which the mesh does not define");
        }
        seen[static_cast<std::size_t>(idx)] = true;
        std::copy_n(d.values.data() + e * static_cast<std::size_t>(comps), comps,
                    out + idx * comps);
      }
      if (skipped)
        mesh_.notes.push_back("$ElementData '" + d.name + "': " + std::to_string(skipped) +
                              " values of dropped partition-interface / ghost elements skipped");
      const auto missing = std::count(seen.begin(), seen.end(), false);
      if (missing) {
        mesh_.notes.push_back(std::string(d.elements ? "$ElementData '" : "$NodeData '") + d.name +
                              "': " + std::to_string(missing) + " of " + std::to_string(rows) +
                              (d.elements ? " elements" : " nodes") + " have no value (NaN)");
      }
      if (!d.elements) {
        mesh_.point_data[d.name] = std::move(a);
        continue;
      }
      auto& parts = mesh_.cell_data[d.name];
      for (std::size_t b = 0; b < blocks_.size(); ++b) {
        const auto begin = static_cast<std::size_t>(block_base[b]);
        parts.push_back(
            slice_rows(a, begin, begin + static_cast<std::size_t>(blocks_[b].conn.dim(0))));
      }
    }
  }

  std::int64_t num_elements() const {
    std::int64_t n = 0;
    for (const auto& blk : blocks_) n += blk.conn.dim(0);
    return n;
  }

  static bool contains(const std::vector<int>& v, std::int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  }
  const std::vector<int>& physicals_of(const RawBlock& blk) const {
    static const std::vector<int> kNone;
    if (partitioned_file_) {  // the blocks name partitioned entities
      const auto* pe = partitioned_entity(blk.entity_dim, blk.entity_tag);
      return pe ? pe->physicals : kNone;
    }
    auto it = entity_physicals_.find({blk.entity_dim, blk.entity_tag});
    return it == entity_physicals_.end() ? kNone : it->second;
  }

  void map_nodes(RawBlock& blk) {
    const auto n = static_cast<std::size_t>(blk.conn.dim(0));
    const auto npc = static_cast<std::size_t>(blk.type.nodes);
    std::int64_t* conn = blk.conn.as<std::int64_t>();
    const auto perm = gmsh_to_meshio_order(blk.type.name);
    // Map in place; the error path is cold (a well-predicted branch in the hot loop).
    for (std::size_t i = 0, total = blk.mapped ? 0 : n * npc; i < total; ++i) {
      const auto idx = node_map_.find(conn[i]);
      if (idx < 0) [[unlikely]] {
        throw ReadError(c_.file() + ":" + std::to_string(c_.line_at(blk.at)) + ": element " +
                        std::to_string(i / npc) + " of a " + blk.type.name +
                        " block refers to node tag " + std::to_string(conn[i]) +
                        ", which $Nodes does not define");
      }
      conn[i] = idx;
    }
    if (!perm.empty()) {
      std::vector<std::int64_t> row(npc);
      for (std::size_t e = 0; e < n; ++e) {
        std::int64_t* r = conn + e * npc;
        std::copy(r, r + npc, row.begin());
        for (std::size_t k = 0; k < npc; ++k) r[k] = row[static_cast<std::size_t>(perm[k])];
      }
    }
  }

  Cursor c_;
  MappedFile* file_ = nullptr;
  int version_ = 0;  // 41, 40, 22, 21, 20, or 1 (no $MeshFormat); 0 until known
  // Where the version on the last $MeshFormat line is, and as written, for messages that the
  // body disagrees with it.
  std::size_t format_at_ = 0;
  std::string format_text_;
  bool v4_ = false, binary_ = false, swap_ = false;  // v4_: 4.1 or 4.0
  std::vector<PhysicalName> names_;
  std::map<std::pair<int, int>, std::vector<int>> entity_physicals_;
  bool have_entities_ = false;
  // Partitioned files ($PartitionedEntities): the entities blocks name, ghost entity tags,
  // and the blocks left out of the mesh (kept for their element tags) with their counts.
  bool partitioned_file_ = false;
  std::uint64_t num_partitions_ = 0;
  std::map<std::pair<int, int>, PartitionedEntity> partitioned_;
  std::set<int> ghost_tags_;
  std::vector<RawBlock> dropped_;
  std::size_t dropped_interface_ = 0, dropped_ghost_ = 0, ghost_nodes_ = 0;
  // Partitioned 3.0: elements that list a partition (see partition3), those dropped for none.
  std::size_t partitioned3_ = 0, dropped3_ = 0;
  // Partitioned 2.2: elements with partition tags (more than 3 tags); those whose extra tags
  // are not (odd_partition_tags), and where the first is.
  std::size_t partitioned2_ = 0, odd_tags_ = 0;
  std::string first_odd_tags_;
  ScratchVector<std::int64_t> tags_;
  TagMap node_map_;
  std::vector<std::array<std::int64_t, 4>> periodic_links_;  // $Periodic, see read_periodic
  std::vector<double> periodic_affine_;                      // 16 per link
  std::vector<std::int64_t> periodic_tags_;                  // node, master node tag pairs
  std::vector<RawBlock> blocks_;
  std::vector<std::vector<std::int64_t>> pending_;  // 2.2: node tags per block while reading
  // ascii 2.2: physical and geometrical tags per block while reading
  std::vector<std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>>> pending_tags_;
  std::vector<std::vector<std::int64_t>> pending_parts_;  // 3.0: each element's partition, or 0
  std::vector<DataSection> data_;
  Mesh mesh_;
};

}  // namespace

// Binary 4.1 streams its big blocks with read_at (the rest of it is small): mapped lazily. Other
// binary files are parsed row by row through a mapping with every page mapped at open: read into
// memory instead, a 1M-tet MSH 2.2 file took 23 to 150 ms a read, repeated in one process (each
// read's copy is fresh memory the kernel zeroes, 35 MB of it, and on this VM that cost varies
// fivefold), where the mapping takes 22 to 24 ms with the same peak (scripts/bench read,
// "alone"). Text is read into memory: its parse touches every byte more than once. Decided from
// the $MeshFormat line (looked for in the first 4 KiB: a $Comments section may come first); when
// there is none the parse reports it.
Access msh_access(const InFile& file) {
  const std::string& path = file.path;
  const std::string head = peek_file(file, 4096);
  const auto at = head.find("$MeshFormat");
  if (at == std::string::npos) return Access::read;
  Cursor c(std::string_view(head).substr(at), path);
  try {
    c.next_line();
    const auto version = c.token();
    const int file_type = c.number<int>("file-type");
    if (file_type == 1) return version_number(version) == 41 ? Access::map_lazily : Access::map;
  } catch (const ReadError&) {
  }
  return Access::read;
}

Mesh read_msh(const InFile& in) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        return MshReader(data, in.path, &file).read();
      },
      msh_access(in));
}

Mesh read_msh_bytes(std::string_view data, const std::string& name) {
  return MshReader(data, name).read();
}

}  // namespace meshdock::mesh
