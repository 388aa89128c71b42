// Shared by the surface readers (OBJ, OFF, PLY): collects polygon faces into fixed-size cell
// blocks (3 -> triangle, 4 -> quad, k > 4 -> a "polygon" block of k-gons), the way meshio splits
// polygons by size, so every block stays one (n, k) tensor. Per-face values (PLY face
// properties, OFF face colours) follow their faces into the blocks through split_rows.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

class FaceBlocks {
 public:
  // consecutive = true: a new block each time the face size changes (meshio's OBJ rule);
  // false: one block per face size, in order of first appearance.
  explicit FaceBlocks(bool consecutive) : consecutive_(consecutive) {}

  // A face needs 3 or more vertices; more than kMaxVertices is taken for a corrupt count.
  static constexpr std::int64_t kMaxVertices = 1 << 16;
  static void check_size(std::int64_t count, Cursor& c) {
    if (count < 3 || count > kMaxVertices) {
      c.fail("a face with " + std::to_string(count) + " vertices (3.." +
             std::to_string(kMaxVertices) + " allowed)");
    }
  }

  // Adds one face; returns the index of its block (the order finish() pushes them in).
  std::uint32_t add(const std::int64_t* nodes, std::size_t count, std::int64_t group, Cursor& c) {
    check_size(static_cast<std::int64_t>(count), c);
    std::size_t k = blocks_.size();
    if (consecutive_) {
      if (blocks_.empty() || blocks_.back().size != count) blocks_.push_back({count, {}, {}});
      k = blocks_.size() - 1;
    } else {
      for (std::size_t i = 0; i < blocks_.size(); ++i)
        if (blocks_[i].size == count) k = i;
      if (k == blocks_.size()) blocks_.push_back({count, {}, {}});
    }
    Pending& b = blocks_[k];
    b.nodes.insert(b.nodes.end(), nodes, nodes + count);
    b.groups.push_back(group);
    return static_cast<std::uint32_t>(k);
  }

  std::size_t num_blocks() const { return blocks_.size(); }

  // Moves the blocks into `mesh`, checking every index against `num_points`; with
  // `group_name` set, the per-face group ids become that cell_data entry.
  void finish(Mesh& mesh, std::int64_t num_points, Cursor& c, const char* group_name = nullptr) {
    for (auto& b : blocks_) {
      for (auto v : b.nodes) {
        if (v < 0 || v >= num_points) {
          c.fail("a face refers to vertex " + std::to_string(v) + " but there are " +
                 std::to_string(num_points) + " vertices (0-based)");
        }
      }
      const auto n = static_cast<std::int64_t>(b.groups.size());
      const char* type = b.size == 3 ? "triangle" : b.size == 4 ? "quad" : "polygon";
      mesh.cells.push_back(CellBlock::fixed(
          type, Array::from_vector(b.nodes, {n, static_cast<std::int64_t>(b.size)})));
      if (group_name) mesh.cell_data[group_name].push_back(Array::from_vector(b.groups));
    }
  }

 private:
  struct Pending {
    std::size_t size;
    ScratchVector<std::int64_t> nodes;  // huge pages: growing costs copies, few faults
    ScratchVector<std::int64_t> groups;
  };
  bool consecutive_;
  std::vector<Pending> blocks_;
};

// Per-face rows (`row_bytes` each, in the order the faces were added) as one Array per block:
// face f goes to block block_of[f] (what FaceBlocks::add returned for it), keeping the order
// within a block. `tail` is the shape after the row count ({} for scalars, {k} for k values).
template <typename Rows, typename Blocks>
std::vector<Array> split_rows(const Rows& rows, std::size_t row_bytes, DType dtype,
                              const std::vector<std::int64_t>& tail, const Blocks& block_of,
                              std::size_t num_blocks) {
  std::vector<std::int64_t> count(num_blocks, 0);
  for (auto k : block_of) ++count[k];
  std::vector<Array> out;
  std::vector<unsigned char*> at;
  for (std::size_t k = 0; k < num_blocks; ++k) {
    std::vector<std::int64_t> shape{count[k]};
    shape.insert(shape.end(), tail.begin(), tail.end());
    out.push_back(Array::empty(dtype, std::move(shape)));
    at.push_back(static_cast<unsigned char*>(out.back().data()));
  }
  const auto* src = reinterpret_cast<const unsigned char*>(rows.data());
  if (num_blocks == 1) {  // the common case: one copy
    if (!block_of.empty()) std::memcpy(at[0], src, block_of.size() * row_bytes);
    return out;
  }
  for (std::size_t f = 0; f < block_of.size(); ++f) {
    std::memcpy(at[block_of[f]], src + f * row_bytes, row_bytes);
    at[block_of[f]] += row_bytes;
  }
  return out;
}

}  // namespace meshdock::mesh
