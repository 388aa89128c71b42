// Wavefront OBJ: v (x y z [w]), f (v, v/vt, v/vt/vn, v//vn; negative = relative), g starts a
// group. Like meshio: blocks split at each change of face size, cell_data "obj:group_ids"
// (-1 before the first g), vt / vn as point_data "obj:vt" / "obj:vn" when there is one per
// vertex (otherwise noted and not read). l (line / polyline) elements become a "line" block
// after the face blocks, each polyline split into its segments (noted); meshio drops them,
// vtkOBJReader keeps them as polylines. p (point) elements become a "vertex" block after those,
// one cell per point in file order ("p 1 2 3" is three cells; noted), with their group ids; meshio
// drops them, vtkOBJReader keeps each statement as one poly-vertex (a cell of several points,
// which no fixed-size block holds). The kinds keep this order (faces, lines, points) whatever
// the file's order, so adding l or p statements never renumbers the faces. Other statements
// that carry geometry (curves, surfaces, vp) are not read and are noted, and so are those that
// name or style it (o, s, usemtl, mtllib: one note per keyword with its count; vtkOBJReader
// keeps usemtl as cell data "MaterialIds", which is not done here). Values after a vertex's
// x y z are not kept, noted by what they are: a weight ("v x y z w"), a colour ("v x y z r g
// b", which meshio 5.0 makes points of 6 coordinates and vtkOBJReader drops) or neither. A
// UTF-8 byte-order mark at the start is skipped.
// A line ending with '\' (blanks after it allowed) goes on on the next line, for every statement
// (the OBJ spec's line continuation; Rhino writes long faces so): the lines are joined with a
// blank for the '\', errors name the statement's first line. vtkOBJReader 9.1 joins f, l and p
// lines only (a continued v line gets a wrong coordinate, with no message), meshio 5.0 none. A
// '\' touching the value before it ("f 1 2\") on a statement that is read is a ReadError: "2"
// and the next line's first value could be two values or one. A comment line ends at its line
// whatever its last character (as in vtkOBJReader): comment lines ending with '\' are noted. A
// '\' on the file's last line is a ReadError (a truncated statement?).
#include <map>
#include <string>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

// Why an OBJ statement this reader knows but does not keep is left out; nullptr for one OBJ
// does not have (which a file of no vertices makes no OBJ at all).
const char* not_read_because(std::string_view key) {
  return key == "o"        ? "object names are not kept"
         : key == "s"      ? "smoothing groups are not kept"
         : key == "usemtl" ? "materials are not kept"
         : key == "mtllib" ? "material libraries are not read"
                           : nullptr;
}

// A statement continued over lines: `first` (its first line, trimmed, ending with '\') and the
// lines after it up to one that does not end with '\' (or is blank), joined into `out` with a
// blank for each '\'; with the start of the next statement. `c` is left on the first line
// (errors name it). Out of line: the hot loop pays one compare.
struct Joined {
  std::string_view statement;
  std::size_t resume;
};
[[gnu::cold, gnu::noinline]] Joined join_continued(Cursor& c, std::string_view first,
                                                   std::string& out) {
  const auto at = static_cast<std::size_t>(first.data() - c.data().data());
  out.clear();
  bool glued = false;  // a '\' touches the text before it
  std::string_view piece = first;
  while (true) {
    // `piece` ends with '\'
    piece.remove_suffix(1);
    if (!piece.empty() && piece.back() != ' ' && piece.back() != '\t') glued = true;
    out.append(piece);
    out.push_back(' ');
    if (c.at_end()) {
      c.seek(at);
      c.fail("the file ends in a line continuation ('\\')");
    }
    piece = Cursor::trim(c.rest_of_line());
    if (piece.empty() || piece.back() != '\\') break;
  }
  out.append(piece);
  const auto resume = c.offset();
  c.seek(at);
  const auto joined = Cursor::trim(out);
  if (glued) {
    // "2\" then "3": one value or two? For the statements whose values are read.
    const auto key = joined.substr(0, joined.find_first_of(" \t"));
    if (key == "v" || key == "vt" || key == "vn" || key == "f" || key == "l" || key == "p") {
      c.fail(
          "a line continuation '\\' touches the value before it: is the next line's first "
          "value another value or the rest of this one? (a blank before the '\\' says)");
    }
  }
  return {joined, resume};
}

// The values of `v` as point_data (n, w) when there is one row per vertex, else a note.
void attach(Mesh& m, const char* name, Chunks<double>& v, std::size_t w) {
  if (v.empty()) return;
  const auto n = m.num_points();
  if (v.size() / w == static_cast<std::size_t>(n)) {
    m.point_data[name] = array_from(v, {n, static_cast<std::int64_t>(w)});
  } else {
    m.notes.push_back(std::string("obj: ") + name + " has " + std::to_string(v.size() / w) +
                      " entries for " + std::to_string(n) + " vertices; not read");
  }
}

