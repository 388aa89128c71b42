// OFF (Object File Format, Geomview's): a header keyword [ST][C][N]OFF, counts "V F E", V vertex
// lines "x y z [nx ny nz] [r g b [a]] [s t]" (normals with N, colours with C, texture
// coordinates with ST, in that order), F face lines "n i0 .. in-1 [colour]".
// - One face per line (its colour runs to the end of the line, as Geomview reads it): a line with
//   fewer values than its header asks for is a ReadError naming the file and line, and so is one
//   with values left over.
// - Vertices one per line (the fast path; the same checks), or laid out on lines any other way:
//   Geomview's spec (and reader) takes "dimension * NVertices" values across lines, meshio reads
//   numbers too. A vertex line whose values are not one vertex's starts a stream of values
//   (vertex i on, every line layout) when that is unambiguous: the header has no C and no vertex
//   before had a colour (a stream has no colours: their count per vertex would be a guess), and
//   the values counted on the lines from there end with a line's end and are followed by a line
//   that can be a face (or by nothing, with no faces). Otherwise the line's error stands.
//   A plain OFF whose first vertex line holds a vertex and 3 or 4 values more is one vertex and
//   its colour a line unless that reading breaks before the last vertex (a line of another
//   count, an integer colour value outside 0..255) and the stream from vertex 0 fits ("0 0 0 1 0
//   0": two vertices a line); where both readings fit, colours, with a note. The fast path pays
//   nothing for this: the stream is looked at only where a line breaks the reading, and the
//   note's check is one line's. Where the colour reading cannot hold (the line where the stream's
//   faces would start, found by counting lines at vertex 0, does not hold a vertex and a colour),
//   the stream is read at once instead of after half the vertex lines were read as colours.
// - Vertex colours: required with C; a plain OFF vertex line may carry 3 or 4 extra values, read
//   as a colour too (a common extension). Every vertex has the same number of colour values.
// - Colours become point_data / cell_data "colors", (n, 3) or (n, 4): uint8 when every colour
//   value of the file (vertices and faces apart) is written as an integer (Geomview: 0..255; a
//   value outside is a ReadError), else float64 as written (Geomview: 0..1). Neither meshio 5.0
//   nor VTK 9.1 (which has no OFF reader) reads OFF colours; the layout and the uint8 type are
//   those of vtkPLYReader's colour arrays. A face colour of one integer (a colormap index)
//   becomes cell_data "color_index" (int64). Faces of different colour counts (Geomview allows
//   none for the default colour) leave the face colours unread, with a note.
// - Normals become point_data "normals" (n, 3), texture coordinates "texture_coords" (n, 2).
// - 4OFF, nOFF (homogeneous or n-dimensional vertices) and binary OFF are ReadErrors naming the
//   keyword.
// '#' starts a comment to the end of its line anywhere (after the keyword, the counts, a value),
// as in Geomview's reader; meshio refuses such files. The counts may follow the keyword on its
// line. Text after the last face is noted.
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

// Skips whitespace and '#' comments.
void skip_ws_comments(Cursor& c) {
  while (true) {
    c.skip_ws();
    if (c.at_end() || c.data()[c.offset()] != '#') return;
    c.next_line();
  }
}

// The text of `line` before any '#', trimmed.
std::string_view strip_comment(std::string_view line) {
  return Cursor::trim(line.substr(0, line.find('#')));
}

// The number at the cursor; a comment may follow it with no blank between ("1.5#x").
template <typename T>
T glued_number(Cursor& c, const char* what) {
  const auto at = c.offset();
  try {
    return c.number<T>(what);
  } catch (const ReadError&) {
    // The rare glued comment: parse the text before '#' (from_chars: no exception path in the
    // common case above), else report the original error.
    const auto d = c.data();
    std::size_t e = at;
    while (e < d.size() && d[e] != '#' && d[e] != ' ' && d[e] != '\t' && d[e] != '\n' &&
           d[e] != '\r')
      ++e;
    if (e == at || e >= d.size() || d[e] != '#') throw;
    const char* b = d.data() + at;
    if constexpr (std::is_floating_point_v<T>) {
      if (*b == '+') ++b;
    }
    T v{};
    const auto r = std::from_chars(b, d.data() + e, v);
    if (r.ec != std::errc() || r.ptr != d.data() + e) throw;
    c.seek(e);
    return v;
  }
}

