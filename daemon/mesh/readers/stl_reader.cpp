// STL, ascii and binary. Like meshio: binary when 84 + 50 * count equals the file size (some
// binary files start with "solid" too), vertices merged where all three coordinates are equal
// (first appearance order), facet normals kept as cell_data "facet_normals" -- for binary files
// too, where meshio drops them. An ascii file may hold several "solid NAME ... endsolid" bodies
// (CAD exports, one per part): all are read into the one triangle block, like meshio and
// vtkSTLReader, and with more than one body each becomes a cell region named after its solid
// (the facets of that body), with a note naming the merged bodies. Text after the last
// "endsolid" that is not another solid, and a missing final "endsolid", are notes. Ascii
// keywords are taken in any case ("SOLID", "FACET NORMAL", ...), as vtkSTLReader takes them,
// after a UTF-8 byte-order mark if there is one.
// A file whose size does not match its count is ascii when it starts with "solid" and its
// first bytes are text; otherwise it is read as binary when it is at least the 84-byte header:
// - bytes after the facets the header counts: those facets are read, the rest noted;
// - a count of 0 with facets after it (some exporters never fill it in): the facets the size
//   holds are read, as vtkSTLReader reads them (it reads max(count, size / 50)), noted;
// - more facets counted than the file holds: a ReadError (truncated).
// Any other file is a ReadError saying what its start is.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

// Whether `word` is the keyword `kw` (lowercase letters) in any case: `c | 0x20` equals a
// lowercase letter only for that letter in either case.
bool is_kw(std::string_view word, std::string_view kw) {
  if (word.size() != kw.size()) return false;
  for (std::size_t i = 0; i < kw.size(); ++i)
    if ((word[i] | 0x20) != kw[i]) return false;
  return true;
}

// Whether the file's first bytes (up to 512, any NUL padding at its very end aside) hold no
// control characters but whitespace: a binary STL's 84-byte header is followed by its count
// (zero bytes for a count under 2^24) and float bits, so one whose header starts with "solid"
// is told from ascii here, before the ascii parser takes its first line for a name.
bool looks_like_text(std::string_view data) {
  std::size_t end = data.size();
  while (end > 0 && data[end - 1] == '\0') --end;
  end = std::min<std::size_t>(end, 512);
  for (std::size_t i = 0; i < end; ++i) {
    const auto ch = static_cast<unsigned char>(data[i]);
    if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r' && ch != '\f' && ch != '\v') ||
        ch == 0x7f)
      return false;
  }
  return true;
}

// First-appearance numbering of the facets' corners (an STL file shares none): each distinct
// point is kept once, in order, and an open-addressing table (linear probing, at most half
// full) holds their numbers + 1. Points are equal when all three coordinates are (==, as
// before: 0.0 and -0.0 are one point, a NaN equals nothing). `Real` is the file's type, float
// for a binary file (the table then compares 12 bytes, and the points are widened once at the
// end), double for text. A std::unordered_map of the 1.5M corners of 500k facets took 3x the
// points' bytes, a node each.
template <typename Real, typename Slot>
class PointIndex {
 public:
  using Point = std::array<Real, 3>;

  // Room for `max_points` (reserved, touched as they come).
  explicit PointIndex(std::size_t max_points)
      : points_(HugeArray<Point>::reserve(max_points)), slots_(kFirstSlots) {}

