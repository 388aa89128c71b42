// meshdockd's configuration: a JSON file (config/meshdockd.json, installed as
// /etc/meshdock/meshdockd.json; every key documented in docs/operations.md), overridden by
// command-line flags. Unknown keys and wrong types are errors naming the key.
//
// Which file: --config FILE, else $MESHDOCK_CONFIG (set and empty: none), else the default path
// (kDefaultConfigPath) when it exists; with none, the built-in defaults below. A file that was
// named (flag or variable) and cannot be read is an error; only a default file that does not
// exist is skipped, so a packaged daemon runs without one and says so.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
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
// slot's publish, after the upload, before the page is finished); or upload_delay: the CUDA
// backend queues a MS sleep on its stream before every upload's copies and publishes without
// waiting for them, so only a consumer that orders itself after the slot's IPC event sees the
// frame complete (scripts/gpu-check's stream_semantics; AFTER ignored, no effect on the host
// backend).
struct Failpoint {
  std::string phase;  // empty: none
  std::chrono::milliseconds pause{0};
  std::uint32_t after = 0;
};
Failpoint parse_failpoint(const std::string& spec);  // ConfigError naming the variable

// A mesh the daemon loads at every start (key "load"), as a Load RPC with these fields would.
struct StartupLoad {
  std::string path, name;
  std::string device;           // "" = the daemon's default
  std::uint32_t num_slots = 0;  // 0 = the daemon's default
  bool watch = false;
  bool operator==(const StartupLoad&) const = default;
};

struct Config {
  std::string listen = "unix:/run/meshdock/meshdockd.sock";  // unix:PATH | HOST:PORT
  mode_t socket_mode = 0660;
  std::vector<std::string> roots;  // files are read only under these (and exported, see below)
  // Where Export may write. Unset (absent or null in the file): under `roots`, as before this
  // key existed. Set: only under these, so read roots can stay read-only (ProtectSystem=strict
  // in the unit) and exports land in one writable place; [] disables Export.
  std::optional<std::vector<std::string>> export_roots;
  std::uint64_t max_file_size = 16ull << 30;
  std::uint32_t max_meshes = 64;           // meshes loaded at once
  std::uint64_t device_memory_budget = 0;  // bytes of slot buffers; 0: no limit
  std::uint32_t num_slots = 3;             // ring slots per mesh (1..10)
  std::string prefix = "meshdock.";        // shared-memory name prefix
  mode_t shm_mode =
      0640;  // control block, catalog, data; the leases segment adds write for readers
  std::string device = "auto";        // auto | cpu | cuda:N
  std::string log_level = "info";     // error | warn | info | debug
  std::string token_file;             // bearer token for TCP (required there)
  std::uint32_t lease_wait_ms = 200;  // how long publish waits for a leased slot
  // How long a replaced or unloaded device buffer outlives its replacement or unload for
  // cuda-link's consumers, which hold every buffer open unannounced until they next poll
  // (slots::kCudaLinkGrace by default; a consumer polling less often needs more).
  std::uint32_t cuda_link_grace_ms = 500;
  // Meshes loaded once the daemon serves, so that a restart (systemd's, after a crash or a lost
  // GPU) brings them back with no client; each failure is logged and the others still load.
  // A SIGHUP loads the entries added or changed since (serve() in main.cpp).
  std::vector<StartupLoad> load;
  // What a publish copies into a ring slot's buffer: "changed" (only the arrays it does not hold
  // already: a field publish copies the field), "all" (every array, every time), or "auto":
  // changed where consumers cannot write slot memory (host), all where they can (CUDA IPC).
  std::string publish_copy = "auto";
  std::uint32_t watch_interval_ms = 500;  // how often watched files are checked
  // "" (off) or a loopback HOST:PORT where GET /metrics serves Prometheus' text format.
  std::string metrics_listen;
  // gRPC availability (docs/operations.md, "Limits"): the largest request message; Watch
  // streams in all and per caller (a TCP client address; a Unix-socket client's uid, from
  // SO_PEERCRED); Unix-socket connections open at once per uid (0: no cap); the server's
  // thread cap, kept well above the stream cap so that streams never take the threads other
  // calls need.
  std::uint32_t max_message_size = 4u << 20;
  std::uint32_t max_streams = 64;
  std::uint32_t max_streams_per_peer = 16;
  std::uint32_t max_connections_per_uid = 256;
  // Unix-socket connections of all uids together (root's and the daemon's own not held to it),
  // so that members of the group together cannot take the fds loads and segments need; keep
  // it under the fd limit (LimitNOFILE) less a few per loaded mesh. 0: no cap.
  std::uint32_t max_connections = 1024;
  // Loads and reloads under way at once, in all and per caller (counted as streams are): each
  // holds an RPC thread until its file is read, so together with the streams they must leave
  // threads for other calls (check_config).
  std::uint32_t max_loads = 32;
  std::uint32_t max_loads_per_peer = 8;
  // Exports under way at once, in all and per caller: each holds a thread while it writes.
  std::uint32_t max_exports = 8;
  std::uint32_t max_exports_per_peer = 4;
  std::uint32_t max_rpc_threads = 256;
  std::uint64_t max_rpc_memory = 64ull << 20;  // what gRPC's buffers may hold in all
  // The most bytes a file's arrays may decode to (compressed VTU blocks, from their headers,
  // before anything is inflated). 0: the device_memory_budget when one is set, else
  // max_file_size (decoded_size_limit()).
  std::uint64_t max_decoded_size = 0;
  Failpoint failpoint;  // from the environment only (see above)
};

