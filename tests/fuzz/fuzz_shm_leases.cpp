// libFuzzer target: the bytes another process can write, as the daemon reads them.
//   - the input as a catalog: validate and read every page (how the daemon looks at a catalog it
//     did not write: remove_stale, a squatter's or a dead daemon's);
//   - the input as a leases segment, its shape from the first bytes (the daemon's own values,
//     never the segment's): scan_lease_table with a known-consumer set, as Slot does.
// Invariants checked (abort on violation): honoured entries have in-range indices, positive pids
// the registry knows, at most max_per_pid per pid; after the scan every entry is either honoured
// or zero; nothing reads outside the mapping (ASan).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "daemon/slots/lease_scan.hpp"
#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
namespace slots = meshdock::slots;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint64_t> words(size / 8 + 1);
  std::memcpy(words.data(), data, size);
  try {
    auto cat = shm::CatalogView::validate(words.data(), size, "fuzz");
    for (std::uint32_t i = 0; i < cat.num_slots(); ++i) {
      try {
        (void)cat.page(i).read(4);
      } catch (const shm::ProtocolError&) {
      }
    }
    (void)cat.socket_address().size();
  } catch (const shm::ProtocolError&) {
  }

  if (size < 4) return 0;
  // The daemon's own shape (from the first 4 bytes) over the rest as the table.
  const std::uint32_t num_slots = 1 + data[0] % shm::kMaxSlots;
  const std::uint32_t capacity = 1 + ((data[1] | (data[2] << 8)) % shm::kMaxLeaseCapacity);
  const std::uint32_t max_per_pid = 1 + data[3] % 16;
  const std::size_t need = shm::leases_size(num_slots, capacity);
  std::vector<std::uint64_t> table_words(need / 8, 0);
  std::memcpy(table_words.data(), data + 4, std::min(need, size - 4));
  auto lv = shm::LeasesView::over(table_words.data(), need, num_slots, capacity);
  auto known = [](std::int32_t pid) -> std::optional<uid_t> {
    if (pid % 7 == 0) return static_cast<uid_t>(pid % 1000);
    return std::nullopt;
  };
  for (std::uint32_t s = 0; s < num_slots; ++s) {
    const auto scan = slots::scan_lease_table(lv.table(s), known, max_per_pid);
    std::map<std::int32_t, std::uint32_t> per_pid;
    std::vector<bool> honoured(capacity, false);
    for (const auto& h : scan.honoured) {
      if (h.index >= capacity || h.pid <= 0 || !known(h.pid)) std::abort();
      if (++per_pid[h.pid] > max_per_pid) std::abort();
      honoured[h.index] = true;
    }
    for (std::uint32_t k = 0; k < capacity; ++k)
      if (!honoured[k] && lv.table(s).entry(k)) std::abort();  // not honoured, not cleared
  }
  return 0;
}
