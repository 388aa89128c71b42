// Read-only inspection of a published slot, straight from shared memory (no daemon needed).
//
// Opens /<prefix><name> and /<prefix><name>.catalog, validates both, and reports every field a
// person debugging a consumer wants: what a cuda-link consumer would see, which daemon owns the
// slot and whether it is alive, and per page the frame, size, leases and manifest arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "meshdock/error.hpp"
#include "meshdock/shm.hpp"

namespace meshdock {

struct PageReport {
  std::uint32_t index = 0;
  std::uint64_t seq = 0;
  std::uint64_t frame = 0;
  std::uint64_t data_size = 0;
  std::uint64_t buffer_version = 0;
  std::string handle;  // "host:<object>", "cuda" or "" (never published)
  std::vector<shm::LeaseEntry> leases;
  std::optional<shm::Manifest> manifest;  // absent while the page holds no frame
};

struct SlotReport {
  std::string control_object;
  std::string catalog_object;
  std::uint32_t num_slots = 0;
  std::uint32_t write_idx = 0;
  std::uint64_t version = 0;
  bool shutdown = false;
  shm::BufferMetadata metadata;
  double timestamp = 0;
  bool has_catalog = false;
  std::int32_t daemon_pid = 0;
  bool daemon_alive = false;
  std::uint64_t heartbeat_age_ns = 0;
  std::int32_t device_type = 0;
  std::int32_t device_id = 0;
  std::string device_uuid;  // a CUDA slot's GPU, "GPU-..." (empty: the catalog says none)
  std::vector<PageReport> pages;
};

// Throws SdkError naming the object when a segment is missing or fails validation. A missing
// catalog is not an error (a plain cuda-link producer has none): has_catalog is false.
SlotReport inspect_slot(std::string_view name, std::string_view prefix = shm::kDefaultPrefix);

nlohmann::json to_json(const SlotReport& report);
// The control block's metadata fields, by their DESIGN.md names.
nlohmann::json to_json(const shm::BufferMetadata& m);

}  // namespace meshdock
