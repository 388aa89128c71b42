#include <algorithm>
#include <limits>
#include <optional>

#include "daemon/mesh/error.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/payload/payload.hpp"

namespace meshdock::payload {

namespace {

using mesh::kFloat32;
using mesh::kInt32;
using mesh::kInt64;

class Builder {
 public:
  Builder(const mesh::Mesh& m, const Options& o, const DevicePayload* previous)
      : m_(m), o_(o), previous_(previous) {}

  DevicePayload build() {
    if (o_.zero_copy_only && (o_.float32 || o_.int32))
      // Both spellings: the same options come from Python (keywords) and meshdockctl (flags).
      throw PayloadError(std::string("zero_copy_only (--zero-copy-only) cannot be combined with ") +
                         (o_.float32 ? "float32 (--float32)" : "int32 (--int32)") +
                         ": a downcast always copies");
    try {
      mesh::validate_mesh(m_, "mesh", mesh::Checks::kShapes);
    } catch (const mesh::MeshError& e) {
      throw PayloadError(e.what());
    }
    p_.points = floats(m_.points, "points");
    keep_blocks();
    for (const auto& [name, a] : m_.point_data)
      p_.point_data[name] = floats(a, "point_data/" + name);
    for (const auto& [name, parts] : m_.cell_data) {
      auto& out = p_.cell_data[name];
      for (std::size_t k = 0; k < kept_.size(); ++k)
        out.push_back(floats(parts[kept_[k]], "cell_data/" + name + "/" + std::to_string(k)));
    }
    p_.field_data = m_.field_data;
    regions();
    return std::move(p_);
  }

 private:
  void copying(const std::string& what) {
    if (o_.zero_copy_only) throw PayloadError(what + " would need a copy, and zero_copy_only=True");
    p_.notes.push_back(what);
  }

  // Float arrays: shared, or cast to float32 when asked (a copy, noted).
  Array floats(const Array& a, const std::string& name) {
    const auto d = a.dtype();
    if (!o_.float32 || d.code != 2 || d.bits <= 32) {
      p_.shared.push_back(name);
      return a;
    }
    copying(name + ": float" + std::to_string(d.bits) + " -> float32 (copy)");
    if (auto done = cast_before(a, kFloat32)) return *done;
    Array out = Array::empty(kFloat32, a.shape());
    const auto* src = a.as<double>();
    auto* dst = out.as<float>();
    for (std::size_t i = 0; i < a.size(); ++i) dst[i] = static_cast<float>(src[i]);
    return cast(a, out);
  }

  // The previous payload's cast of `a` to `to`, made this payload's too; or nothing.
  std::optional<Array> cast_before(const Array& a, mesh::DType to) {
    if (!previous_ || !a.buffer()) return std::nullopt;
    for (const auto& c : previous_->casts) {
      if (c.result.dtype() == to && c.result.shape() == a.shape() && c.source.lock() == a.buffer())
        return cast(a, c.result);
    }
    return std::nullopt;
  }

  Array cast(const Array& source, const Array& result) {
    p_.casts.push_back({source.buffer(), result});
    return result;
  }

  // int64 index arrays: kept, or cast to int32 after a range check that names the span.
  // `from_mesh`: `a` is the mesh's own array (so keeping it shares memory).
  Array indices(const Array& a, const std::string& name, bool from_mesh = true) {
    if (!o_.int32) {
      if (from_mesh) p_.shared.push_back(name);
      return a;
    }
    if (auto done = cast_before(a, kInt32)) {  // its range was checked then
      p_.notes.push_back(name + ": int64 -> int32 (copy)");
      return *done;
    }
    const auto* v = a.as<std::int64_t>();
    std::int64_t lo = 0, hi = 0;
    if (a.size()) {
      const auto [mn, mx] = std::minmax_element(v, v + a.size());
      lo = *mn;
      hi = *mx;
    }
    if (lo < std::numeric_limits<std::int32_t>::min() ||
        hi > std::numeric_limits<std::int32_t>::max())
      throw PayloadError(name + ": values span [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "], which int32 cannot hold (int32=True)");
    p_.notes.push_back(name + ": int64 -> int32 (copy)");
    Array out = Array::empty(kInt32, a.shape());
    auto* dst = out.as<std::int32_t>();
    for (std::size_t i = 0; i < a.size(); ++i) dst[i] = static_cast<std::int32_t>(v[i]);
    return cast(a, out);
  }

  // After a dropped block, the slot's cells/K is no longer the mesh's cells[K]: say which is
  // which, or a consumer pairing the slot's blocks with the file's (or meshio's) would be off
  // by one without a word.
  void renumbering_note() {
    std::string moved;
    std::size_t listed = 0;
    for (std::size_t k = 0; k < kept_.size(); ++k) {
      if (kept_[k] == k) continue;
      if (++listed > 8) {
        moved += ", ...";
        break;
      }
      moved += (moved.empty() ? "" : ", ") + ("cells/" + std::to_string(k)) + " is cells[" +
               std::to_string(kept_[k]) + "]";
    }
    if (!moved.empty()) p_.notes.push_back("the slot numbers the kept blocks only: " + moved);
  }