  // The number of `p`: an earlier point's equal to it, else the next.
  std::int64_t number(const Point& p) {
    // A NaN equals nothing: such a point is always new, and kept out of the table, where
    // every one of them would hash alike and make the probes quadratic.
    if (p[0] != p[0] || p[1] != p[1] || p[2] != p[2]) [[unlikely]]
      return append(p);
    if (2 * (n_ + 1) > slots_.size()) [[unlikely]]
      grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(p) & mask;; i = (i + 1) & mask) {
      const Slot s = slots_[i];
      if (s == 0) {
        slots_[i] = static_cast<Slot>(n_ + 1);
        return append(p);
      }
      const Point& q = points_[s - 1];
      if (q[0] == p[0] && q[1] == p[1] && q[2] == p[2]) return static_cast<std::int64_t>(s - 1);
    }
  }

  // The points as float64 rows. The table goes first, then the points' huge pages one by one
  // as they are copied, last first: the array's tail (faulted in when it is made) takes the
  // last page's points with no new memory, and each page after that comes as one goes.
  Array take_points() {
    slots_.reset();
    Array out = Array::of<double>({static_cast<std::int64_t>(n_), 3});
    auto* dst = out.as<double>();
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    // Page k holds the points from first(k) on (one may straddle its start: it is taken with
    // page k, while page k - 1 is still there).
    auto first = [](std::size_t k) { return k * kHuge / sizeof(Point); };
    for (std::size_t k = n_ * sizeof(Point) / kHuge + 1; k-- > 0;) {
      for (std::size_t j = first(k); j < std::min(n_, first(k + 1)); ++j)
        for (int c = 0; c < 3; ++c) dst[3 * j + c] = points_[j][c];
      points_.release_from(first(k));
    }
    points_.reset();
    return out;
  }

 private:
  static constexpr std::size_t kFirstSlots = 1024;

  static std::uint64_t hash(const Point& p) {
    std::uint64_t h = 0;
    for (int k = 0; k < 3; ++k) {
      Real v = p[k];
      if (v == 0) v = 0;  // -0.0 and 0.0 are one point
      std::conditional_t<sizeof(Real) == 4, std::uint32_t, std::uint64_t> bits;
      std::memcpy(&bits, &v, sizeof bits);
      h = (h ^ bits) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    return h ^ (h >> 32);
  }

  std::int64_t append(const Point& p) {
    if (n_ == points_.size()) [[unlikely]]
      more_room();
    points_[n_] = p;
    return static_cast<std::int64_t>(n_++);
  }

  // Twice the slots, every point placed again (no compares: they are all distinct).
  void grow() {
    HugeArray<Slot> bigger(2 * slots_.size());
    const std::size_t mask = bigger.size() - 1;
    for (std::size_t n = 0; n < n_; ++n) {
      const Point& p = points_[n];
      if (p[0] != p[0] || p[1] != p[1] || p[2] != p[2]) continue;  // not in the table
      std::size_t i = hash(p) & mask;
      while (bigger[i] != 0) i = (i + 1) & mask;
      bigger[i] = static_cast<Slot>(n + 1);
    }
    slots_ = std::move(bigger);
  }

  // Only should max_points have been too few.
  void more_room() {
    auto bigger = HugeArray<Point>::reserve(2 * points_.size() + 1);
    if (n_) std::memcpy(bigger.data(), points_.data(), n_ * sizeof(Point));
    points_ = std::move(bigger);
  }

  HugeArray<Point> points_;
  std::size_t n_ = 0;
  HugeArray<Slot> slots_;
};

// f(index) with a PointIndex<Real, Slot> for up to `max_points` points: 4-byte slots (half the
// table) unless the numbers could outgrow them.
template <typename Real, typename F>
auto with_point_index(std::size_t max_points, F&& f) {
  if (max_points < std::numeric_limits<std::uint32_t>::max()) {
    PointIndex<Real, std::uint32_t> index(max_points);
    return f(index);
  }
  PointIndex<Real, std::uint64_t> index(max_points);
  return f(index);
}

// The mesh of `tris` facets: the points, then the triangles and their normals as cell_data.
Mesh build(Array points, Array conn, Array normals, std::int64_t tris) {
  Mesh m;
  m.points = std::move(points);
  if (tris) {
    m.cells.push_back(CellBlock::fixed("triangle", std::move(conn)));
    m.cell_data["facet_normals"].push_back(std::move(normals));
  }
  return m;
}

