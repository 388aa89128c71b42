// meshdockd: the resident daemon.
//
//   file -> reader -> Mesh (pinned) -> DevicePayload -> backend (host | cuda) -> slot
//
// Configuration: --config FILE, else $MESHDOCK_CONFIG, else the default file
// (/etc/meshdock/meshdockd.json for a /usr install) when it exists, else built-in defaults
// (JSON, docs/operations.md); then flags. The first log line says which. Serves gRPC on a Unix
// socket (mode from the config; accepted here, so that each caller's SO_PEERCRED names it in the
// log: rpc/peers.hpp) or, with a bearer token, on TCP; prints one line
// "meshdockd ready on ADDR" when serving. Boost.Asio owns the signals (SIGTERM / SIGINT:
// graceful stop; SIGHUP: reload the config file) and the 100 ms timer that beats every slot's
// heartbeat, reclaims dead consumers' leases and reloads watched files. Under systemd
// (Type=notify) it reports READY, STOPPING and WATCHDOG.
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>

#include <boost/asio.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if defined(MESHDOCK_HAVE_SYSTEMD)
#include <systemd/sd-daemon.h>
#endif

#include "daemon/backend/backend.hpp"
#include "daemon/backend/device_probe.hpp"
#include "daemon/command_line.hpp"
#include "daemon/mesh/allocator.hpp"
#include "daemon/rpc/gate.hpp"
#include "daemon/rpc/health.hpp"
#include "daemon/rpc/metrics_http.hpp"
#include "daemon/rpc/peers.hpp"
#include "daemon/rpc/service.hpp"
#include "daemon/service/config.hpp"
#include "daemon/service/registry.hpp"
#include "daemon/service/roots.hpp"
#include "meshdock/shm.hpp"

namespace {

namespace svc = meshdock::service;
using meshdock::command_line::Action;
using meshdock::command_line::Args;
using meshdock::command_line::config_source;
using meshdock::command_line::effective_config;
using meshdock::command_line::key_name;
using meshdock::command_line::parse_args;
using meshdock::command_line::usage;
constexpr const char* kVersion = "0.1.0";

int probe() {
  const auto r = meshdock::backend::probe_devices();
  std::printf("cuda backend: %s\n", r.built_with_cuda ? "built in" : "not built");
  std::printf("cuda status: %s\n", r.cuda_status.c_str());
  for (const auto& d : r.devices) {
    std::printf("cuda:%d %s (sm_%d%d, %.1f GiB)\n", d.id, d.name.c_str(), d.major, d.minor,
                static_cast<double>(d.total_memory) / (1ull << 30));
  }
  std::printf("default device: %s\n", r.devices.empty() ? "cpu (host backend)" : "cuda:0");
  return 0;
}

void notify(const std::string& state) {
#if defined(MESHDOCK_HAVE_SYSTEMD)
  sd_notify(0, state.c_str());
#else
  (void)state;
#endif
}

// Connections, mesh files and segments (4 + a data segment per ring slot for each mesh) all take
// fds: the soft limit goes up to the hard one (at most 65536; systemd's default soft limit is
// 1024, its hard one 524288), and a max_connections that would leave fewer than 256 fds for the
// daemon's own use is said at start.
void raise_fd_limit(const svc::Config& config, svc::Logger& log) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = std::min<rlim_t>(rl.rlim_max, 65536);
  if (rl.rlim_cur < want) {
    const auto was = rl.rlim_cur;
    rl.rlim_cur = want;
    if (::setrlimit(RLIMIT_NOFILE, &rl) == 0)
      log.info("file descriptors: soft limit raised from " + std::to_string(was) + " to " +
               std::to_string(want));
    else
      rl.rlim_cur = was;
  }
  if (config.max_connections && config.max_connections + 256 > rl.rlim_cur)
    log.warn("max_connections " + std::to_string(config.max_connections) +
             " leaves fewer than 256 of the " + std::to_string(rl.rlim_cur) +
             " file descriptors this process may open for mesh files and segments: lower it, "
             "or raise LimitNOFILE");
}

