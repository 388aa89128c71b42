// Labels -> rows: the ids a text format gives its nodes, cells or grids (UCD, Nastran, TetGen)
// mapped to their places in the file. Writers number them first, first + 1, ... in order (1..n
// or 0..n-1); such labels need no table, and one is built only from the first label out of that
// run, so the common file costs nothing and any other still reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace meshdock::mesh {

class IdRows {
 public:
  // `row`: 0, 1, 2, ... in turn. False when `id` labels an earlier row already (the caller
  // names the line).
  bool add(std::int64_t id, std::int64_t row) {
    if (row == 0) first_ = id;
    // Unsigned: any two int64 subtract without overflow.
    if (run_ && static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(first_) ==
                    static_cast<std::uint64_t>(row))
      return true;
    if (run_) {
      run_ = false;
      table_.reserve(static_cast<std::size_t>(row) + 1);
      for (std::int64_t i = 0; i < row; ++i) table_.emplace(first_ + i, i);
    }
    return table_.emplace(id, row).second;
  }
  // The row of `id` among the first `count`; -1 when no row has it.
  std::int64_t find(std::int64_t id, std::int64_t count) const {
    if (run_) {
      // id >= first_: their difference is exact as unsigned.
      const auto d = static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(first_);
      return id < first_ || d >= static_cast<std::uint64_t>(count) ? -1
                                                                   : static_cast<std::int64_t>(d);
    }
    const auto it = table_.find(id);
    return it == table_.end() ? -1 : it->second;
  }

 private:
  bool run_ = true;  // every label so far is first_ + its row
  std::int64_t first_ = 0;
  std::unordered_map<std::int64_t, std::int64_t> table_;
};

}  // namespace meshdock::mesh