// One cell region per solid name (facet numbers), and a note naming the merged bodies.
template <typename Bodies>
void add_bodies(Mesh& m, const Bodies& bodies, std::size_t num_facets) {
  std::vector<std::string> names;  // first appearance order
  std::vector<std::vector<std::int64_t>> facets;
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    const auto end = b + 1 < bodies.size() ? bodies[b + 1].first_facet : num_facets;
    const auto at = std::find(names.begin(), names.end(), bodies[b].name) - names.begin();
    if (static_cast<std::size_t>(at) == names.size()) {
      names.push_back(bodies[b].name);
      facets.emplace_back();
    }
    for (auto f = bodies[b].first_facet; f < end; ++f)
      facets[at].push_back(static_cast<std::int64_t>(f));
  }
  std::string list;
  constexpr std::size_t kListed = 20;  // a note, not a dump
  for (std::size_t b = 0; b < std::min(bodies.size(), kListed); ++b) {
    const auto end = b + 1 < bodies.size() ? bodies[b + 1].first_facet : num_facets;
    list += (b ? ", '" : "'") + bodies[b].name + "' (" +
            std::to_string(end - bodies[b].first_facet) + ")";
  }
  if (bodies.size() > kListed) list += ", ...";
  m.notes.push_back("stl: " + std::to_string(bodies.size()) +
                    " solids merged into one triangle block, one region each: " + list);
  for (std::size_t r = 0; r < names.size(); ++r) {
    Region reg;
    reg.name = names[r];
    reg.kind = RegionKind::kCell;
    reg.dim = 2;
    reg.tag = static_cast<std::int64_t>(r) + 1;  // Gmsh physical tags are positive
    reg.entries = Array::from_vector(facets[r]);
    m.regions.push_back(std::move(reg));
  }
}

}  // namespace

namespace {

// A binary file of `count` facets (50 bytes each after the 84-byte header): read with pread a
// few thousand facets at a time (its pages never mapped), the normals and the corners' numbers
// written straight into their arrays.
Mesh read_binary(const MappedFile& file, std::uint64_t count) {
  const auto tris = static_cast<std::int64_t>(count);
  Array normals = Array::of<double>({tris, 3});
  Array conn = Array::of<std::int64_t>({tris, 3});
  auto* nrm = normals.as<double>();
  auto* ids = conn.as<std::int64_t>();
  return with_point_index<float>(3ull * count, [&](auto& index) {
    constexpr std::size_t kFacets = 5120;  // 250 KiB a read
    HugeArray<char> buffer(50 * kFacets);
    for (std::size_t t0 = 0; t0 < count; t0 += kFacets) {
      const std::size_t n = std::min<std::size_t>(kFacets, count - t0);
      file.read_at(84 + 50 * t0, 50 * n, buffer.data());
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t t = t0 + i;
        float f[12];
        std::memcpy(f, buffer.data() + 50 * i, 48);
        for (int k = 0; k < 3; ++k) nrm[3 * t + k] = f[k];
        for (int v = 0; v < 3; ++v)
          ids[3 * t + v] = index.number({f[3 + 3 * v], f[4 + 3 * v], f[5 + 3 * v]});
      }
    }
    buffer.reset();
    return build(index.take_points(), std::move(conn), std::move(normals), tris);
  });
}

// A binary file whose size does not match its count (see the top of the file).
Mesh read_binary_mismatched(const MappedFile& file, std::uint32_t count, std::size_t size) {
  const std::string& path = file.path();
  const std::uint64_t held = (size - 84) / 50;  // whole facets after the header
  if (count > held) {
    throw ReadError(path + ": byte 80: binary STL (its first bytes are not text): the header " +
                    "counts " + std::to_string(count) + " triangles (" +
                    std::to_string(84 + 50ull * count) + " bytes) but the file has " +
                    std::to_string(size) + " bytes (truncated?)");
  }
  const std::uint64_t tris = count == 0 ? held : count;
  Mesh m = read_binary(file, tris);
  if (count == 0 && held > 0) {
    m.notes.push_back("stl: " + path + ": the binary header counts 0 triangles but the file " +
                      "holds " + std::to_string(held) + " (its size); read them, as vtkSTLReader " +
                      "does: the header's count is wrong");
  }
  const std::uint64_t after = 84 + 50ull * tris;
  if (after < size) {
    m.notes.push_back("stl: " + path + ": " + std::to_string(size - after) + " bytes after the " +
                      std::to_string(tris) + " triangles (from byte " + std::to_string(after) +
                      ") not read");
  }
  return m;
}