// The next number, across lines and comments (the counts).
template <typename T>
T off_number(Cursor& c, const char* what) {
  skip_ws_comments(c);
  return glued_number<T>(c, what);
}

// True when the current line has no more values (a newline, a comment or the end is next).
bool line_done(Cursor& c) {
  c.skip_blanks();
  if (c.at_end()) return true;
  const char ch = c.data()[c.offset()];
  return ch == '\n' || ch == '#';
}

// The next number on the current line; a ReadError naming the line, with the text
// `short_line()` returns, when it has no more (a callable: built only on that path).
template <typename T, typename Message>
T line_number(Cursor& c, const char* what, const Message& short_line) {
  if (line_done(c)) c.fail(short_line());
  return glued_number<T>(c, what);
}

// What is left of the current line, up to kMax values, each with whether it is written as an
// integer (digits and an optional sign). More than kMax values is a ReadError.
struct Extras {
  static constexpr std::size_t kMax = 6;  // a colour (4) and texture coordinates (2)
  std::array<double, kMax> v{};
  std::array<bool, kMax> is_int{};
  std::size_t n = 0;
  // Whether values [0, k) are all written as integers.
  bool ints(std::size_t k) const {
    for (std::size_t i = 0; i < k; ++i)
      if (!is_int[i]) return false;
    return true;
  }
};

// False (the cursor on the line still) when the line has more than Extras::kMax values.
bool read_extras(Cursor& c, Extras& x) {
  x.n = 0;
  while (!line_done(c)) {
    if (x.n == Extras::kMax) return false;
    const auto b = c.offset();
    x.v[x.n] = glued_number<double>(c, "value");
    const auto d = c.data();
    bool is_int = true;
    for (std::size_t i = b; i < c.offset(); ++i) {
      const char ch = d[i];
      if (!((ch >= '0' && ch <= '9') || (i == b && (ch == '-' || ch == '+')))) is_int = false;
    }
    x.is_int[x.n++] = is_int;
  }
  // Past a comment; a newline is left to the skip_ws_comments that starts the next line.
  if (!c.at_end() && c.data()[c.offset()] == '#') c.next_line();
  return true;
}

// The layout look-ahead (once a file at most, where a vertex line breaks the one-a-line reading,
// and one line for the note): values counted, not parsed.

// The number of values (blank-separated tokens before any '#') from `pos` to the end of its
// line; `pos` moves to the start of the next line.
std::size_t count_line_values(std::string_view d, std::size_t& pos) {
  std::size_t n = 0;
  bool in_value = false;
  for (; pos < d.size(); ++pos) {
    const char ch = d[pos];
    if (ch == '\n' || ch == '#') break;
    const bool blank = ch == ' ' || ch == '\t' || ch == '\r';
    if (!blank && !in_value) ++n;
    in_value = !blank;
  }
  const auto nl = d.find('\n', pos);
  pos = nl == std::string_view::npos ? d.size() : nl + 1;
  return n;
}

// Whether the line at `pos`, of `k` values, can be a face of a mesh of `nv` vertices: an integer
// n (3 or more), n integer indices below nv, then 0, 1, 3 or 4 colour values.
bool can_be_face(std::string_view d, std::size_t pos, std::size_t k, std::int64_t nv) {
  auto end = d.find_first_of("\n#", pos);
  if (end == std::string_view::npos) end = d.size();
  Cursor l(d.substr(pos, end - pos), std::string());
  auto integer = [&](std::int64_t& v) {
    const auto t = l.token();
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  std::int64_t n = 0;
  if (!integer(n) || n < 3 || n > FaceBlocks::kMaxVertices) return false;
  const auto need = static_cast<std::size_t>(n) + 1;
  if (k < need || k - need == 2 || k - need > 4) return false;
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t v = 0;
    if (!integer(v) || v < 0 || v >= nv) return false;
  }
  return true;
}