  // Ragged blocks cannot be one DLPack tensor: they are dropped (listed and noted).
  void keep_blocks() {
    std::vector<std::int64_t> bases{0};
    std::int64_t old_base = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      old_bases_.push_back(old_base);
      old_base += blk.size();
      if (blk.ragged()) {
        const auto what = "cells[" + std::to_string(b) + "] (" + blk.type +
                          "): " + std::to_string(blk.size()) + " cells";
        p_.dropped.push_back(what);
        p_.notes.push_back("dropped " + what + ": a ragged block is no DLPack tensor");
        new_base_.push_back(-1);
        continue;
      }
      new_base_.push_back(bases.back());
      const auto k = kept_.size();
      kept_.push_back(b);
      p_.cell_types.push_back(blk.type);
      p_.cells.push_back(indices(blk.connectivity, "cells/" + std::to_string(k)));
      bases.push_back(bases.back() + blk.size());
    }
    old_bases_.push_back(old_base);
    renumbering_note();
    // block_bases is made here (not shared with the mesh), directly in the index dtype.
    if (!o_.int32) {
      p_.block_bases = Array::from_vector(bases);
    } else {
      if (bases.back() > std::numeric_limits<std::int32_t>::max())
        throw PayloadError("block_bases: " + std::to_string(bases.back()) +
                           " cells, which int32 cannot number (int32=True)");
      p_.block_bases = Array::from_vector(std::vector<std::int32_t>(bases.begin(), bases.end()));
    }
    p_.derived.push_back("block_bases: " + std::to_string(kept_.size()) + " kept blocks, " +
                         std::to_string(bases.back()) + " cells");
  }

  // Cell and Side entries follow the kept blocks' numbering; entries in dropped blocks go.
  void regions() {
    const bool renumber = kept_.size() != m_.cells.size();
    for (const auto& r : m_.regions) {
      mesh::Region out = r;
      const auto name = "regions/" + r.name;
      if (renumber && r.kind != mesh::RegionKind::kPoint) out.entries = renumbered(r, name);
      out.entries = indices(out.entries, name, out.entries.buffer() == r.entries.buffer());
      p_.regions.push_back(std::move(out));
    }
  }

  Array renumbered(const mesh::Region& r, const std::string& name) {
    const auto stride = static_cast<std::size_t>(r.kind == mesh::RegionKind::kSide ? 2 : 1);
    const auto* e = r.entries.as<std::int64_t>();
    const std::size_t n = r.entries.size() / stride;
    std::vector<std::int64_t> kept;
    kept.reserve(r.entries.size());
    std::size_t lost = 0;
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      const auto cell = e[i * stride];
      // The block holding `cell`: the last old base <= cell.
      const auto b = static_cast<std::size_t>(
          std::upper_bound(old_bases_.begin(), old_bases_.end(), cell) - old_bases_.begin() - 1);
      if (b >= new_base_.size() || new_base_[b] < 0) {
        ++lost;
        continue;
      }
      const auto moved = cell - old_bases_[b] + new_base_[b];
      changed |= moved != cell;
      kept.push_back(moved);
      if (stride == 2) kept.push_back(e[i * stride + 1]);
    }
    if (!changed && lost == 0) return r.entries;
    copying(name + ": renumbered to the kept blocks (copy)" +
            (lost ? "; " + std::to_string(lost) + " entries in dropped blocks removed" : ""));
    std::vector<std::int64_t> shape = {static_cast<std::int64_t>(kept.size() / stride)};
    if (stride == 2) shape.push_back(2);
    return Array::from_vector(kept, shape);
  }

  const mesh::Mesh& m_;
  const Options& o_;
  const DevicePayload* previous_;
  DevicePayload p_;
  std::vector<std::size_t> kept_;        // mesh block index of each kept block
  std::vector<std::int64_t> old_bases_;  // mesh block-major base of each block (+ total)
  std::vector<std::int64_t> new_base_;   // payload base of each mesh block, -1 if dropped
};

}  // namespace

DevicePayload build_payload(const mesh::Mesh& m, const Options& options,
                            const DevicePayload* previous) {
  return Builder(m, options, previous).build();
}

DevicePayload tensor_payload(const Array& a) {
  DevicePayload p;
  p.tensor = a;
  p.shared.push_back("tensor");
  return p;
}

std::vector<NamedArray> payload_arrays(const DevicePayload& p) {
  std::vector<NamedArray> v;
  if (p.tensor.valid()) return {{"tensor", "tensor", -1, &p.tensor}};
  v.push_back({"points", "points", -1, &p.points});
  for (std::size_t b = 0; b < p.cells.size(); ++b)
    v.push_back({"cells/" + std::to_string(b), "cells", static_cast<int>(b), &p.cells[b]});
  v.push_back({"block_bases", "block_bases", -1, &p.block_bases});
  for (const auto& [name, a] : p.point_data)
    v.push_back({"point_data/" + name, "point_data", -1, &a});
  for (const auto& [name, parts] : p.cell_data) {
    for (std::size_t b = 0; b < parts.size(); ++b)
      v.push_back({"cell_data/" + name + "/" + std::to_string(b), "cell_data", static_cast<int>(b),
                   &parts[b]});
  }
  for (const auto& r : p.regions) v.push_back({"regions/" + r.name, "region", -1, &r.entries});
  return v;
}

}  // namespace meshdock::payload
