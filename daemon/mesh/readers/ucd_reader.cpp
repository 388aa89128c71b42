// AVS UCD ascii (.avs, .ucd; deal.II's GridOut::write_ucd and other writers name it .inp, which
// read_mesh tells from Abaqus by content), as meshio 5.3 reads it ("avsucd"):
// - '#' comment lines (and blank lines) before and between records; a header line of 5 counts
//   "nodes cells node_data cell_data model_data";
// - node lines "id x y z": ids are labels (any integers, any order), mapped to indices;
// - cell lines "id material type n1 n2 ...", type pt line tri quad tet pyr prism hex, their node
//   ids mapped (a missing one is a ReadError naming the line). Consecutive cells of one type make
//   a block (meshio's rule: a type seen again after another starts a new block), nodes in
//   meshio's order (tet: 0 1 3 2, pyr: 1 2 3 4 0, prism: 3 4 5 0 1 2, hex: 4 5 6 7 0 1 2 3 of the
//   file's). Material ids -> cell_data "avsucd:material" (int64);
// - node data, then cell data (when their header counts are not 0): "n c1 .. cn", n lines
//   "label, unit", a line "id v1 v2 ..." per node (cell), ids mapped as above. Each component
//   group -> point_data / cell_data named by its label (blanks -> '_', as meshio), float64,
//   (n,) for 1 component else (n, c). Every entity has exactly one line.
// Model data is not read (meshio ignores it too), with a note; so is text after the records.
// Binary UCD is not supported. The cell types and orders are ucd_types.hpp's, which write_ucd
// shares.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/id_rows.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"
#include "daemon/mesh/ucd_types.hpp"