// Where the faces start when the `need` vertex values from `pos` on are read as a stream: the
// values counted line by line must end with a line's end, followed by a line that can be a face
// (by no values when `nf` is 0: the data's size then). npos when they do not fit so.
std::size_t stream_end(std::string_view d, std::size_t pos, std::size_t need, std::int64_t nv,
                       std::int64_t nf) {
  std::size_t got = 0;
  while (got < need) {
    if (pos >= d.size()) return std::string_view::npos;
    got += count_line_values(d, pos);
  }
  if (got != need) return std::string_view::npos;
  while (pos < d.size()) {
    const auto start = pos;
    const auto k = count_line_values(d, pos);
    if (k == 0) continue;  // blank or comment
    return nf > 0 && can_be_face(d, start, k, nv) ? start : std::string_view::npos;
  }
  return nf == 0 ? d.size() : std::string_view::npos;
}

// The start of the `k`-th line from `pos` that holds a value (blank and comment lines are
// skipped, as skip_ws_comments skips them between vertex lines), or npos where the text ends
// before it: newlines found with memchr, nothing parsed.
std::size_t nth_value_line(std::string_view d, std::size_t pos, std::int64_t k) {
  for (;;) {
    while (pos < d.size() && (d[pos] == ' ' || d[pos] == '\t' || d[pos] == '\r')) ++pos;
    if (pos >= d.size()) return std::string_view::npos;
    const bool holds_value = d[pos] != '\n' && d[pos] != '#';
    if (holds_value && k-- == 0) return pos;
    const void* nl = std::memchr(d.data() + pos, '\n', d.size() - pos);
    if (!nl) return std::string_view::npos;
    pos = static_cast<std::size_t>(static_cast<const char*>(nl) - d.data()) + 1;
  }
}

// Colour values written as integers are Geomview's 0..255: the index of the first of [0, n) that
// is outside, else n.
std::size_t bad_colour(const Extras& x, std::size_t n) {
  if (!x.ints(n)) return n;
  for (std::size_t k = 0; k < n; ++k)
    if (x.v[k] < 0 || x.v[k] > 255) return k;
  return n;
}

std::string bad_colour_message(const Extras& x, std::size_t k, const char* what) {
  // Written as an integer but maybe past any integer type (casting that is undefined).
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x.v[k]);
  return std::string(what) + " colour value " + buf + " is outside 0..255";
}

// Colour values (`width` per row) as uint8 (every value written as an integer, each 0..255) or
// float64.
Array colour_array(const ScratchVector<double>& v, std::int64_t rows, std::int64_t width,
                   bool as_uint8) {
  if (!as_uint8) return Array::from_vector(v, {rows, width});
  Array a = Array::of<std::uint8_t>({rows, width});
  auto* out = a.as<std::uint8_t>();
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<std::uint8_t>(v[i]);
  return a;
}

struct Header {
  bool st = false, colour = false, normals = false;
};

Header parse_keyword(Cursor& c) {
  const auto line = strip_comment(c.nonempty_line());
  Cursor l(line, c.file());
  const auto key = l.token();
  Header h;
  std::string_view k = key;
  auto take = [&](std::string_view prefix) {
    if (k.substr(0, prefix.size()) != prefix) return false;
    k.remove_prefix(prefix.size());
    return true;
  };
  h.st = take("ST");
  h.colour = take("C");
  h.normals = take("N");
  const bool four = take("4");
  const bool ndim = take("n");
  if (k != "OFF") {
    c.fail("the first line is not an OFF keyword ([ST][C][N][4][n]OFF), found '" +
           std::string(line.substr(0, 40)) + "'");
  }
  if (four || ndim) {
    c.fail("'" + std::string(key) + "': " +
           (ndim ? "vertices of a given dimension (nOFF)" : "homogeneous 4-component vertices") +
           " are not supported");
  }
  const auto rest = Cursor::trim(line.substr(key.size()));
  if (rest == "BINARY") c.fail("'" + std::string(key) + " BINARY': binary OFF is not supported");
  // Counts on the keyword's line ("OFF 8 6 12"), as Geomview's reader takes them: read from
  // there.
  if (!rest.empty()) c.seek(static_cast<std::size_t>(rest.data() - c.data().data()));
  return h;
}

