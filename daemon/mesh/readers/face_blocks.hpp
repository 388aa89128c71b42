// Shared by the surface readers (OBJ, OFF, PLY, STL):
// - HugeArray and Chunks, scratch memory for what a reader collects before it knows how much
//   there is, costing no more than what it holds (see below);
// - FaceBlocks, which collects polygon faces into fixed-size cell blocks (3 -> triangle, 4 ->
//   quad, k > 4 -> a "polygon" block of k-gons), the way meshio splits polygons by size, so
//   every block stays one (n, k) tensor. Per-face values (PLY face properties, OFF face colours)
//   follow their faces into the blocks through split_rows;
// - utf8_bom, where the text readers start.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

// 3 when `data` starts with a UTF-8 byte-order mark (EF BB BF), else 0. Windows editors and
// some exporters put one before an ascii surface file (meshio 5.0 reads an ascii STL past it;
// its OBJ, OFF and PLY readers misread or refuse the file); it marks the encoding and is none
// of the mesh's text, so the readers start after it, with no note (their line numbers stay
// the file's).
inline std::size_t utf8_bom(std::string_view data) {
  return data.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
}

// `n` zeroed values of T in a mapping of their own (huge pages), unmapped when destroyed. Not
// the host allocator's: it keeps released buffers resident for reuse, so a temporary freed
// halfway through a read would stay in the read's peak. Zeroed by the system, untouched pages
// cost nothing (but for a mapping's small-page tail, which map_huge_pages faults in at once:
// reserve() has none).
template <typename T>
class HugeArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>);

 public:
  HugeArray() = default;
  explicit HugeArray(std::size_t n) : HugeArray(n, n * sizeof(T)) {}
  // Room for at least `n` values that may mostly stay unused (a bound): whole huge pages, so
  // that only those written to count.
  static HugeArray reserve(std::size_t n) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    const std::size_t bytes = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    return HugeArray(bytes / sizeof(T), bytes);
  }
  HugeArray(HugeArray&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)),
        n_(std::exchange(o.n_, 0)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  HugeArray& operator=(HugeArray&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  ~HugeArray() { reset(); }

  void reset() {
    if (p_) unmap_huge_pages(p_, bytes_);
    p_ = nullptr;
    n_ = bytes_ = 0;
  }
  T* data() const { return p_; }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) const { return p_[i]; }

  // The values from `n` on are no longer needed: the whole huge pages they fill leave the
  // process now, not with the rest (they read as zeros afterwards). Not parts of one: splitting
  // a huge page makes the rest of it cost a TLB fill per 4 KiB page, which on a VM with shadow
  // paging is slower than the copy it frees memory for.
  void release_from(std::size_t n) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    const std::size_t begin = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    if (begin < bytes_)
      ::madvise(reinterpret_cast<char*>(p_) + begin, bytes_ - begin, MADV_DONTNEED);
  }

 private:
  HugeArray(std::size_t n, std::size_t bytes) : n_(n), bytes_(bytes) {
    if (bytes == 0) return;
    p_ = static_cast<T*>(map_huge_pages(bytes));
    if (!p_) throw std::bad_alloc();
  }

  T* p_ = nullptr;
  std::size_t n_ = 0;
  std::size_t bytes_ = 0;  // mapped
};

// An append-only sequence in chunks: 64 KiB, doubling up to 2 MiB (one huge page), then 2 MiB
// each. A doubling vector holds two generations while it grows (the old one kept resident for
// reuse besides) and its last one up to half empty; these never copy, waste at most the chunk
// being filled, and are handed over chunk by chunk (drain), each freed once copied, so a reader
// that collects values before it knows their count peaks at their bytes plus a chunk, not twice
// them. Small ones start small: a first chunk of 2 MiB would cost a whole huge page for a
// handful of values.
template <typename T>
class Chunks {
  static_assert(((std::size_t{2} << 20) % sizeof(T)) == 0, "a full chunk is one huge page");

 public:
  void push_back(const T& v) {
    if (fill_ == room_) [[unlikely]]
      grow();
    tail_[fill_++] = v;
  }
  // `n` values at once (a face's vertices).
  void append(const T* v, std::size_t n) {
    if (room_ - fill_ >= n) [[likely]] {
      for (std::size_t i = 0; i < n; ++i) tail_[fill_ + i] = v[i];
      fill_ += n;
      return;
    }
    for (std::size_t i = 0; i < n; ++i) push_back(v[i]);
  }
  T& back() { return tail_[fill_ - 1]; }
  std::size_t size() const { return before_ + fill_; }
  bool empty() const { return size() == 0; }