// The bearer token a TCP listen needs (check_config has said that token_file is set); "" for the
// Unix socket.
std::string read_token(const svc::Config& c) {
  if (c.listen.starts_with("unix:")) return {};
  std::ifstream f(c.token_file);
  std::string token;
  if (!f || !std::getline(f, token) || token.empty())
    throw svc::ConfigError(c.token_file + ": cannot read a token (first line)");
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

// --print-config: what the start checks beyond check_config, short of making anything: the
// token file is read, and every root and export root opened (O_PATH) as the registry opens
// them. Not checked: the socket (a live daemon on it, its directory), the metrics port being
// free, segments under the prefix, and whether `device` answers (start: exit status 1).
void check_like_a_start(const svc::Config& c) {
  (void)read_token(c);
  svc::Roots read(c.roots);
  if (c.export_roots)
    svc::Roots write(*c.export_roots, svc::Roots::Resolver::automatic, svc::Roots::Use::write_only);
}

// The Unix socket at `path` before this daemon binds it: a live daemon's socket is left alone
// (ConfigError naming the pid that answers, from SO_PEERCRED); only a dead socket (nobody
// listening: ECONNREFUSED) is removed. Returns false when nothing is there.
bool take_over_socket(const std::string& path, svc::Logger& log) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (!S_ISSOCK(st.st_mode))
    throw svc::ConfigError("listen: " + path + " exists and is not a socket; not touching it");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    throw svc::ConfigError("listen: socket path " + path + " is too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw svc::ConfigError(std::string("socket(AF_UNIX): ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    ucred cred{};
    socklen_t len = sizeof cred;
    const std::string who =
        ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0
            ? "pid " + std::to_string(cred.pid) + " (uid " + std::to_string(cred.uid) + ")"
            : std::string("a process whose pid SO_PEERCRED does not tell");
    throw svc::ConfigError("listen: " + path + " is served by a live process, " + who +
                           "; another meshdockd? Not touching its socket");
  }
  if (errno != ECONNREFUSED)
    throw svc::ConfigError("listen: cannot tell whether " + path +
                           " is in use (connect: " + std::strerror(errno) + "); not touching it");
  if (::unlink(path.c_str()) != 0)
    throw svc::ConfigError("listen: cannot remove the dead socket " + path + ": " +
                           std::strerror(errno));
  log.info("removed the dead socket " + path + " (nobody was listening)");
  return true;
}

// The keys of `fresh` (a SIGHUP's reread) that differ from the running `config` but take effect
// only at a start (the socket, the gRPC server's limits, segment modes); each is set back to
// the running value in `fresh`, so the configuration kept says what is in force. The prefix
// is the registry's to say (Registry::reconfigure).
std::vector<std::string> keep_start_only_keys(const svc::Config& config, svc::Config& fresh) {
  std::vector<std::string> changed;
  auto keep = [&](const char* key, auto svc::Config::*field) {
    if (fresh.*field == config.*field) return;
    changed.push_back(key);
    fresh.*field = config.*field;
  };
  keep("listen", &svc::Config::listen);
  keep("socket_mode", &svc::Config::socket_mode);
  keep("shm_mode", &svc::Config::shm_mode);
  keep("metrics_listen", &svc::Config::metrics_listen);
  keep("token_file", &svc::Config::token_file);
  keep("max_message_size", &svc::Config::max_message_size);
  keep("max_streams", &svc::Config::max_streams);
  keep("max_streams_per_peer", &svc::Config::max_streams_per_peer);
  keep("max_connections_per_uid", &svc::Config::max_connections_per_uid);
  keep("max_connections", &svc::Config::max_connections);
  keep("max_loads", &svc::Config::max_loads);
  keep("max_loads_per_peer", &svc::Config::max_loads_per_peer);
  keep("max_exports", &svc::Config::max_exports);
  keep("max_exports_per_peer", &svc::Config::max_exports_per_peer);
  keep("max_rpc_threads", &svc::Config::max_rpc_threads);
  keep("max_rpc_memory", &svc::Config::max_rpc_memory);
  return changed;
}