Mesh parse_off(std::string_view file_data, MappedFile& file) {
  const std::string& path = file.path();
  Cursor c(file_data, path, file.progress());
  c.seek(utf8_bom(file_data));
  const Header h = parse_keyword(c);
  skip_ws_comments(c);
  if (c.at_end()) c.fail("no vertex/face counts");
  const auto nv = off_number<std::int64_t>(c, "vertex count");
  const auto nf = off_number<std::int64_t>(c, "face count");
  off_number<std::int64_t>(c, "edge count");
  if (nv < 0 || static_cast<std::size_t>(nv) > c.remaining() / 6)
    c.fail("vertex count " + std::to_string(nv) + " is more than the file holds");
  if (nf < 0 || static_cast<std::size_t>(nf) > c.remaining() / 4)
    c.fail("face count " + std::to_string(nf) + " is more than the file holds");
  Mesh m;
  m.points = Array::of<double>({nv, 3});
  double* p = m.points.as<double>();
  Array normals;
  if (h.normals) normals = Array::of<double>({nv, 3});
  double* nrm = h.normals ? normals.as<double>() : nullptr;
  const std::size_t fixed = h.normals ? 6 : 3;  // values every vertex line must have
  const std::size_t st = h.st ? 2 : 0;
  ScratchVector<double> colours, tex;
  std::size_t colour_width = 0;  // of the first vertex; every other must match
  bool colours_int = true;
  Extras x;
  const std::size_t whole = fixed + st;  // values of a vertex without its colour
  std::string layout;  // what is wrong with a vertex line that does not hold one vertex
  // Vertex i from its own line; false (with `layout` set) when the line's values are not one
  // vertex's (or, on a plain OFF, its colour values are no colour). Bad values are ReadErrors.
  auto vertex_line = [&](std::int64_t i, std::size_t line_start) {
    auto short_line = [&](std::size_t got) {
      layout = "vertex " + std::to_string(i) + " has " + std::to_string(got) + " values; " +
               std::to_string(fixed + st + (h.colour ? 3 : 0)) + " or more needed";
      return false;
    };
    for (std::size_t k = 0; k < 3; ++k) {
      if (line_done(c)) return short_line(k);
      p[3 * i + k] = glued_number<double>(c, "vertex coordinate");
    }
    for (std::size_t k = 0; nrm && k < 3; ++k) {
      if (line_done(c)) return short_line(3 + k);
      nrm[3 * i + k] = glued_number<double>(c, "vertex normal");
    }
    if (!read_extras(c, x)) {
      layout = "too many values on a vertex line";
      return false;
    }
    if (x.n < st) return short_line(fixed + x.n);
    const std::size_t w = x.n - st;  // colour values
    if (i == 0) {
      if (h.colour && w != 3 && w != 4) {
        layout = "vertex 0 has " + std::to_string(w) + " colour values; 3 or 4 needed";
        return false;
      }
      if (!h.colour && w != 0 && w != 3 && w != 4) {
        layout = "vertex 0 has " + std::to_string(fixed + x.n) + " values; " +
                 std::to_string(fixed + st) + " (or 3 or 4 more for a colour) expected";
        return false;
      }
      colour_width = w;
      if (w) colours.reserve(static_cast<std::size_t>(nv) * w);
    } else if (w != colour_width) {
      layout = "vertex " + std::to_string(i) + " has " + std::to_string(w) +
               " colour values, vertex 0 has " + std::to_string(colour_width);
      return false;
    }
    if (w) {
      if (const auto k = bad_colour(x, w); k < w) [[unlikely]] {
        layout = bad_colour_message(x, k, "vertex");
        if (h.colour) {
          c.seek(line_start);
          c.fail(layout);
        }
        return false;
      }
      colours.insert(colours.end(), x.v.begin(), x.v.begin() + static_cast<std::ptrdiff_t>(w));
      colours_int = colours_int && x.ints(w);
    }
    if (st)
      tex.insert(tex.end(), x.v.begin() + static_cast<std::ptrdiff_t>(w),
                 x.v.begin() + static_cast<std::ptrdiff_t>(w + 2));
    return true;
  };
  if (st) tex.reserve(static_cast<std::size_t>(nv) * 2);
  // A plain OFF vertex line of a vertex and 3 or 4 values more is one vertex and its colour, or
  // part of a stream of values ("0 0 0 1 0 0": two vertices). The colours while they hold to the
  // last vertex; where they break before, the stream from vertex 0 if it fits. Where both fit
  // (the stream's values end with vertex line `faces_at`'s line, and the next line can be a
  // face), the colours, noted.
  std::size_t first_line = 0;  // vertex 0's
  std::int64_t faces_at = -1;  // the vertex whose line would start the stream's faces
  std::size_t faces_line = std::string_view::npos;
  bool stream = false;
  std::int64_t i = 0;
  // Whether the values from vertex `from_vertex`'s line `from` on fit a stream; if so, the
  // cursor is there and what the one-vertex-a-line reading kept is dropped (the caller sets i and
  // stream: captured here, they would live in memory through the whole vertex loop).
  auto to_stream = [&](std::size_t from, std::int64_t from_vertex) {
    if (stream_end(file_data, from, whole * static_cast<std::size_t>(nv - from_vertex), nv, nf) ==
        std::string_view::npos)
      return false;
    c.seek(from);
    colours.clear();
    tex.clear();
    colour_width = 0;
    colours_int = true;
    faces_line = std::string_view::npos;
    return true;
  };
  for (; i < nv && !stream; ++i) {
    file.advance(c.offset());
    skip_ws_comments(c);
    const auto line_start = c.offset();
    c.seek(line_start);  // errors name this line
    if (i == 0) first_line = line_start;
    if (i == faces_at) [[unlikely]]
      faces_line = line_start;
    if (vertex_line(i, line_start)) [[likely]] {
      if (i == 0 && colour_width && !h.colour && nf > 0 &&
          whole * static_cast<std::size_t>(nv) % (whole + colour_width) == 0) {
        faces_at = static_cast<std::int64_t>(whole * static_cast<std::size_t>(nv) /
                                             (whole + colour_width));
        // The colour reading can hold to the last vertex only if line `faces_at` (where the
        // stream's faces would start) holds a vertex and its colour too. Where it does not, that
        // reading would break there or before and restart as the stream from vertex 0: decide
        // now, with newlines counted, instead of reading those lines twice (a file of two
        // vertices a line read 1.6x slower than one a line).
        std::size_t pos = nth_value_line(file_data, first_line, faces_at);
        if (pos != std::string_view::npos &&
            count_line_values(file_data, pos) != whole + colour_width && to_stream(first_line, 0)) {
          i = 0;
          stream = true;
          break;
        }
      }
      continue;
    }
    // Not one vertex's values: a stream where it fits (not with a C header, whose colours would
    // have to be guessed), else the line's error. From this line when no vertex had a colour,
    // from vertex 0 when the colours broke here.
    if (const auto from_vertex = colour_width ? 0 : i;
        !h.colour && to_stream(colour_width ? first_line : line_start, from_vertex)) {
      i = from_vertex;
      stream = true;
      break;
    }
    c.seek(line_start);
    if (h.colour) {
      std::size_t pos = line_start;
      const auto k = count_line_values(file_data, pos);
      if (k < whole || k > whole + 4)
        layout += " (with a C header each vertex and its colour have a line of their own)";
    }
    c.fail(layout);
  }
  if (stream) {
    // Values across lines and comments; an error names the line of the value it is about.
    auto value = [&](std::int64_t v, std::size_t k, const char* what) {
      skip_ws_comments(c);
      if (c.at_end()) {
        c.fail("the file ends in vertex " + std::to_string(v) + " after " + std::to_string(k) +
               " of its " + std::to_string(whole) + " values");
      }
      return glued_number<double>(c, what);
    };
    for (; i < nv; ++i) {
      file.advance(c.offset());
      for (std::size_t k = 0; k < 3; ++k) p[3 * i + k] = value(i, k, "vertex coordinate");
      for (std::size_t k = 0; nrm && k < 3; ++k) nrm[3 * i + k] = value(i, 3 + k, "vertex normal");
      for (std::size_t k = 0; k < st; ++k) tex.push_back(value(i, fixed + k, "texture coordinate"));
    }
    // The look-ahead counted the values to end with a line; a token it counted as one value but
    // that reads as more cannot be, so this is a guard.
    if (!line_done(c)) c.fail("values after the last vertex on its line");
  }
  FaceBlocks faces(/*consecutive=*/false);
  faces.expect(nf, c.remaining());
  std::vector<std::int64_t> nodes;
  ScratchVector<double> face_colours;
  std::size_t face_width = 0;  // colour values of face 0
  bool face_int = true, face_mixed = false;
  std::size_t first_mixed = 0;  // byte offset of the first face whose count differs
  for (std::int64_t f = 0; f < nf; ++f) {
    file.advance(c.offset());
    skip_ws_comments(c);
    c.seek(c.offset());
    const auto n = line_number<std::int64_t>(
        c, "face vertex count", [&] { return "face " + std::to_string(f) + " is missing"; });
    FaceBlocks::check_size(n, c);
    nodes.resize(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      if (line_done(c)) {
        c.fail("face " + std::to_string(f) + " lists " + std::to_string(k) + " of its " +
               std::to_string(n) + " vertex indices");
      }
      nodes[k] = glued_number<std::int64_t>(c, "face vertex index");
    }
    faces.add(nodes.data(), nodes.size(), 0, c);
    const auto at = c.offset();
    if (!read_extras(c, x)) c.fail("too many values on a face line");
    if (x.n == 2 || x.n > 4) {
      c.seek(at);
      c.fail("face " + std::to_string(f) + " has " + std::to_string(x.n) +
             " colour values (0, 1, 3 or 4 allowed)");
    }
    if (f == 0) face_width = x.n;
    if (x.n != face_width && !face_mixed) {
      face_mixed = true;
      first_mixed = at;
    }
    if (!face_mixed && x.n) {
      if (x.n == 1 && (!x.ints(1) || x.v[0] < 0 || x.v[0] > 2147483647.0)) {
        c.seek(at);
        c.fail("face " + std::to_string(f) +
               ": a colormap index must be an integer in 0..2147483647");
      }
      if (x.n > 1) {
        if (const auto k = bad_colour(x, x.n); k < x.n) {
          c.seek(at);
          c.fail(bad_colour_message(x, k, "face"));
        }
      }
      face_colours.insert(face_colours.end(), x.v.begin(),
                          x.v.begin() + static_cast<std::ptrdiff_t>(x.n));
      face_int = face_int && x.ints(x.n);
    }
  }
  file.release_before(file_data.size());  // what follows the faces is only looked at
  faces.finish(m, nv, c);
  const auto nvw = static_cast<std::int64_t>(colour_width);
  if (colour_width) {
    m.point_data["colors"] = colour_array(colours, nv, nvw, colours_int);
  }
  if (h.normals) m.point_data["normals"] = std::move(normals);
  if (st) m.point_data["texture_coords"] = Array::from_vector(tex, {nv, 2});
  std::size_t both_fit = std::string_view::npos;  // where the stream's faces would start
  if (faces_line != std::string_view::npos) {
    std::size_t pos = faces_line;
    if (can_be_face(file_data, faces_line, count_line_values(file_data, pos), nv))
      both_fit = faces_line;
  }
  if (both_fit != std::string_view::npos) {
    m.notes.push_back("off: every vertex line holds a vertex and " + std::to_string(colour_width) +
                      " colour values, read so; read as a stream of values (as Geomview reads "
                      "OFF, without colours) the vertices would end before " +
                      path + ":" + std::to_string(c.line_at(both_fit)) +
                      " and the faces start there");
  }
  if (face_mixed) {
    m.notes.push_back("off: faces have different numbers of colour values (face 0: " +
                      std::to_string(face_width) + "; first other at " + path + ":" +
                      std::to_string(c.line_at(first_mixed)) + "); face colours not read");
  } else if (face_width == 1) {
    ScratchVector<std::int64_t> idx(face_colours.begin(), face_colours.end());
    m.cell_data["color_index"] =
        split_rows(idx, sizeof(std::int64_t), kInt64, {}, faces.block_of(), faces.num_blocks());
  } else if (face_width) {
    const auto w = static_cast<std::int64_t>(face_width);
    const Array all = colour_array(face_colours, nf, w, face_int);
    m.cell_data["colors"] = split_rows(
        std::string_view(static_cast<const char*>(all.data()), all.nbytes()),
        all.itemsize() * face_width, all.dtype(), {w}, faces.block_of(), faces.num_blocks());
  }
  skip_ws_comments(c);
  if (!c.at_end()) {
    m.notes.push_back("off: " + path + ":" + std::to_string(c.line_at(c.offset())) +
                      ": text after the last of the " + std::to_string(nf) +
                      " faces the header counts; not read");
  }
  return m;
}

}  // namespace

Mesh read_off(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return parse_off(data, file); },
      Access::window);
}

}  // namespace meshdock::mesh