  // f(const T* p, std::size_t n) for each chunk in order.
  template <typename F>
  void for_each(F&& f) const {
    std::size_t left = size();
    for (const auto& c : chunks_) {
      const std::size_t n = std::min(left, c.size());
      f(static_cast<const T*>(c.data()), n);
      left -= n;
    }
  }
  // The same, each chunk freed once f has seen it (the array they are copied into grows as
  // they go); empty afterwards.
  template <typename F>
  void drain(F&& f) {
    std::size_t left = size();
    for (auto& c : chunks_) {
      const std::size_t n = std::min(left, c.size());
      f(static_cast<const T*>(c.data()), n);
      left -= n;
      c.reset();
    }
    clear();
  }
  // Every value copied to `dst` (size() of them), chunk by chunk as drain frees them.
  void drain_to(T* dst) {
    drain([&](const T* p, std::size_t n) {
      if (n) std::memcpy(dst, p, n * sizeof(T));
      dst += n;
    });
  }
  void clear() {
    chunks_.clear();
    tail_ = nullptr;
    fill_ = room_ = before_ = 0;
  }

 private:
  static constexpr std::size_t kFirst = (std::size_t{64} << 10) / sizeof(T);
  static constexpr std::size_t kLast = (std::size_t{2} << 20) / sizeof(T);
  void grow() {
    before_ += fill_;
    room_ = chunks_.empty() ? kFirst : std::min(2 * room_, kLast);
    chunks_.emplace_back(room_);
    tail_ = chunks_.back().data();
    fill_ = 0;
  }
  std::vector<HugeArray<T>> chunks_;
  T* tail_ = nullptr;
  std::size_t fill_ = 0, room_ = 0;  // in the last chunk
  std::size_t before_ = 0;           // in the chunks before it
};

// The values of `c` as an Array of `shape` (which must hold c.size() of them); `c` is empty
// afterwards, its memory freed as the Array fills.
template <typename T>
Array array_from(Chunks<T>& c, std::vector<std::int64_t> shape) {
  Array a = Array::of<T>(std::move(shape));
  c.drain_to(a.as<T>());
  return a;
}

class FaceBlocks {
 public:
  // consecutive = true: a new block each time the face size changes (meshio's OBJ rule);
  // false: one block per face size, in order of first appearance.
  explicit FaceBlocks(bool consecutive) : consecutive_(consecutive) {}

  // A face needs 3 or more vertices; more than kMaxVertices is taken for a corrupt count.
  static constexpr std::int64_t kMaxVertices = 1 << 16;
  static void check_size(std::int64_t count, Cursor& c) {
    if (count < 3 || count > kMaxVertices) [[unlikely]]
      bad_size(count, c);
  }

  // The number of faces the file's header announces (PLY, OFF), before the first add: the first
  // block is then made as an array of that many rows and its faces written straight into it, so
  // a file of one face size (most) gets its block with no copy. Not when the rows would need
  // more than `max_nodes` vertex indices (what the rest of the file could hold: a corrupt count
  // must not allocate). Other blocks, and rows past the count, go to chunks.
  void expect(std::int64_t faces, std::size_t max_nodes) {
    if (blocks_.empty() && faces > 0) {
      expected_ = faces;
      max_nodes_ = max_nodes;
    }
  }

  // Adds one face; returns the index of its block (the order finish() pushes them in).
  std::uint32_t add(const std::int64_t* nodes, std::size_t count, std::int64_t group, Cursor& c) {
    check_size(static_cast<std::int64_t>(count), c);
    const auto k = block_for(count);
    Pending& b = blocks_[k];
    if (b.rows < b.direct_rows) {
      std::memcpy(b.direct.as<std::int64_t>() + b.rows * static_cast<std::int64_t>(count), nodes,
                  count * sizeof(std::int64_t));
    } else {
      b.nodes.append(nodes, count);
    }
    ++b.rows;
    note_face(k, group);
    return k;
  }

  std::size_t num_blocks() const { return blocks_.size(); }