namespace meshdock::mesh {

namespace {

// Skips blank lines and '#' comment lines: the cursor at the next record's first value.
void skip_to_record(Cursor& c) {
  while (true) {
    c.skip_ws();
    if (c.at_end() || c.data()[c.offset()] != '#') return;
    c.next_line();
  }
}

// The id that starts record `i` of the `n` records of `what` ("nodes", "cells", "node data
// lines"), past the blank and comment lines before it; the window moved on to it first.
std::int64_t record_id(Cursor& c, MappedFile& file, std::int64_t i, std::int64_t n,
                       std::string_view what, const char* id) {
  file.advance(c.offset());
  skip_to_record(c);
  if (c.at_end())
    c.fail("the file ends after " + std::to_string(i) + " of the " + std::to_string(n) + " " +
           std::string(what));
  return c.number<std::int64_t>(id);
}

// True when the current line has no more values.
bool line_done(Cursor& c) {
  c.skip_blanks();
  return c.at_end() || c.data()[c.offset()] == '\n';
}

// The next value of the line; missing() (called only then: a string built for every value
// made a 1M-tet file read at 55 MB/s) says what is missing when the line has no more.
template <typename T, typename Missing>
T line_value(Cursor& c, const char* what, Missing&& missing) {
  if (line_done(c)) [[unlikely]]
    c.fail(missing());
  return c.number<T>(what);
}

// what() names the line when it holds more values than it should.
template <typename What>
void end_of_line(Cursor& c, What&& what) {
  if (!line_done(c)) [[unlikely]] {
    c.token();
    c.fail("values left over on " + what());
  }
}

struct Group {
  std::string label;
  std::int64_t width = 0;
  ScratchVector<double> values;  // rows x width
};

// A data section (node or cell data) of `count` entities whose ids `ids` maps.
std::vector<Group> read_data(Cursor& c, MappedFile& file, std::int64_t count, const IdRows& ids,
                             const char* entity, std::int64_t header_sum,
                             std::vector<std::string>& notes) {
  skip_to_record(c);
  if (c.at_end())
    c.fail(std::string("the file ends before the ") + entity + " data its header counts");
  const auto n = c.number<std::int64_t>("component group count");
  // Each group has a count on this line and a label line: 4 bytes at least.
  if (n <= 0 || static_cast<std::size_t>(n) > c.remaining() / 4)
    c.fail(std::string(entity) + " data: component group count " + std::to_string(n) +
           " is not 1..what the file holds");
  std::vector<Group> groups(static_cast<std::size_t>(n));
  std::int64_t sum = 0;
  for (auto& g : groups) {
    g.width = line_value<std::int64_t>(c, "component count", [&] {
      return std::string(entity) + " data: the line lists fewer component counts than " +
             std::to_string(n);
    });
    if (g.width <= 0 || static_cast<std::size_t>(g.width) > c.remaining() / 2)
      c.fail(std::string(entity) + " data: component count " + std::to_string(g.width) +
             " is not 1..what the file holds");
    sum += g.width;
    if (static_cast<std::size_t>(sum) > c.remaining() / 2)
      c.fail(std::string(entity) + " data: more components than the file holds");
  }
  end_of_line(c, [&] { return std::string("the ") + entity + " data's component count line"; });
  if (sum != header_sum) {
    notes.push_back("avsucd: " + c.file() + ":" + std::to_string(c.line()) + ": the " + entity +
                    " data's components add up to " + std::to_string(sum) + ", the header says " +
                    std::to_string(header_sum) + "; read as listed here");
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    skip_to_record(c);
    if (c.at_end()) c.fail(std::string("the file ends before the ") + entity + " data's labels");
    auto line = Cursor::trim(c.rest_of_line());
    std::string label(Cursor::trim(line.substr(0, line.find(','))));
    for (auto& ch : label)
      if (ch == ' ') ch = '_';
    for (std::size_t j = 0; j < i; ++j)
      if (groups[j].label == label)
        c.fail(std::string(entity) + " data label '" + label + "' appears twice");
    groups[i].label = std::move(label);
  }
  // Each entity line: an id and `sum` values, at least 2 bytes each.
  if (count > 0 &&
      static_cast<std::size_t>(count) > c.remaining() / (2 * (static_cast<std::size_t>(sum) + 1)))
    c.fail(std::string("the ") + std::to_string(count) + " " + entity +
           " data lines the header counts are more than the file holds");
  for (auto& g : groups)
    g.values.resize(static_cast<std::size_t>(count) * static_cast<std::size_t>(g.width));
  std::vector<bool> seen(static_cast<std::size_t>(count), false);
  const std::string lines = std::string(entity) + " data lines";
  for (std::int64_t r = 0; r < count; ++r) {
    const auto id = record_id(c, file, r, count, lines, "id");
    const auto at = ids.find(id, count);
    if (at < 0)
      c.fail(std::string(entity) + " data: " + entity + " id " + std::to_string(id) +
             " is not one of the " + entity + "s");
    if (seen[static_cast<std::size_t>(at)])
      c.fail(std::string(entity) + " data: " + entity + " id " + std::to_string(id) +
             " has a line already");
    seen[static_cast<std::size_t>(at)] = true;
    for (auto& g : groups) {
      double* out = g.values.data() + at * g.width;
      for (std::int64_t k = 0; k < g.width; ++k)
        out[k] = line_value<double>(c, "value", [&] {
          return std::string(entity) + " data: the line of " + entity + " id " +
                 std::to_string(id) + " has fewer than " + std::to_string(sum) + " values";
        });
    }
    end_of_line(c, [&] { return std::string("a ") + entity + " data line"; });
  }
  return groups;
}

// The values of `seq` copied into outs[0], outs[1], ... (size_of(b) values each, in order; they
// add up to seq.size()), each chunk freed once copied.
template <typename SizeOf>
void split_into(Chunks<std::int64_t>& seq, const std::vector<std::int64_t*>& outs,
                SizeOf&& size_of) {
  std::size_t b = 0, at = 0;
  seq.drain([&](const std::int64_t* p, std::size_t n) {
    while (n > 0) {
      while (at == size_of(b)) {
        ++b;
        at = 0;
      }
      const auto k = std::min(n, size_of(b) - at);
      std::memcpy(outs[b] + at, p, k * sizeof(std::int64_t));
      at += k;
      p += k;
      n -= k;
    }
  });
}

Array group_array(const Group& g, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> shape{end - begin};
  if (g.width != 1) shape.push_back(g.width);
  Array a = Array::of<double>(std::move(shape));
  if (end > begin)
    std::memcpy(a.data(), g.values.data() + begin * g.width,
                static_cast<std::size_t>((end - begin) * g.width) * sizeof(double));
  return a;
}

Mesh parse_ucd(std::string_view data, MappedFile& file) {
  const std::string& path = file.path();
  Cursor c(data, path, file.progress());
  c.seek(utf8_bom(data));
  skip_to_record(c);
  if (c.at_end()) c.fail("no AVS UCD header (the file holds no line but comments)");
  const auto header_at = c.offset();
  std::array<std::int64_t, 5> h{};
  {
    // The header line: 5 counts.
    auto bad = [&] {
      c.seek(header_at);
      const auto line = Cursor::trim(c.rest_of_line());
      c.seek(header_at);
      c.fail(
          "expected the AVS UCD header 'nodes cells node_data cell_data model_data' (5 counts), "
          "found '" +
          std::string(line.substr(0, 60)) + "'");
    };
    for (auto& v : h) {
      if (line_done(c)) bad();
      try {
        v = c.number<std::int64_t>("count");
      } catch (const ReadError&) {
        bad();
      }
      if (v < 0) bad();
    }
    if (!line_done(c)) bad();
  }
  const auto [nn, nc, nnd, ncd, nmd] = h;
  // A node line is at least "1 0 0 0\n", a cell line "1 0 pt 1\n".
  if (static_cast<std::size_t>(nn) > c.remaining() / 8)
    c.fail("node count " + std::to_string(nn) + " is more than the file holds");
  Mesh m;
  m.points = Array::of<double>({nn, 3});
  double* p = m.points.as<double>();
  IdRows node_ids;
  for (std::int64_t i = 0; i < nn; ++i) {
    const auto id = record_id(c, file, i, nn, "nodes", "node id");
    if (!node_ids.add(id, i)) c.fail("node id " + std::to_string(id) + " appears twice");
    for (int k = 0; k < 3; ++k)
      p[3 * i + k] = line_value<double>(c, "node coordinate", [&] {
        return "node " + std::to_string(id) + " has " + std::to_string(k) +
               " coordinates; 3 needed";
      });
    end_of_line(c,
                [&] { return "node " + std::to_string(id) + "'s line (an id and 3 coordinates)"; });
  }
  if (static_cast<std::size_t>(nc) > c.remaining() / 9)
    c.fail("cell count " + std::to_string(nc) + " is more than the file holds");
  struct Block {
    const UcdType* type;
    std::int64_t begin;  // its first cell
    std::int64_t rows = 0;
  };
  // Every cell's nodes and material, in file order, in one sequence each (not one a block: a
  // first chunk each would make a file of alternating types allocate far more than its size),
  // handed over to the blocks' arrays chunk by chunk at the end, so the cells are never held
  // twice (vectors copied into their Arrays made the read peak at 2x).
  Chunks<std::int64_t> conn, materials;
  std::vector<Block> blocks;
  IdRows cell_ids;
  std::array<std::int64_t, 8> nodes{};
  for (std::int64_t i = 0; i < nc; ++i) {
    const auto id = record_id(c, file, i, nc, "cells", "cell id");
    if (!cell_ids.add(id, i)) c.fail("cell id " + std::to_string(id) + " appears twice");
    const auto cell = [&] { return "cell " + std::to_string(id); };  // for messages only
    const auto mat =
        line_value<std::int64_t>(c, "material id", [&] { return cell() + " has no material id"; });
    if (line_done(c)) c.fail(cell() + " has no cell type");
    const auto name = c.token();
    const UcdType* t = nullptr;
    for (const auto& k : kUcdTypes)
      if (k.ucd == name) t = &k;
    if (!t)
      c.fail(cell() + ": cell type '" + std::string(name.substr(0, 40)) +
             "' is not one of pt, line, tri, quad, tet, pyr, prism, hex");
    for (std::size_t k = 0; k < t->nodes; ++k) {
      const auto nid = line_value<std::int64_t>(c, "node id", [&] {
        return cell() + " (" + std::string(t->ucd) + ") lists " + std::to_string(k) + " of its " +
               std::to_string(t->nodes) + " nodes";
      });
      nodes[k] = node_ids.find(nid, nn);
      if (nodes[k] < 0) [[unlikely]]
        c.fail(cell() + ": node id " + std::to_string(nid) + " is not one of the nodes");
    }
    end_of_line(c, [&] {
      return cell() + "'s line (" + std::string(t->ucd) + " has " + std::to_string(t->nodes) +
             " nodes)";
    });
    if (blocks.empty() || blocks.back().type != t) blocks.push_back(Block{t, i, 0});
    ++blocks.back().rows;
    for (std::size_t k = 0; k < t->nodes; ++k) conn.push_back(nodes[t->order[k]]);
    materials.push_back(mat);
  }
  std::vector<Array> material;
  std::vector<std::int64_t*> conn_out, material_out;
  for (const auto& b : blocks) {
    m.cells.push_back(CellBlock::fixed(
        std::string(b.type->meshio),
        Array::of<std::int64_t>({b.rows, static_cast<std::int64_t>(b.type->nodes)})));
    conn_out.push_back(m.cells.back().connectivity.as<std::int64_t>());
    material.push_back(Array::of<std::int64_t>({b.rows}));
    material_out.push_back(material.back().as<std::int64_t>());
  }
  split_into(conn, conn_out, [&](std::size_t b) {
    return static_cast<std::size_t>(blocks[b].rows) * blocks[b].type->nodes;
  });
  split_into(materials, material_out,
             [&](std::size_t b) { return static_cast<std::size_t>(blocks[b].rows); });
  if (!blocks.empty()) m.cell_data["avsucd:material"] = std::move(material);
  if (nnd > 0) {
    for (auto& g : read_data(c, file, nn, node_ids, "node", nnd, m.notes))
      m.point_data[g.label] = group_array(g, 0, nn);
  }
  if (ncd > 0) {
    for (auto& g : read_data(c, file, nc, cell_ids, "cell", ncd, m.notes)) {
      if (g.label == "avsucd:material")
        c.fail("cell data label 'avsucd:material' is the name the material ids are read as");
      if (blocks.empty()) continue;  // no cells: nothing to hold
      std::vector<Array> per_block;
      for (std::size_t k = 0; k < blocks.size(); ++k) {
        const auto end =
            k + 1 < blocks.size() ? blocks[k + 1].begin : static_cast<std::int64_t>(nc);
        per_block.push_back(group_array(g, blocks[k].begin, end));
      }
      m.cell_data[g.label] = std::move(per_block);
    }
  }
  file.release_before(data.size());
  skip_to_record(c);
  if (nmd > 0) {
    m.notes.push_back("avsucd: " + path + ": the header counts " + std::to_string(nmd) +
                      " model data values; not read");
  } else if (!c.at_end()) {
    m.notes.push_back("avsucd: " + path + ":" + std::to_string(c.line_at(c.offset())) +
                      ": text after the last record the header counts; not read");
  }
  return m;
}

}  // namespace

Mesh read_ucd(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return parse_ucd(data, file); },
      Access::window);
}

}  // namespace meshdock::mesh
