// Shared by the surface readers (OBJ, OFF, PLY): collects polygon faces into fixed-size cell
// blocks (3 -> triangle, 4 -> quad, k > 4 -> a "polygon" block of k-gons), the way meshio splits
// polygons by size, so every block stays one (n, k) tensor.
#pragma once

#include <cstdint>
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

  void add(const std::int64_t* nodes, std::size_t count, std::int64_t group, Cursor& c) {
    check_size(static_cast<std::int64_t>(count), c);
    Pending* b = nullptr;
    if (consecutive_) {
      if (blocks_.empty() || blocks_.back().size != count) blocks_.push_back({count, {}, {}});
      b = &blocks_.back();
    } else {
      for (auto& x : blocks_)
        if (x.size == count) b = &x;
      if (!b) {
        blocks_.push_back({count, {}, {}});
        b = &blocks_.back();
      }
    }
    b->nodes.insert(b->nodes.end(), nodes, nodes + count);
    b->groups.push_back(group);
  }

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

}  // namespace meshdock::mesh