Mesh parse_obj(std::string_view file_data, MappedFile& file) {
  Cursor c(file_data, file.path(), file.progress());
  c.seek(utf8_bom(file_data));
  // The counts come only with the end of the file: values are collected in chunks (the file
  // passing through a 2 MiB window meanwhile), then copied into their arrays.
  Chunks<double> points, vt, vn;
  std::size_t vt_width = 0, vn_width = 0;
  FaceBlocks faces(/*consecutive=*/true);
  std::int64_t group = -1;
  std::vector<std::int64_t> face;
  ScratchVector<std::int64_t> segments, segment_groups;  // "l": 2 nodes per segment
  std::size_t polylines = 0;  // "l" with more than 2 vertices, split into segments
  ScratchVector<std::int64_t> vertices, vertex_groups;  // "p": 1 node per cell
  std::size_t polyvertices = 0;  // "p" with more than 1 vertex, split into vertex cells
  std::map<std::string, std::size_t, std::less<>> skipped;  // keyword -> count
  // Vertices with a weight (4 values), a colour (6) or any other count past x y z (not kept).
  std::size_t weighted = 0, coloured = 0, other_extra = 0;
  std::string joined;                 // a statement continued over lines ('\' at a line's end)
  std::size_t comment_backslash = 0;  // comment lines ending with '\' (not continued)
  while (!c.at_end()) {
    file.advance(c.offset());
    auto line = Cursor::trim(c.rest_of_line());
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (line.back() == '\\') ++comment_backslash;
      continue;
    }
    std::size_t resume = 0;  // after a continued statement: where the next starts
    if (line.back() == '\\') [[unlikely]] {
      const auto j = join_continued(c, line, joined);
      line = j.statement;
      resume = j.resume;
      if (line.empty()) {  // a lone '\' and a blank line
        c.seek(resume);
        continue;
      }
    }
    // No file name: every failure of `l` is caught and reported through `c` (which has the
    // line number), and a copy of the path for each of a million lines was a malloc and a free.
    Cursor l(line, std::string());
    const auto key = l.token();
    auto fail = [&](const std::string& what) { c.fail(what); };  // line numbers from c
    auto numbers = [&](Chunks<double>& out, std::size_t& width) {
      std::size_t n = 0;
      while (true) {
        l.skip_blanks();
        if (l.at_end()) break;
        try {
          out.push_back(l.number<double>("coordinate"));
        } catch (const ReadError&) {
          fail("bad number in '" + std::string(line.substr(0, 60)) + "'");
        }
        ++n;
      }
      if (width == 0) width = n;
      if (n != width)
        fail("'" + std::string(key) + "' has " + std::to_string(n) + " values, earlier ones " +
             std::to_string(width));
    };
    if (key == "v") {
      std::size_t n = 0;
      while (true) {
        l.skip_blanks();
        if (l.at_end()) break;
        double d = 0;
        try {
          d = l.number<double>("coordinate");
        } catch (const ReadError&) {
          fail("bad vertex coordinate in '" + std::string(line.substr(0, 60)) + "'");
        }
        if (n < 3) points.push_back(d);
        ++n;
      }
      if (n < 3) fail("a vertex needs 3 coordinates, found " + std::to_string(n));
      if (n == 4)
        ++weighted;
      else if (n == 6)
        ++coloured;
      else if (n > 3)
        ++other_extra;
    } else if (key == "vt") {
      numbers(vt, vt_width);
    } else if (key == "vn") {
      numbers(vn, vn_width);
    } else if (key == "f" || key == "l" || key == "p") {
      face.clear();
      const auto nv = static_cast<std::int64_t>(points.size() / 3);
      while (true) {
        const auto tok = l.token();
        if (tok.empty()) break;
        const auto slash = tok.find('/');
        const auto first = tok.substr(0, slash);
        std::int64_t idx = 0;
        const auto r = std::from_chars(first.data(), first.data() + first.size(), idx);
        if (r.ec != std::errc() || r.ptr != first.data() + first.size() || idx == 0) {
          fail("bad face vertex '" + std::string(tok) + "'");
        }
        face.push_back(idx > 0 ? idx - 1 : nv + idx);
      }
      if (key == "f") {
        faces.add(face.data(), face.size(), group, c);
      } else if (key == "p") {
        if (face.empty()) fail("a point ('p') needs 1 or more vertices, found none");
        if (face.size() > 1) ++polyvertices;
        for (auto v : face) {
          // Forward references are checked at the end, as for faces.
          if (v < 0) fail("a point refers to vertex " + std::to_string(v) + " (0-based)");
          vertices.push_back(v);
          vertex_groups.push_back(group);
        }
      } else {
        if (face.size() < 2)
          fail("a line ('l') needs 2 or more vertices, found " + std::to_string(face.size()));
        for (auto v : face) {
          // Forward references are checked at the end, as for faces.
          if (v < 0) fail("a line refers to vertex " + std::to_string(v) + " (0-based)");
        }
        if (face.size() > 2) ++polylines;
        for (std::size_t k = 0; k + 1 < face.size(); ++k) {
          segments.push_back(face[k]);
          segments.push_back(face[k + 1]);
          segment_groups.push_back(group);
        }
      }
    } else if (key == "g") {
      ++group;
    } else {
      // o, s, usemtl, mtllib, vp, curv, surf, cstype, ... (and anything unknown): counted,
      // noted below.
      auto it = skipped.find(key);
      if (it == skipped.end()) it = skipped.emplace(std::string(key.substr(0, 40)), 0).first;
      ++it->second;
    }
    if (resume) [[unlikely]]
      c.seek(resume);  // c stayed on the statement's first line for its errors
  }
  // A file of comments, groups and object names only is an empty mesh, as meshio and VTK read
  // it (and as meshdock writes an empty mesh); one of statements OBJ does not know is no OBJ.
  if (points.empty()) {
    for (const auto& [key, count] : skipped) {
      if (!not_read_because(key))
        c.fail("no vertices ('v' lines) and " + std::to_string(count) + " '" + key +
               "' statements: not an OBJ mesh");
    }
  }
  file.release_before(file_data.size());  // the arrays take its place
  Mesh m;
  const auto n = static_cast<std::int64_t>(points.size() / 3);
  m.points = array_from(points, {n, 3});
  faces.finish(m, n, c, "obj:group_ids");
  if (!segment_groups.empty()) {
    for (auto v : segments) {
      if (v >= n) {
        c.fail("a line refers to vertex " + std::to_string(v) + " but there are " +
               std::to_string(n) + " vertices (0-based)");
      }
    }
    const auto ns = static_cast<std::int64_t>(segment_groups.size());
    m.cells.push_back(CellBlock::fixed("line", Array::from_vector(segments, {ns, 2})));
    m.cell_data["obj:group_ids"].push_back(Array::from_vector(segment_groups));
    if (polylines) {
      m.notes.push_back("obj: " + std::to_string(polylines) +
                        " polylines ('l' with more than 2 vertices) split into line segments; " +
                        std::to_string(ns) + " segments in the line block");
    }
  }
  if (!vertex_groups.empty()) {
    for (auto v : vertices) {
      if (v >= n) {
        c.fail("a point refers to vertex " + std::to_string(v) + " but there are " +
               std::to_string(n) + " vertices (0-based)");
      }
    }
    const auto nc = static_cast<std::int64_t>(vertex_groups.size());
    m.cells.push_back(CellBlock::fixed("vertex", Array::from_vector(vertices, {nc, 1})));
    m.cell_data["obj:group_ids"].push_back(Array::from_vector(vertex_groups));
    if (polyvertices) {
      m.notes.push_back("obj: " + std::to_string(polyvertices) +
                        " 'p' statements with more than 1 vertex split into vertex cells; " +
                        std::to_string(nc) + " cells in the vertex block");
    }
  }
  for (const auto& [key, count] : skipped) {
    const char* why = not_read_because(key);
    if (!why) why = "not supported";
    m.notes.push_back("obj: " + std::to_string(count) + " '" + key + "' statements not read (" +
                      why + ")");
  }
  if (weighted) {
    m.notes.push_back("obj: " + std::to_string(weighted) +
                      " vertices have a weight ('v x y z w'); the weights were not kept");
  }
  if (coloured) {
    m.notes.push_back("obj: " + std::to_string(coloured) +
                      " vertices have a colour ('v x y z r g b'); the colours were not kept");
  }
  if (other_extra) {
    m.notes.push_back("obj: " + std::to_string(other_extra) +
                      " vertices have values after x y z that are neither a weight (1 value) nor "
                      "a colour (3); they were not kept");
  }
  if (comment_backslash) {
    m.notes.push_back("obj: " + std::to_string(comment_backslash) +
                      " comment lines end with '\\' (a line continuation elsewhere); a comment "
                      "ends with its line, the line after each was read as a statement");
  }
  attach(m, "obj:vt", vt, vt_width);
  attach(m, "obj:vn", vn, vn_width);
  return m;
}

}  // namespace

Mesh read_obj(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return parse_obj(data, file); },
      Access::window);
}

}  // namespace meshdock::mesh
