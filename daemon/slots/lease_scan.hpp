// How the daemon reads one ring slot's lease table, the one area consumers write. Pure (no
// clock, no registry): the fuzz target runs exactly this over arbitrary bytes.
//
// An entry counts only when its pid is a registered consumer (`known` gives its uid) and only
// up to `max_per_pid` entries per pid; every other non-zero entry is cleared (a CAS against the
// state seen, so an entry taken again meanwhile is left alone). The bytes are only compared and
// copied out: an index is never taken from them, and no pointer is derived from them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "meshdock/shm/catalog.hpp"

namespace meshdock::slots {

struct HonouredLease {
  std::uint32_t index;
  std::uint32_t state;  // as seen: pid, or pid | kLeaseClaiming
  std::int32_t pid;
  uid_t uid;
  std::uint64_t frame;
};

struct LeaseScan {
  std::vector<HonouredLease> honoured;
  std::size_t cleared = 0;
};

LeaseScan scan_lease_table(shm::LeaseTableView table,
                           const std::function<std::optional<uid_t>(std::int32_t)>& known,
                           std::uint32_t max_per_pid);

}  // namespace meshdock::slots