// SIGHUP: the configuration file read again (resolved again: a default file created since the
// start is read now) and applied where it can be while serving; a file that is wrong keeps the
// running configuration, logged. Keys that apply only at a start keep their running value.
void reread_config(const Args& args, svc::Config& config, svc::Registry& registry, svc::Logger& log,
                   const std::function<void(const svc::StartupLoad&, bool)>& load_configured) {
  const svc::ConfigSource now = config_source(args);
  if (now.path) {
    try {
      auto fresh = effective_config(args, now);
      const auto kept = keep_start_only_keys(config, fresh);
      registry.reconfigure(fresh);
      // `load` is applied as a change. A new entry is loaded now (a name a client's
      // mesh holds already is refused, logged, as its Load would be); a changed one
      // replaces the mesh its earlier form loaded (consumers see a new frame); one
      // taken out stays loaded until a client unloads it.
      const auto was = std::move(config.load);
      config = fresh;
      auto named = [](const std::vector<svc::StartupLoad>& v, const std::string& name) {
        return std::any_of(v.begin(), v.end(), [&name](const auto& e) { return e.name == name; });
      };
      for (const auto& l : config.load)
        if (std::find(was.begin(), was.end(), l) == was.end())
          load_configured(l, named(was, l.name));
      for (const auto& l : was)
        if (!named(config.load, l.name))
          log.info("SIGHUP: '" + l.name + "' is no longer in `load`; it stays loaded " +
                   "until it is unloaded (meshdockctl unload " + l.name + ")");
      log.info("SIGHUP: configuration reread from " + *now.path);
      if (!kept.empty()) {
        std::string keys;
        for (const auto& k : kept) keys += (keys.empty() ? "" : ", ") + k;
        log.warn("SIGHUP: " + keys + " changed" + " in " + *now.path +
                 "; that applies after a restart (the running value is kept)");
      }
    } catch (const std::exception& e) {
      log.error(std::string("SIGHUP: kept the running configuration: ") + e.what());
    }
  } else {
    log.info("SIGHUP: no configuration file to reread (" + now.describe() + ")");
  }
}

