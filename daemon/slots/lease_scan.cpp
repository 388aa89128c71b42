#include "daemon/slots/lease_scan.hpp"

#include <map>

namespace meshdock::slots {

LeaseScan scan_lease_table(shm::LeaseTableView table,
                           const std::function<std::optional<uid_t>(std::int32_t)>& known,
                           std::uint32_t max_per_pid) {
  LeaseScan out;
  std::map<std::int32_t, std::uint32_t> per_pid;
  for (std::uint32_t k = 0; k < table.capacity(); ++k) {
    const auto e = table.entry(k);
    if (!e) continue;
    const std::uint32_t state =
        static_cast<std::uint32_t>(e->pid) | (e->claiming ? shm::kLeaseClaiming : 0u);
    const auto uid = e->pid > 0 ? known(e->pid) : std::nullopt;
    if (!uid || ++per_pid[e->pid] > max_per_pid) {
      // Not a registered consumer (forged, or gone), or past its share: never honoured.
      if (table.clear(k, state)) ++out.cleared;
      continue;
    }
    out.honoured.push_back({k, state, e->pid, *uid, e->frame});
  }
  return out;
}

}  // namespace meshdock::slots