// The configuration file meshdockd reads when neither --config nor $MESHDOCK_CONFIG names one
// (${sysconfdir}/meshdock/meshdockd.json of the install prefix: /etc/... for a /usr install).
extern const char* const kDefaultConfigPath;

// Where the configuration comes from, and a line that says so (meshdockd's first log line).
struct ConfigSource {
  std::optional<std::string> path;  // none: the built-in defaults
  std::string origin;               // "--config", "$MESHDOCK_CONFIG" or "the default path"
  std::string default_path;         // what was looked for when nothing named a file
  std::string describe() const;     // "configuration: from PATH (ORIGIN)" / "...: none (why)"
};
// `flag`: --config; `env`: getenv("MESHDOCK_CONFIG") (nullptr when unset); `default_path`:
// kDefaultConfigPath in meshdockd. Does not read the file: a named file that is missing is
// load_config's error, naming it; only a missing default (ENOENT, ENOTDIR) yields none.
ConfigSource resolve_config_source(const std::optional<std::string>& flag, const char* env,
                                   const std::string& default_path);

// Parses `j` (the file's contents) over the defaults; `where` names the file in errors.
Config parse_config(const nlohmann::json& j, const std::string& where);
Config load_config(const std::string& path);
// What an error calls a key's value: "--device" when a flag set it, "FILE: device" when the
// file did, the bare key otherwise (meshdockd's effective_config). check_config's messages read
// "<name> 'VALUE' is not ...", so they say where the value came from.
using KeyName = std::function<std::string(const std::string& key)>;
// Values that are wrong whatever their source (slots out of range, bad prefix, device, listen
// and metrics_listen malformed, metrics_listen not loopback, a TCP listen without token_file,
// ...). Nothing here touches the system: roots, the token file and sockets are the start's
// (and --print-config's) to check. `name` (default: the bare key) names each value.
void check_config(const Config& c, const KeyName& name = {});

// metrics_listen: a loopback "HOST:PORT" ("127.0.0.1:9464", "localhost:9464", "[::1]:9464") ->
// the address as text (localhost as 127.0.0.1, no brackets) and the port; a ConfigError that
// starts with `name` (the key, or the file and the key) otherwise. check_config and
// rpc::MetricsHttp both take it from here, so a start and --print-config say the same.
struct MetricsAddress {
  std::string host;
  unsigned short port = 0;
};
MetricsAddress parse_metrics_listen(const std::string& listen,
                                    const std::string& name = "metrics_listen");
// "0660" / "660" -> 0660.
mode_t parse_mode(const std::string& s, const std::string& what);
std::string config_json(const Config& c);  // the effective configuration, for --print-config
std::uint64_t decoded_size_limit(const Config& c);  // max_decoded_size, or what 0 stands for

}  // namespace meshdock::service