int serve(const Args& args) {
  // The signal set is made first of all: Asio queues a SIGTERM that lands while stale segments are
  // replaced or just after "ready" is printed, and handles it once io runs; before this line
  // the default action would kill the daemon and leave its segments behind.
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  // A log reader that goes away (`meshdockd 2>&1 | tee log` with tee ended, a test's pipe)
  // made the next log line raise SIGPIPE, whose default action killed the daemon there, a
  // SIGTERM's "stopping" line included, and left every slot's segments in /dev/shm. A write to
  // a closed pipe is EPIPE now, and the log line is lost instead.
  std::signal(SIGPIPE, SIG_IGN);
  svc::Logger log;
  // The first line says which file the configuration came from (whatever the log level), so
  // an error about a key below can be traced to its file.
  const svc::ConfigSource source = config_source(args);
  log.notice(source.describe());
  svc::Config config = effective_config(args, source);
  log.set_level(config.log_level);
  if (config.failpoint.phase == "upload_delay")
    log.warn("MESHDOCK_FAILPOINT: every CUDA upload waits " +
             std::to_string(config.failpoint.pause.count()) +
             " ms on the device and is published before its copies land (a test aid; unset it "
             "in production)");
  else if (!config.failpoint.phase.empty())
    log.warn("MESHDOCK_FAILPOINT: every load sleeps " +
             std::to_string(config.failpoint.pause.count()) + " ms at " + config.failpoint.phase +
             " (a test aid; unset it in production)");
  const std::string token = read_token(config);

  // Readers write straight into pinned memory when a device will take the data.
  const auto probe = meshdock::backend::probe_devices();
  // A device named outright (--device cuda:N or the configuration's "device") that does not
  // answer stops the start: "auto" is the setting that means "a GPU if there is one".
  if (config.device.starts_with("cuda:")) {
    const bool answers =
        std::any_of(probe.devices.begin(), probe.devices.end(),
                    [&](const auto& d) { return config.device == "cuda:" + std::to_string(d.id); });
    if (!answers) {
      log.error("device " + config.device + " does not answer (" +
                (probe.devices.empty()
                     ? probe.cuda_status
                     : std::to_string(probe.devices.size()) + " CUDA devices answer") +
                "); start with --device auto (a GPU when there is one) or cpu");
      return 1;
    }
  }
  // Readers write the arrays a device will take into pinned memory, kept for reuse; it outlives
  // the registry (declared before it), so every mesh buffer goes back to it.
  std::unique_ptr<meshdock::backend::PinnedPool> pinned;
  if (!probe.devices.empty() && config.device != "cpu") {
    meshdock::backend::PinnedPool::Options po;
    po.on_fallback = [&log](const std::string& m) { log.warn("pinned memory: " + m); };
    const int pin_device = config.device.starts_with("cuda:") ? std::stoi(config.device.substr(5))
                                                              : probe.devices.front().id;
    pinned = meshdock::backend::make_pinned_pool(std::move(po), pin_device);
    pinned->install();
    log.info("mesh buffers: pinned host memory (" + pinned->describe() + ")");
  } else {
    log.info(std::string("device: cpu (host backend): ") + probe.cuda_status);
  }

  raise_fd_limit(config, log);

  // A live daemon's socket is checked before anything else is made (segments included).
  std::optional<std::string> socket_path;
  if (config.listen.starts_with("unix:")) {
    socket_path = config.listen.substr(5);
    take_over_socket(*socket_path, log);
  }
  svc::Registry registry(config, log);
  if (pinned) registry.set_pinned_pool(pinned.get());
  meshdock::rpc::PeerTable peers;  // who is at the other end of each Unix-socket connection
  meshdock::rpc::Gate gate(
      token,
      {config.max_streams, config.max_streams_per_peer, config.max_loads, config.max_loads_per_peer,
       config.max_exports, config.max_exports_per_peer, config.max_rpc_threads},
      &peers);
  meshdock::rpc::MeshdockService service(registry, log, gate, peers,
                                         [&io] { boost::asio::post(io, [&io] { io.stop(); }); });
  meshdock::rpc::HealthService health(gate);  // token-checked, unlike grpc++'s default one
  // Prometheus' GET /metrics on loopback, when configured (a bad address stops the start).
  std::unique_ptr<meshdock::rpc::MetricsHttp> metrics_http;
  if (!config.metrics_listen.empty()) {
    // check_config has said what is malformed; a ConfigError here is the bind ("cannot listen:
    // ..."), a configuration error (exit status 2) as every other (main).
    metrics_http = std::make_unique<meshdock::rpc::MetricsHttp>(
        io, config.metrics_listen, [&service] { return service.metrics_text(); }, log,
        key_name(args, source)("metrics_listen"));
    log.info("metrics: http://" + metrics_http->endpoint() + "/metrics");
  }
  grpc::ServerBuilder builder;
  int port = 0;
  // TCP: gRPC listens. The Unix socket: this daemon accepts (UnixAcceptor, below) and hands each
  // connection to gRPC, having read who connected (SO_PEERCRED) for the log lines.
  if (!socket_path)
    builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service.service());
  builder.RegisterService(health.service());
  // No request may be bigger than this (Publish streams its data in chunks); over TCP the
  // token is checked before a request is read (MeshdockService). gRPC reads a message before
  // it checks its size, so the memory its transport may hold is capped too (over the quota,
  // it resets the stream). Threads are capped, well above the stream caps (check_config), so
  // streams never starve other calls.
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_size));
  grpc::ResourceQuota quota("meshdockd");
  quota.SetMaxThreads(static_cast<int>(config.max_rpc_threads));
  quota.Resize(config.max_rpc_memory);  // gRPC 1.5x checks the message size only once read
  builder.SetResourceQuota(quota);
  // A Publish stream's client may send 4 MiB before it waits for a window update (gRPC's
  // default, 64 KiB, made a 15 MiB publish wait on dozens of round trips: 43 ms -> 26 ms). What
  // all streams hold together is still bounded by the quota above.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 4 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (!socket_path && port == 0)) {
    log.error("cannot listen on " + config.listen);
    return 1;
  }
  // Declared after the server: destroyed (stopped) before it.
  std::optional<meshdock::rpc::UnixAcceptor> acceptor;
  if (socket_path) {
    try {
      acceptor.emplace(*socket_path, peers, log, config.max_connections_per_uid,
                       config.max_connections);
    } catch (const meshdock::rpc::AcceptError& e) {
      log.error("cannot listen on " + config.listen + " (" + e.what() +
                "; does the directory exist and is it writable?)");
      return 1;
    }
  }
  if (socket_path && ::chmod(socket_path->c_str(), config.socket_mode) != 0)
    log.warn("chmod " + *socket_path + ": " + std::strerror(errno));
  struct stat bound {};  // the socket this daemon made: the only one it removes at exit
  if (socket_path) ::stat(socket_path->c_str(), &bound);
  if (acceptor) acceptor->start(*server);
  std::printf("meshdockd ready on %s\n", config.listen.c_str());
  std::fflush(stdout);
  notify("READY=1\nSTATUS=serving on " + config.listen);

  int status = 0;                               // serve()'s exit status: 1 when a GPU was lost
  std::string stopping = "meshdockd stopping";  // what Watch streams are told at the end
  // Declared before the pool, whose tasks read it: it outlives them however serve() ends.
  std::atomic<bool> stopped{false};     // set once io.run returns: loads not begun are dropped
  boost::asio::thread_pool reloads(1);  // watched files reload here, one at a time
  // A configured mesh ("load"), after the others on that thread: the daemon serves meanwhile (a
  // consumer attaching to one waits for it, as for any load). A failure is logged and the
  // others still load: a restart must not be stopped by one missing file.
  const std::function<void(const svc::StartupLoad&, bool)> load_configured =
      [&registry, &log, &stopped, &reloads](const svc::StartupLoad& l, bool replace) {
        boost::asio::post(reloads, [&registry, &log, &stopped, l, replace] {
          if (stopped) return;
          svc::LoadRequest r;
          r.path = l.path;
          r.name = l.name;
          r.device = l.device;
          r.num_slots = l.num_slots;
          r.watch = l.watch;
          r.replace = replace;
          try {
            // Stopped meanwhile: the load ends at its next phase, nothing published.
            registry.load(
                r, [](auto...) {}, [&stopped] { return stopped.load(); });
          } catch (const std::exception& e) {
            if (stopped) return;
            log.error("load: '" + l.name + "' (" + l.path + ", in the configuration) was not " +
                      "loaded: " + e.what());
          }
        });
      };
  for (const auto& l : config.load) load_configured(l, false);

  // Signals (queued since the set was made) and timers.
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          reread_config(args, config, registry, log, load_configured);
          signals.async_wait(on_signal);
          return;
        }
        log.info(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ": stopping");
        io.stop();
      };
  signals.async_wait(on_signal);

  std::uint64_t watchdog_usec = 0;