  // Per face added, in order: its block (what add returned for it), for split_rows.
  ScratchVector<std::uint32_t> block_of() const {
    ScratchVector<std::uint32_t> out;
    out.reserve(faces_);
    runs_.for_each([&](const Run* r, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) out.insert(out.end(), r[i].faces, r[i].block);
    });
    return out;
  }

  // Moves the blocks into `mesh`, checking every index against `num_points`; with
  // `group_name` set, the per-face group ids become that cell_data entry.
  void finish(Mesh& mesh, std::int64_t num_points, Cursor& c, const char* group_name = nullptr) {
    // Every block's connectivity first: its chunks leave as it is made, before the groups'
    // arrays add to the memory.
    std::vector<Array> conn;
    for (auto& b : blocks_) conn.push_back(block_array(b, num_points, c));
    std::vector<Array> groups;
    if (group_name) groups = group_arrays();
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      const auto size = blocks_[k].size;
      const char* type = size == 3 ? "triangle" : size == 4 ? "quad" : "polygon";
      mesh.cells.push_back(CellBlock::fixed(type, std::move(conn[k])));
      if (group_name) mesh.cell_data[group_name].push_back(std::move(groups[k]));
    }
  }

 private:
  // Out of line: the message's strings would otherwise be inlined into every reader's face loop.
  [[noreturn, gnu::cold, gnu::noinline]] static void bad_size(std::int64_t count, Cursor& c) {
    c.fail("a face with " + std::to_string(count) + " vertices (3.." +
           std::to_string(kMaxVertices) + " allowed)");
  }
  struct Pending {
    std::size_t size = 0;
    std::int64_t rows = 0;
    Array direct;                  // the first block when the face count was announced
    std::int64_t direct_rows = 0;  // its rows
    Chunks<std::int64_t> nodes;    // the rows past them
  };
  // A run of consecutive faces added to one block / in one group.
  struct Run {
    std::uint32_t block;
    std::uint32_t faces;
  };
  struct GroupRun {
    std::size_t first;  // face number
    std::int64_t group;
  };

  std::uint32_t block_for(std::size_t count) {
    if (!blocks_.empty() && blocks_[last_].size == count) return last_;
    if (!consecutive_) {
      for (std::size_t i = 0; i < blocks_.size(); ++i)
        if (blocks_[i].size == count) return last_ = static_cast<std::uint32_t>(i);
    }
    Pending& b = blocks_.emplace_back();
    b.size = count;
    if (blocks_.size() == 1 && expected_ > 0 &&
        static_cast<std::size_t>(expected_) <= max_nodes_ / count) {
      b.direct = Array::of<std::int64_t>({expected_, static_cast<std::int64_t>(count)});
      b.direct_rows = expected_;
    }
    return last_ = static_cast<std::uint32_t>(blocks_.size() - 1);
  }

  void note_face(std::uint32_t k, std::int64_t group) {
    if (runs_.empty() || runs_.back().block != k || runs_.back().faces == UINT32_MAX)
      runs_.push_back({k, 0});
    ++runs_.back().faces;
    if (groups_.empty() || groups_.back().group != group) groups_.push_back({faces_, group});
    ++faces_;
  }

  // The block's connectivity, every index checked: the announced array itself when the block
  // filled it exactly, else an array of its rows.
  Array block_array(Pending& b, std::int64_t num_points, Cursor& c) {
    const auto width = static_cast<std::int64_t>(b.size);
    const auto direct = std::min(b.rows, b.direct_rows);
    if (direct)
      check_ids(b.direct.as<std::int64_t>(), static_cast<std::size_t>(direct * width), num_points,
                c);
    b.nodes.for_each([&](const std::int64_t* p, std::size_t n) { check_ids(p, n, num_points, c); });
    if (b.rows == b.direct_rows) return std::move(b.direct);
    Array out = Array::of<std::int64_t>({b.rows, width});
    if (direct) {
      std::memcpy(out.data(), b.direct.data(), static_cast<std::size_t>(direct * width) * 8);
      b.direct = Array();
    }
    b.nodes.drain_to(out.as<std::int64_t>() + direct * width);
    return out;
  }

  static void check_ids(const std::int64_t* p, std::size_t n, std::int64_t num_points, Cursor& c) {
    bool ok = true;  // branch-free over the lot; the first bad one is looked for only on failure
    for (std::size_t i = 0; i < n; ++i)
      ok &= static_cast<std::uint64_t>(p[i]) < static_cast<std::uint64_t>(num_points);
    if (ok) return;
    for (std::size_t i = 0; i < n; ++i) {
      if (p[i] < 0 || p[i] >= num_points) {
        c.fail("a face refers to vertex " + std::to_string(p[i]) + " but there are " +
               std::to_string(num_points) + " vertices (0-based)");
      }
    }
  }

  // Per block, the group of each of its faces, from the runs of blocks and of groups.
  std::vector<Array> group_arrays() {
    std::vector<Array> out;
    std::vector<std::int64_t*> at;
    for (const auto& b : blocks_) {
      out.push_back(Array::of<std::int64_t>({b.rows}));
      at.push_back(out.back().as<std::int64_t>());
    }
    std::size_t face = 0, g = 0;
    runs_.for_each([&](const Run* r, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t end = face + r[i].faces;
        while (face < end) {
          while (g + 1 < groups_.size() && groups_[g + 1].first <= face) ++g;
          const std::size_t stop =
              g + 1 < groups_.size() ? std::min(end, groups_[g + 1].first) : end;
          std::int64_t*& dst = at[r[i].block];
          dst = std::fill_n(dst, stop - face, groups_[g].group);
          face = stop;
        }
      }
    });
    return out;
  }

  bool consecutive_;
  std::int64_t expected_ = 0;
  std::size_t max_nodes_ = 0;
  std::vector<Pending> blocks_;
  std::uint32_t last_ = 0;  // the block the last face went to
  Chunks<Run> runs_;        // the blocks of the faces in order, a run of one block each
  std::vector<GroupRun> groups_;
  std::size_t faces_ = 0;
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
