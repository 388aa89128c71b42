// meshdockd's configuration: config/meshdockd.json (every key documented in
// docs/operations.md), overridden by command-line flags. Unknown keys and wrong types are
// errors naming the key.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace meshdock::service {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

// A test aid for fault tests, never read from the config file:
// $MESHDOCK_FAILPOINT="PHASE:MS[:AFTER]" makes every load and reload after the first AFTER
// (default 0) sleep MS milliseconds at PHASE, so a test can SIGKILL the daemon at that moment.
// PHASE: open, read, build_payload, copy (after reporting the phase), or mid_write (inside the
// slot's publish, after the upload, before the page is finished).
struct Failpoint {
  std::string phase;  // empty: none
  std::chrono::milliseconds pause{0};
  std::uint32_t after = 0;
};
Failpoint parse_failpoint(const std::string& spec);  // ConfigError naming the variable

struct Config {
  std::string listen = "unix:/run/meshdock/meshdockd.sock";  // unix:PATH | HOST:PORT
  mode_t socket_mode = 0660;
  std::vector<std::string> roots;  // files are read / exported only under these (realpath)
  std::uint64_t max_file_size = 16ull << 30;
  std::uint32_t max_meshes = 64;           // meshes loaded at once
  std::uint64_t device_memory_budget = 0;  // bytes of slot buffers; 0: no limit
  std::uint32_t num_slots = 3;             // ring slots per mesh (1..10)
  std::string prefix = "meshdock.";        // shared-memory name prefix
  mode_t shm_mode = 0640;  // control block, catalog, data; the leases segment adds write for readers
  std::string device = "auto";             // auto | cpu | cuda:N
  std::string log_level = "info";          // error | warn | info | debug
  std::string token_file;                  // bearer token for TCP (required there)
  std::uint32_t lease_wait_ms = 200;       // how long publish waits for a leased slot
  std::uint32_t watch_interval_ms = 500;   // how often watched files are checked
  // gRPC availability (docs/operations.md, "Limits"): the largest request message; Watch
  // streams in all and per TCP client address (a Unix socket's clients all look alike to
  // gRPC, so there only max_streams applies); the server's thread cap, kept well above the
  // stream cap so that streams never take the threads other calls need.
  std::uint32_t max_message_size = 4u << 20;
  std::uint32_t max_streams = 64;
  std::uint32_t max_streams_per_peer = 16;
  std::uint32_t max_rpc_threads = 256;
  std::uint64_t max_rpc_memory = 64ull << 20;  // what gRPC's buffers may hold in all
  // The most bytes a file's arrays may decode to (compressed VTU blocks, from their headers,
  // before anything is inflated). 0: the device_memory_budget when one is set, else
  // max_file_size (decoded_size_limit()).
  std::uint64_t max_decoded_size = 0;
  Failpoint failpoint;  // from the environment only (see above)
};

// Parses `j` (the file's contents) over the defaults; `where` names the file in errors.
Config parse_config(const nlohmann::json& j, const std::string& where);
Config load_config(const std::string& path);
// Values that are wrong whatever their source (slots out of range, bad prefix, device, ...).
void check_config(const Config& c);
// "0660" / "660" -> 0660.
mode_t parse_mode(const std::string& s, const std::string& what);
std::string config_json(const Config& c);  // the effective configuration, for --print-config
std::uint64_t decoded_size_limit(const Config& c);  // max_decoded_size, or what 0 stands for

}  // namespace meshdock::service