#if defined(MESHDOCK_HAVE_SYSTEMD)
  if (sd_watchdog_enabled(0, &watchdog_usec) <= 0) watchdog_usec = 0;
#endif
  auto last_watchdog = std::chrono::steady_clock::now();
  boost::asio::steady_timer tick(io);
  std::function<void(const boost::system::error_code&)> on_tick =
      [&](const boost::system::error_code& ec) {
        if (ec) return;
        // A GPU whose context met a sticky error fails every load and publish from now on, and
        // its slots' buffers cannot be trusted: this process can do nothing more with it. Stop
        // (consumers see ProducerGone) with status 1, which systemd's Restart=on-failure
        // answers with a fresh process and so a fresh context.
        if (const auto lost = registry.lost_device(); !lost.empty()) {
          log.error(lost + ": the GPU's context cannot be used again in this process; " +
                    "meshdockd stops with exit status 1 so that its service manager starts " +
                    "it again (systemd: Restart=on-failure)");
          notify("STATUS=stopping: " + lost);
          stopping = "meshdockd stopping: " + lost;
          status = 1;
          io.stop();
          return;
        }
        for (const auto& name : registry.maintain()) {
          boost::asio::post(reloads, [&registry, &log, name] {
            try {
              registry.reload(name, [](auto...) {});
              log.info("watch: '" + name + "' reloaded after its file changed");
            } catch (const std::exception& e) {
              log.warn("watch: '" + name + "' kept its last frame: " + e.what());
            }
          });
        }
        const auto now = std::chrono::steady_clock::now();
        if (watchdog_usec && now - last_watchdog >= std::chrono::microseconds(watchdog_usec / 2)) {
          notify("WATCHDOG=1");
          last_watchdog = now;
        }
        tick.expires_after(std::chrono::milliseconds(100));
        tick.async_wait(on_tick);
      };
  tick.expires_after(std::chrono::milliseconds(100));
  tick.async_wait(on_tick);

  io.run();

  notify("STOPPING=1");
  stopped = true;
  registry.announce_shutdown(stopping);  // queued for every Watch stream before they end
  service.stop_streams();
  health.stop();
  if (acceptor) acceptor->stop();  // no new connection is handed to a server shutting down
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  reloads.join();
  registry.clear();  // shutdown flags set, segments removed
  struct stat now {};
  if (socket_path && ::stat(socket_path->c_str(), &now) == 0 && now.st_ino == bound.st_ino &&
      now.st_dev == bound.st_dev)
    ::unlink(socket_path->c_str());
  log.info("stopped");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // gRPC reads each Publish message into buffers from malloc. With glibc's defaults a 256 KiB
  // buffer is a fresh mmap (or heap the next free trims away again), so every message faulted
  // its pages in anew: most of a field publish's time on a VM, where a fault costs ~10 us.
  // Messages up to 4 MiB come from the heap, a free top of up to 8 MiB per heap stays for
  // reuse, and 4 arenas at most (gRPC's threads would otherwise get up to 8 a core) keep that
  // to 32 MiB; free chunks inside a heap are kept as glibc always keeps them. (Mesh arrays from 1
  // MiB have their own allocator, mesh/allocator.cpp.)
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 8 << 20);
  ::mallopt(M_ARENA_MAX, 4);
  Args a;
  Action action = Action::kServe;
  if (const int rc = parse_args(argc, argv, a, action); rc != 0) return rc;
  if (action == Action::kHelp) return usage(stdout);
  if (action == Action::kVersion) {
    std::printf("meshdockd %s (shm protocol: cuda-link CIPD v0.5.0, catalog layout %u)\n", kVersion,
                meshdock::shm::kCatalogLayoutVersion);
    return 0;
  }
  if (action == Action::kProbe) return probe();
  try {
    if (a.print_config) {
      const svc::Config c = effective_config(a, config_source(a));
      check_like_a_start(c);
      std::printf("%s\n", svc::config_json(c).c_str());
      return 0;
    }
    return serve(a);
  } catch (const svc::ConfigError& e) {
    std::fprintf(stderr, "meshdockd: configuration: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshdockd: %s\n", e.what());
    return 1;
  }
}
