#include "daemon/mesh/readers/nastran_coords.hpp"

#include <cmath>

namespace meshdock::mesh::nastran {

namespace {

constexpr double kDegree = 3.14159265358979323846 / 180.0;

Vec3 minus(const Vec3& a, const Vec3& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}

Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

double norm(const Vec3& a) {
  return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

Vec3 scaled(const Vec3& a, double s) {
  return {a[0] * s, a[1] * s, a[2] * s};
}

// A point's coordinates in a system's own kind as rectangular coordinates along its axes.
Vec3 rectangular(Axes axes, const Vec3& x) {
  switch (axes) {
    case Axes::kCylindrical:
      return {x[0] * std::cos(x[1] * kDegree), x[0] * std::sin(x[1] * kDegree), x[2]};
    case Axes::kSpherical: {
      const double t = x[1] * kDegree, p = x[2] * kDegree;
      return {x[0] * std::sin(t) * std::cos(p), x[0] * std::sin(t) * std::sin(p),
              x[0] * std::cos(t)};
    }
    case Axes::kRectangular:
      break;
  }
  return x;
}

}  // namespace

bool CoordSystems::add(const CoordCard& c) {
  if (c.cid == 0) return false;  // basic: no card defines it
  return systems_.emplace(c.cid, System{c}).second;
}

Vec3 CoordSystems::to_basic(std::int64_t cid, const Vec3& x, int depth) {
  if (cid == 0) return x;
  const System& s = build(cid, depth);
  const Vec3 r = rectangular(s.card.axes, x);
  Vec3 out = s.origin;
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 3; ++j) out[static_cast<std::size_t>(j)] += r[k] * s.axes[k][j];
  return out;
}

const CoordSystems::System& CoordSystems::build(std::int64_t cid, int depth) {
  const auto it = systems_.find(cid);
  // RIDs and CORD1 grids' CPs are checked below before their systems are built: only a caller
  // of to_basic that did not check defines() gets here with an unknown one.
  if (it == systems_.end())
    throw CoordError{CoordError::kNoCard,
                     "no CORD card defines coordinate system " + std::to_string(cid)};
  System& s = it->second;
  if (s.state == State::kBuilt) return s;
  const auto fail = [&](const std::string& what) {
    throw CoordError{s.card.card, "coordinate system " + std::to_string(s.card.cid) + ": " + what};
  };
  if (s.state == State::kBuilding) fail("it is defined through itself");
  if (depth >= kMaxChain)
    fail("its definition goes through more than " + std::to_string(kMaxChain) +
         " coordinate systems");
  s.state = State::kBuilding;
  std::array<Vec3, 3> abc;
  for (std::size_t k = 0; k < 3; ++k) {
    if (s.card.by_grids) {
      std::int64_t cp = 0;
      Vec3 x{};
      const auto g = s.card.grids[k];
      if (!grids_(g, cp, x)) fail("grid " + std::to_string(g) + " is not one of the GRIDs");
      if (!defines(cp))
        fail("grid " + std::to_string(g) + " is in coordinate system " + std::to_string(cp) +
             ", which no CORD card defines");
      abc[k] = to_basic(cp, x, depth + 1);
    } else {
      if (!defines(s.card.rid))
        fail("its reference system RID " + std::to_string(s.card.rid) +
             " is not one a CORD card defines");
      const Vec3 x{s.card.abc[3 * k], s.card.abc[3 * k + 1], s.card.abc[3 * k + 2]};
      abc[k] = to_basic(s.card.rid, x, depth + 1);
    }
  }
  const Vec3 z = minus(abc[1], abc[0]);
  const Vec3 c = minus(abc[2], abc[0]);
  const double lz = norm(z), lc = norm(c);
  if (!(lz > 0) || !std::isfinite(lz)) fail("points A and B coincide (B - A sets the z axis)");
  const Vec3 y = cross(z, c);
  const double ly = norm(y);
  // C on the z axis (or as good as: sin of the angle under 1e-12) leaves the x axis undefined.
  if (!(ly > 1e-12 * lz * lc) || !std::isfinite(ly))
    fail("point C lies on the z axis through A and B (C sets the xz plane)");
  s.origin = abc[0];
  s.axes[2] = scaled(z, 1 / lz);
  s.axes[1] = scaled(y, 1 / ly);
  s.axes[0] = cross(s.axes[1], s.axes[2]);
  s.state = State::kBuilt;
  return s;
}

}  // namespace meshdock::mesh::nastran