Mesh parse_stl(std::string_view file_data, MappedFile& file) {
  const std::string& path = file.path();
  Cursor c(file_data, path, file.progress());
  const auto data = file_data;
  std::uint32_t count = 0;
  if (data.size() >= 84) {
    std::memcpy(&count, data.data() + 80, 4);
    if (84 + 50ull * count == data.size()) return read_binary(file, count);
  }
  c.seek(utf8_bom(data));
  const auto first = c.token();
  const bool text = looks_like_text(data);
  if (!is_kw(first, "solid") || !text) {
    if (data.size() >= 84 && !text) return read_binary_mismatched(file, count, data.size());
    std::string what = "not an STL file: ascii STL starts with 'solid', this one with '" +
                       std::string(first.substr(0, 40)) + "'";
    if (data.size() < 84) {
      what += ", and it is shorter than a binary STL's 84-byte header";
    } else {
      what += ", and as binary its header counts " + std::to_string(count) + " triangles (" +
              std::to_string(84 + 50ull * count) + " bytes), the file has " +
              std::to_string(data.size()) + " bytes";
    }
    c.fail(what);
  }
  // One entry per body: its name and its first facet; bodies with the same name share a region.
  struct Body {
    std::string name;
    std::size_t first_facet;
  };
  std::vector<Body> bodies;
  Chunks<double> normals;        // 3 per facet
  Chunks<std::int64_t> corners;  // 3 point numbers per facet
  auto start_body = [&] {
    auto name = std::string(Cursor::trim(c.rest_of_line()));
    if (name.empty()) name = "solid" + std::to_string(bodies.size());
    bodies.push_back({std::move(name), normals.size() / 3});
  };
  start_body();
  // A facet takes at least 85 bytes of text ("facet normal 0 0 0 outer loop", three "vertex 0 0
  // 0", "endloop endfacet", single spaces): this bounds the points (reserved, not touched).
  const std::size_t max_facets = data.size() / 85 + 1;
  return with_point_index<double>(3 * max_facets, [&](auto& index) {
    bool ended = false;
    std::string trailing;
    while (true) {
      file.advance(c.offset());
      const auto word = c.token();
      if (word.empty()) break;
      if (is_kw(word, "endsolid")) {
        c.next_line();  // its (optional) name
        const auto next = c.token();
        if (next.empty()) {
          ended = true;
          break;
        }
        if (!is_kw(next, "solid")) {
          // The facets are all read: say what follows rather than refuse the file (some
          // exporters pad with NULs or append their own text).
          trailing = "stl: " + path + ":" + std::to_string(c.line()) +
                     ": text after the last 'endsolid' not read ('" +
                     std::string(next.substr(0, 40)) + "')";
          ended = true;
          break;
        }
        start_body();
        continue;
      }
      if (!is_kw(word, "facet"))
        c.fail("expected 'facet' or 'endsolid', found '" + std::string(word) + "'");
      if (!is_kw(c.token(), "normal")) c.fail("expected 'normal' after 'facet'");
      for (int k = 0; k < 3; ++k) normals.push_back(c.number<double>("normal component"));
      if (!is_kw(c.token(), "outer") || !is_kw(c.token(), "loop")) c.fail("expected 'outer loop'");
      for (int v = 0; v < 3; ++v) {
        if (!is_kw(c.token(), "vertex")) c.fail("expected 'vertex' (only triangles are valid STL)");
        std::array<double, 3> p;
        for (auto& x : p) x = c.number<double>("vertex coordinate");
        corners.push_back(index.number(p));
      }
      if (!is_kw(c.token(), "endloop")) c.fail("expected 'endloop'");
      if (!is_kw(c.token(), "endfacet")) c.fail("expected 'endfacet'");
    }
    file.release_before(data.size());  // the arrays take its place
    const auto tris = static_cast<std::int64_t>(normals.size() / 3);
    Array points = index.take_points();
    Array conn = array_from(corners, {tris, 3});
    Mesh m = build(std::move(points), std::move(conn), array_from(normals, {tris, 3}), tris);
    if (!ended) m.notes.push_back("stl: no 'endsolid' at the end of the file (truncated?)");
    if (!trailing.empty()) m.notes.push_back(trailing);
    if (bodies.size() > 1) add_bodies(m, bodies, static_cast<std::size_t>(tris));
    return m;
  });
}

}  // namespace

Mesh read_stl(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return parse_stl(data, file); },
      Access::window);
}

}  // namespace meshdock::mesh
