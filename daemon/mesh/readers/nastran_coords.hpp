// Nastran's coordinate systems: the CORD1R / CORD1C / CORD1S and CORD2R / CORD2C / CORD2S cards
// of a deck, and GRID coordinates given in them (a GRID's CP field) taken to the basic system.
//
// A system is an origin A, a z axis through A and B, and an xz plane holding C (MSC Nastran
// Quick Reference, CORD2R): ez = (B - A) / |B - A|, ey = ez x (C - A) normalized, ex = ey x ez.
// CORD2x gives A, B and C as coordinates in its reference system RID (0 or blank: basic), which
// may itself be any system; CORD1x names three GRIDs standing for them, each at its own CP. A
// point's coordinates in a system are rectangular (x, y, z), cylindrical (R, theta, z) or
// spherical (R, theta, phi), angles in degrees; spherical theta is from the z axis and phi
// from the xz plane.
//
// Systems are built when first used, so a deck's unused or broken systems cost nothing; a chain
// of reference systems deeper than kMaxChain, a system defined through itself, A = B, C on the
// z axis, an unknown RID or CORD1 grid are CoordErrors naming the system and its card.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

namespace meshdock::mesh::nastran {

enum class Axes : std::uint8_t { kRectangular, kCylindrical, kSpherical };

using Vec3 = std::array<double, 3>;

// One system as its card gives it.
struct CoordCard {
  std::int64_t cid = 0;
  Axes axes = Axes::kRectangular;
  bool by_grids = false;                // CORD1x: `grids`; CORD2x: `rid` and `abc`
  std::int64_t rid = 0;                 // CORD2x: the system A, B and C are given in
  std::array<double, 9> abc{};          // CORD2x: A, B, C
  std::array<std::int64_t, 3> grids{};  // CORD1x: the GRIDs at A, B, C
  std::size_t card = 0;                 // which CORD card of the deck (0, 1, ...), for errors
};

// A system that cannot be built: its card (CoordCard::card, or kNoCard) and why, naming it.
struct CoordError {
  static constexpr std::size_t kNoCard = static_cast<std::size_t>(-1);
  std::size_t card;
  std::string what;
};

class CoordSystems {
 public:
  static constexpr int kMaxChain = 64;  // systems defined through systems defined through ...

  // A GRID's CP and coordinates as the file gives them; false when no GRID has the id.
  using GridLookup = std::function<bool(std::int64_t id, std::int64_t& cp, Vec3& x)>;

  explicit CoordSystems(GridLookup grids) : grids_(std::move(grids)) {}

  // False when `c.cid` has a system already (the deck's error: the caller names the card).
  bool add(const CoordCard& c);
  bool defines(std::int64_t cid) const { return cid == 0 || systems_.count(cid) != 0; }
  bool empty() const { return systems_.empty(); }

  // Coordinates `x` in system `cid` (0, or one defines() knows) as basic coordinates; the
  // system (and every system it is defined through) is built on its first use. Throws
  // CoordError.
  Vec3 to_basic(std::int64_t cid, const Vec3& x) { return to_basic(cid, x, 0); }
  // Builds system `cid` (one defines() knows) without a point: CORD1 systems read their GRIDs
  // as the file gives them, so every system is built before any GRID is moved.
  void prepare(std::int64_t cid) {
    if (cid != 0) build(cid, 0);
  }

 private:
  enum class State : std::uint8_t { kNew, kBuilding, kBuilt };
  struct System {
    CoordCard card;
    State state = State::kNew;
    Vec3 origin{};
    std::array<Vec3, 3> axes{};  // ex, ey, ez in basic
  };

  Vec3 to_basic(std::int64_t cid, const Vec3& x, int depth);
  const System& build(std::int64_t cid, int depth);

  GridLookup grids_;
  std::unordered_map<std::int64_t, System> systems_;
};

}  // namespace meshdock::mesh::nastran
