// meshdockctl: the command line for meshdock.
//
// gRPC verbs talk to meshdockd (--addr, default $MESHDOCK_ADDR or the system socket); `inspect`
// reads a slot's segments directly (works without the daemon, for debugging consumers).
// Arguments are parsed by CLI11: every verb has its own --help, global options may come before
// or after the verb, and a mistyped verb gets a suggestion. --json prints a JSON object per
// reply (json_out.hpp; `watch`: one per line). Exit statuses: status.hpp, docs/operations.md.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "json_out.hpp"
#include "meshdock/inspect.hpp"
#include "meshdock/shm.hpp"
#include "meshdock/source.hpp"
#include "meshdock/v1/meshdock.grpc.pb.h"
#include "npy.hpp"
#include "status.hpp"

namespace {

namespace v1 = meshdock::v1;
using meshdockctl::Json;
constexpr const char* kDefaultAddr = "unix:/run/meshdock/meshdockd.sock";
constexpr const char* kVersion = "meshdockctl 0.1.0";

struct Options {
  std::string addr, token;
  bool json = false;
  bool verbose = false;
  double timeout = 0;  // 0: none (load of a big mesh may take long)
  std::string verb;    // the command given (what a deadline message names)
};

void print_json(const Json& j) {
  std::printf("%s\n", j.dump(2).c_str());
}

class Client {
 public:
  explicit Client(const Options& o) : o_(o) {
    channel_ = grpc::CreateChannel(o.addr, grpc::InsecureChannelCredentials());
    stub_ = v1::Meshdock::NewStub(channel_);
  }

  void prepare(grpc::ClientContext& ctx) const {
    if (!o_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + o_.token);
    if (o_.timeout > 0)
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<long>(o_.timeout * 1000)));
  }

  int fail(const grpc::Status& s) const {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      int code = meshdockctl::kUnavailable;
      const auto why = meshdockctl::diagnose_unavailable(o_.addr, code);
      if (code == meshdockctl::kPermissionDenied)  // it may be answering, just not to us
        std::fprintf(stderr, "meshdockctl: %s\n", why.c_str());
      else
        std::fprintf(stderr, "meshdockctl: meshdockd at %s is not answering: %s\n", o_.addr.c_str(),
                     why.empty() ? s.error_message().c_str() : why.c_str());
      return code;
    }
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && o_.timeout > 0) {
      // gRPC's own words are "Deadline Exceeded": say which wait ran out.
      std::fprintf(stderr,
                   "meshdockctl %s: DEADLINE_EXCEEDED: no reply from meshdockd at %s "
                   "within --timeout %g s%s\n",
                   o_.verb.c_str(), o_.addr.c_str(), o_.timeout,
                   o_.verb == "load" || o_.verb == "reload"
                       ? " (the daemon stops a load past it and publishes nothing)"
                       : "");
      return meshdockctl::exit_code(s);
    }
    std::fprintf(stderr, "meshdockctl: %s: %s\n", meshdockctl::code_name(s.error_code()),
                 s.error_message().c_str());
    // Only where the refusal is about where the path points (not "no mesh named ..." of an
    // export, nor a symlink the daemon does not follow: the absolute path was right there):
    // the path, or its directory (an export into a directory that is not there names that).
    const auto names = [&](const std::string& p) {
      return p.size() > 1 && s.error_message().find(p) != std::string::npos;  // not "/"
    };
    if (!path_note_.empty() && s.error_message().find("symlink") == std::string::npos &&
        (names(path_) || names(std::filesystem::path(path_).parent_path().string())) &&
        (s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
         s.error_code() == grpc::StatusCode::NOT_FOUND))
      std::fprintf(stderr, "meshdockctl: note: %s\n", path_note_.c_str());
    return meshdockctl::exit_code(s);
  }
  // What fail() adds to a refusal or a missing file: how a relative path was made absolute.
  void path_note(std::string path, std::string note) {
    path_ = std::move(path);
    path_note_ = std::move(note);
  }

  template <typename Reply>
  int print(const grpc::Status& s, const Reply& r, void (*human)(const Reply&)) const {
    if (!s.ok()) return fail(s);
    if (o_.json)
      print_json(meshdockctl::to_json(r));
    else
      human(r);
    return 0;
  }

  v1::Meshdock::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  const Options& options() const { return o_; }

 private:
  const Options& o_;
  std::string path_, path_note_;  // the absolute path sent, and how it was made
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Meshdock::Stub> stub_;
};

bool g_verbose = false;  // -v: list every note (the human output's print_slot)

// A size for people: "812 B", "48.2 KiB", "42.6 MiB", "1.3 GiB".
std::string size_text(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char out[32];
  std::snprintf(out, sizeof out, u ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return out;
}

void print_slot(const v1::SlotInfo& s) {
  std::string types;
  std::map<std::string, int> count;
  for (const auto& t : s.cell_types()) ++count[t];
  for (const auto& [t, n] : count)
    types += (types.empty() ? "" : ", ") + t + (n > 1 ? " x" + std::to_string(n) : "");
  const std::string device = s.device().device_type() == 2
                                 ? "cuda:" + std::to_string(s.device().device_id())
                                 : std::string("cpu");
  if (s.format() == "tensor")  // a single-array publish: no mesh, no file (describe: its shape)
    std::printf("%-20s %s  tensor\n", s.name().c_str(), device.c_str());
  else
    std::printf("%-20s %s  %llu points, %llu cells (%s)\n", s.name().c_str(), device.c_str(),
                static_cast<unsigned long long>(s.num_points()),
                static_cast<unsigned long long>(s.num_cells()), types.c_str());
  std::printf("  %s%sframes %u  slots %u  %s  %s in %.3f s%s\n", s.path().c_str(),
              s.path().empty() ? "" : "  ", s.write_idx(), s.num_slots(),
              size_text(s.data_size()).c_str(), s.format() == "tensor" ? "published" : "loaded",
              s.load_seconds(), s.watch() ? "  (watched)" : "");
  std::printf("  segments %s %s\n", s.control_segment().c_str(), s.catalog_segment().c_str());
  // A load can carry a dozen notes (conversions, dropped sections): one line unless -v.
  if (g_verbose || s.notes_size() == 1) {
    for (const auto& n : s.notes()) std::printf("  note: %s\n", n.c_str());
  } else if (s.notes_size() > 1) {
    std::printf("  %d notes; -v to list them\n", s.notes_size());
  }
}

// Whether a publish from a source object was refused because the daemon could not use the object
// (not the mesh or the field, which messages would be refused for too): then messages may do. The
// daemon says which in the reply's trailer (meshdock/shm/names.hpp kSourceTrailer); one from
// before source objects has none, and refuses the publish as INVALID_ARGUMENT (no data).
bool source_refused(const grpc::ClientContext& ctx, const grpc::Status& s) {
  const auto& trailers = ctx.GetServerTrailingMetadata();
  const auto it = trailers.find(std::string(meshdock::shm::kSourceTrailer));
  if (it == trailers.end()) return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT;
  return it->second == meshdock::shm::kSourceRefused;
}

// Arrays above this go through a source object on a Unix socket (--via auto), as the Python
// client does: below it one message costs less than making an object.
constexpr std::uint64_t kSourceThreshold = 256 << 10;

// Ctrl-C (SIGINT), SIGTERM or SIGHUP while `meshdockctl publish` holds its source object: the
// object is unlinked before the signal's default action ends the process. Before, it stayed in
// /dev/shm (as large as the array) until another producer of this user swept it; only SIGKILL
// still leaves it to that sweep. A signal while the object is being made (its name not known
// yet) waits for arm().
char g_source_path[256];
volatile sig_atomic_t g_source_armed = 0;
volatile sig_atomic_t g_pending_signal = 0;
constexpr int kUnlinkSignals[] = {SIGINT, SIGTERM, SIGHUP};

[[noreturn]] void unlink_source_and_end(int sig) {
  ::unlink(g_source_path);  // async-signal-safe
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  ::_exit(128 + sig);  // not reached: the default action of sig ends the process
}

extern "C" void on_signal_with_source(int sig) {
  if (g_source_armed) unlink_source_and_end(sig);
  g_pending_signal = sig;
}

class UnlinkOnSignal {
 public:
  UnlinkOnSignal() {
    struct sigaction sa {};
    sa.sa_handler = on_signal_with_source;
    sa.sa_flags = SA_RESTART;  // the object's making and reading go on until arm()
    sigemptyset(&sa.sa_mask);
    for (std::size_t k = 0; k < std::size(kUnlinkSignals); ++k)
      installed_[k] = ::sigaction(kUnlinkSignals[k], &sa, &old_[k]) == 0;
  }
  // The object exists at `path`: a signal from now on (or one that came while it was made)
  // unlinks it and ends the process.
  void arm(const std::string& path) {
    if (path.size() >= sizeof g_source_path) return;
    std::memcpy(g_source_path, path.c_str(), path.size() + 1);
    g_source_armed = 1;
    if (const int sig = g_pending_signal) unlink_source_and_end(sig);
  }
  ~UnlinkOnSignal() {
    g_source_armed = 0;
    for (std::size_t k = 0; k < std::size(kUnlinkSignals); ++k)
      if (installed_[k]) ::sigaction(kUnlinkSignals[k], &old_[k], nullptr);
    if (const int sig = g_pending_signal) ::raise(sig);  // no object was made: end as asked
  }
  UnlinkOnSignal(const UnlinkOnSignal&) = delete;
  UnlinkOnSignal& operator=(const UnlinkOnSignal&) = delete;

 private:
  struct sigaction old_[std::size(kUnlinkSignals)]{};
  bool installed_[std::size(kUnlinkSignals)] = {};
};

// The daemon's max_decoded_size (StatsReply), or 0 when it does not say it (a daemon from
// before the field) or Stats fails: then the publish goes ahead and the daemon's own refusal,
// or the call's error, is what the user sees.
std::uint64_t daemon_decoded_limit(Client& c) {
  grpc::ClientContext ctx;
  c.prepare(ctx);
  v1::StatsReply rep;
  return c.stub().Stats(&ctx, v1::StatsRequest(), &rep).ok() ? rep.max_decoded_size() : 0;
}

// `meshdockctl publish`: the .npy header checked here, then the array read from the file into a
// shm source object of ours named in one PublishSmall (Publish source_shm, meshdock/source.hpp),
// or streamed from the file in 1 MiB chunks (one PublishSmall message when it fits); never held
// whole in this process's memory.
int publish_npy(Client& c, const std::string& name, const std::string& field,
                const std::string& path, unsigned block, const std::string& device,
                unsigned num_slots, const std::string& via) {
  constexpr std::size_t kChunk = 1 << 20;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    std::fprintf(stderr, "meshdockctl publish: %s: %s\n", path.c_str(), std::strerror(errno));
    return errno == ENOENT ? meshdockctl::kNotFound : meshdockctl::kOther;
  }
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fprintf(stderr, "meshdockctl publish: %s is not a regular file\n", path.c_str());
    return meshdockctl::kInvalidArgument;
  }
  std::string head(std::min<std::uint64_t>(static_cast<std::uint64_t>(st.st_size), 65536), '\0');
  head.resize(std::fread(head.data(), 1, head.size(), f.get()));
  meshdockctl::NpyHeader h;
  try {
    h = meshdockctl::parse_npy(path, head, static_cast<std::uint64_t>(st.st_size));
  } catch (const meshdockctl::NpyError& e) {
    std::fprintf(stderr, "meshdockctl publish: %s\n", e.what());
    return meshdockctl::kInvalidArgument;
  }
  auto to_data = [&] {
    if (std::fseek(f.get(), static_cast<long>(h.data_offset), SEEK_SET) != 0)
      throw std::runtime_error(path + ": " + std::strerror(errno));
  };
  v1::PublishChunk first;
  first.set_name(name);
  first.set_field(field);
  first.set_block(block);
  first.set_device(device);
  first.set_num_slots(num_slots);
  first.mutable_dtype()->set_code(h.code);
  first.mutable_dtype()->set_bits(h.bits);
  first.mutable_dtype()->set_lanes(1);
  for (auto d : h.shape) first.add_shape(d);
  v1::PublishReply rep;
  auto print = +[](const v1::PublishReply& x) {
    std::printf("published frame %u of %s\n", x.frame(), x.slot().name().c_str());
  };

  const std::string sock = meshdockctl::unix_socket_path(c.options().addr);
  if (via == "shm" || (via == "auto" && !sock.empty() && h.nbytes > kSourceThreshold)) {
    // A source object's pages (the whole array, in /dev/shm beside the daemon's segments) are
    // allocated when it is made: not for an array the daemon would refuse from its header.
    if (const auto limit = daemon_decoded_limit(c); limit && h.nbytes > limit) {
      std::fprintf(stderr,
                   "meshdockctl publish: slot '%s': %s: %llu bytes are over max_decoded_size "
                   "(%llu); nothing was sent\n",
                   name.c_str(), field.c_str(), static_cast<unsigned long long>(h.nbytes),
                   static_cast<unsigned long long>(limit));
      return meshdockctl::kResourceExhausted;
    }
    meshdock::SourceOptions o;
    if (const auto ids = meshdock::daemon_of_socket(sock)) {
      o.daemon_uid = ids->uid;
      o.daemon_gid = ids->gid;
    }
    UnlinkOnSignal unlink_on_signal;  // outlives `source`: covers its making
    std::optional<meshdock::SourceBuffer> source;
    std::string why;
    try {
      source.emplace(meshdock::SourceBuffer::create(h.nbytes, o));
    } catch (const meshdock::SdkError& e) {
      why = e.what();
    }
    if (source) {
      unlink_on_signal.arm(source->path());
      to_data();
      if (h.nbytes && std::fread(source->data(), 1, h.nbytes, f.get()) != h.nbytes)
        throw std::runtime_error(path + ": read failed within its " + std::to_string(h.nbytes) +
                                 " bytes of data");
      v1::PublishChunk header = first;
      header.set_source_shm(source->name());
      grpc::ClientContext ctx;
      c.prepare(ctx);
      const auto s = c.stub().PublishSmall(&ctx, header, &rep);
      if (s.ok() || via == "shm" || !source_refused(ctx, s)) return c.print(s, rep, print);
      why = s.error_message();
    } else if (via == "shm") {
      std::fprintf(stderr, "meshdockctl publish: %s\n", why.c_str());
      return meshdockctl::kOther;
    }
    if (c.options().verbose)
      std::fprintf(stderr, "meshdockctl publish: through gRPC messages: %s\n", why.c_str());
  }

  to_data();
  std::uint64_t left = h.nbytes;
  auto next_data = [&](v1::PublishChunk& chunk) {
    std::string data(std::min<std::uint64_t>(left, kChunk), '\0');
    if (std::fread(data.data(), 1, data.size(), f.get()) != data.size())
      throw std::runtime_error(path + ": read failed after " + std::to_string(h.nbytes - left) +
                               " bytes of data");
    left -= data.size();
    chunk.set_data(std::move(data));
  };
  next_data(first);
  grpc::ClientContext ctx;
  c.prepare(ctx);
  grpc::Status s;
  if (!left) {
    s = c.stub().PublishSmall(&ctx, first, &rep);
  } else {
    auto w = c.stub().Publish(&ctx, &rep);
    bool open = w->Write(first);
    while (open && left) {
      v1::PublishChunk chunk;
      next_data(chunk);
      open = w->Write(chunk);
    }
    w->WritesDone();
    s = w->Finish();  // a refusal mid-stream ends the writes: its status says why
  }
  return c.print(s, rep, print);
}

// Load / Reload stream progress; a bar on a terminal, nothing else until the end.
int stream_load(Client& c, grpc::ClientReader<v1::LoadProgress>& reader) {
  const bool bar = isatty(STDERR_FILENO) && !c.options().json;
  v1::LoadProgress p, last;
  while (reader.Read(&p)) {
    last = p;
    if (bar && p.phase() != v1::LoadProgress::DONE) {
      const double frac = p.bytes_total() ? static_cast<double>(p.bytes_done()) /
                                                static_cast<double>(p.bytes_total())
                                          : 0.0;
      const int filled = static_cast<int>(frac * 30);
      std::fprintf(stderr, "\r%-14s [%-30s] %3d%% %-40.40s",
                   v1::LoadProgress::Phase_Name(p.phase()).c_str(),
                   std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   static_cast<int>(frac * 100), p.message().c_str());
    }
  }
  if (bar) std::fprintf(stderr, "\r%90s\r", "");
  const auto s = reader.Finish();
  if (!s.ok()) return c.fail(s);
  if (c.options().json)
    print_json(meshdockctl::to_json(last));
  else
    print_slot(last.slot());
  return 0;
}

std::string absolute(const std::string& p) {
  return std::filesystem::absolute(p).lexically_normal();
}

// For a relative PATH the daemon refused or did not find: where the absolute path came from.
std::string relative_note(const std::string& p) {
  if (std::filesystem::path(p).is_absolute()) return "";
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  return "'" + p + "' is relative: meshdockctl made it " + absolute(p) +
         " from this shell's directory" + (ec ? "" : " (" + cwd.string() + ")");
}

// `load FILE` without --name: the file name up to its first dot ("box.v41b.msh" -> "box").
std::string default_name(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename();
  return file.substr(0, file.find('.'));
}

// ---- inspect (no daemon) -----------------------------------------------------------------------
void print_report(const meshdock::SlotReport& r) {
  std::printf("control  /%s  (%u slots, %zu bytes)\n", r.control_object.c_str(), r.num_slots,
              meshdock::shm::control_block_size(r.num_slots));
  std::printf("  version %llu  write_idx %u  shutdown %s  timestamp %.6f (%s)\n",
              static_cast<unsigned long long>(r.version), r.write_idx, r.shutdown ? "yes" : "no",
              r.timestamp,
              meshdockctl::rfc3339(meshdockctl::wall_of_monotonic(r.timestamp)).c_str());
  const auto& m = r.metadata;
  std::printf("  cuda-link view: %ux%u x%u comps, kind %u, %u bits, flags %u, %u bytes\n", m.width,
              m.height, m.num_comps, m.format_kind, m.bits, m.flags, m.data_size);
  if (!r.has_catalog) {
    std::printf("catalog  none (not a meshdock producer)\n");
    return;
  }
  std::printf("catalog  /%s  daemon pid %d (%s), heartbeat %.1f ms ago, device %s%s%s\n",
              r.catalog_object.c_str(), r.daemon_pid, r.daemon_alive ? "alive" : "gone",
              static_cast<double>(r.heartbeat_age_ns) / 1e6,
              meshdockctl::device_name(r.device_type, r.device_id).c_str(),
              r.device_uuid.empty() ? "" : " ", r.device_uuid.c_str());
  for (const auto& p : r.pages) {
    std::printf("  slot %u: frame %llu, %llu bytes, handle %s, %zu leases, %zu arrays\n", p.index,
                static_cast<unsigned long long>(p.frame),
                static_cast<unsigned long long>(p.data_size),
                p.handle.empty() ? "-" : p.handle.c_str(), p.leases.size(),
                p.manifest ? p.manifest->arrays.size() : 0);
    if (p.manifest) {
      for (const auto& a : p.manifest->arrays) {
        std::string shape;
        for (auto d : a.shape) {
          if (!shape.empty()) shape += 'x';
          shape += std::to_string(d);
        }
        std::printf("    %-28s %-11s %-8s %s @%llu\n", a.name.c_str(),
                    meshdock::shm::role_name(a.role),
                    meshdockctl::dtype_name(a.dtype.code, a.dtype.bits, a.dtype.lanes).c_str(),
                    shape.c_str(), static_cast<unsigned long long>(a.offset));
      }
    }
  }
}

int inspect(const Options& o, const std::string& name, const std::string& prefix) {
  std::string control;
  try {
    control = meshdock::shm::control_object_name(prefix, name);
  } catch (const std::exception& e) {  // a name or prefix outside the shm name rules
    std::fprintf(stderr, "meshdockctl inspect: %s\n", e.what());
    return meshdockctl::kInvalidArgument;
  }
  // "ru" for "ru.": refused as the SDKs' attach and meshdockd refuse it, rather than looking
  // for /rubox and saying there is no such slot.
  if (const auto problem = meshdock::shm::prefix_separator_problem(prefix); !problem.empty()) {
    std::fprintf(stderr, "meshdockctl inspect: --prefix %s\n", problem.c_str());
    return meshdockctl::kInvalidArgument;
  }
  try {
    // A slot that is not there is NOT_FOUND (4), as for the daemon's verbs. stat, not open: a
    // segment this user may not read is there (inspect_slot then says who may).
    struct stat st {};
    if (::stat(("/dev/shm/" + control).c_str(), &st) != 0 && errno == ENOENT) {
      std::fprintf(stderr,
                   "meshdockctl: slot '%s': no control block /%s (is meshdockd running with "
                   "prefix '%s'?)\n",
                   name.c_str(), control.c_str(), prefix.c_str());
      return meshdockctl::kNotFound;
    }
    const auto report = meshdock::inspect_slot(name, prefix);
    if (o.json) {
      auto j = meshdock::to_json(report);
      meshdockctl::script_inspect(j);
      j["time"] = meshdockctl::rfc3339(meshdockctl::wall_of_monotonic(report.timestamp));
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      print_report(report);
    }
    return 0;
  } catch (const meshdock::SegmentAccessDenied& e) {
    std::fprintf(stderr, "meshdockctl: %s\n", e.what());
    return meshdockctl::kPermissionDenied;
  } catch (const std::exception& e) {  // SdkError, or a name the shm rules refuse
    std::fprintf(stderr, "meshdockctl: %s\n", e.what());
    return meshdockctl::kOther;
  }
}

// ---- bash completion ---------------------------------------------------------------------------
// Generated from the parser itself, so it lists exactly the verbs and options there are.
std::string completion_script(CLI::App& app) {
  std::string verbs, cases, globals;
  std::set<std::string> global_names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& n : opt->get_lnames()) {
      globals += " --" + n;
      global_names.insert(n);
    }
  }
  // Verbs whose arguments are paths complete file names; the others take mesh names or
  // numbers, where a file name would only mislead.
  static const std::set<std::string> kFileVerbs = {"load", "export", "publish"};
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    verbs += " " + sub->get_name();
    std::string opts;
    for (const CLI::Option* opt : sub->get_options()) {
      for (const auto& n : opt->get_lnames())
        if (!global_names.count(n)) opts += " --" + n;  // --help once, from the globals
    }
    cases += "    " + sub->get_name() + ") opts=\"" + opts.substr(opts.empty() ? 0 : 1) +
             "\"; files=" + (kFileVerbs.count(sub->get_name()) ? "1" : "") + ";;\n";
  }
  return "# bash completion for meshdockctl: eval \"$(meshdockctl completion bash)\"\n"
         "_meshdockctl() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} verb= opts= files= w\n"
         "  for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n"
         "    case \" " +
         verbs.substr(1) +
         " \" in *\" $w \"*) verb=$w; break;; esac\n"
         "  done\n"
         "  case $verb in\n" +
         cases + "    *) COMPREPLY=($(compgen -W \"" + verbs.substr(1) + globals +
         "\" -- \"$cur\")); return;;\n"
         "  esac\n"
         "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts" +
         globals +
         "\" -- \"$cur\"));\n"
         "  elif [[ -n $files ]]; then COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
         "}\n"
         "complete -o filenames -F _meshdockctl meshdockctl\n";
}

// Number checks whose messages say what was expected (CLI11's own print the whole double range).
CLI::Validator seconds_validator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !std::isfinite(d) || d < 0)
          return "'" + v + "' is not a number of seconds >= 0";
        return "";
      },
      "SECONDS");
}

// --slots N: checked here, in the option's own words, rather than sent for the daemon to refuse
// as "num_slots 11 is not 1..10" (the protocol's field, which this command line never shows).
CLI::Validator slots_validator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        char* end = nullptr;
        errno = 0;
        const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || v[0] == '-' || *end != '\0' || errno || n > 0xffffffffULL)
          return "'" + v + "' is not a whole number >= 0";
        if (n > meshdock::shm::kMaxSlots)
          return v + " is more than the " + std::to_string(meshdock::shm::kMaxSlots) +
                 " ring slots a control block holds (0: the daemon's default)";
        return "";
      },
      "N");
}

// NAME given as "": refused here, as a usage error, rather than sent for the daemon to answer
// "no mesh named ''" (NOT_FOUND) or, for watch and leases, taken for no name at all.
CLI::Validator name_validator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        return v.empty() ? "an empty name names no mesh" : std::string();
      },
      "NAME");
}

// What is wrong with the words before the verb, if anything: an option meshdockctl does not have
// (CLI11 would blame the verb that follows: "meshdockctl ls: The following argument was not
// expected: --address"), or a first word that is not an option (or a global option's value)
// and names no verb (CLI11 would call it an extra positional). A person wants to hear which
// option or verb was meant.
std::optional<std::string> unknown_verb(int argc, char** argv, const CLI::App& app) {
  // known: every long option and the one-letter ones that take a value; valued: those that take
  // one (the next word is theirs).
  std::vector<std::string> verbs, known, valued;
  std::string shorts;  // one-letter flags, which may come together ("-jv")
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    verbs.push_back(sub->get_name());
  for (const CLI::Option* opt : app.get_options()) {
    const bool takes_value = opt->get_expected_min() > 0;
    for (const auto& n : opt->get_lnames()) {
      known.push_back("--" + n);
      if (takes_value) valued.push_back("--" + n);
    }
    for (const auto& n : opt->get_snames()) {
      if (takes_value) {
        known.push_back("-" + n);
        valued.push_back("-" + n);
      } else {
        shorts += n;
      }
    }
  }
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--") return std::nullopt;
    if (has(valued, s)) {
      ++i;
      continue;
    }
    if (s.starts_with("-")) {
      const std::string name = s.substr(0, s.find('='));  // --addr=unix:...
      if (has(known, name)) continue;
      if (!s.starts_with("--") && s.size() > 1 &&
          s.find_first_not_of(shorts, 1) == std::string::npos)
        continue;
      std::string msg = "unknown option '" + name + "'";
      // "-x": any one-letter option is one edit away; only a longer name says what was meant.
      const auto near = name.size() > 2 ? meshdockctl::suggest(name, known) : std::string();
      if (!near.empty()) msg += "; did you mean '" + near + "'?";
      return msg;
    }
    if (has(verbs, s)) return std::nullopt;
    std::string msg = "unknown command '" + s + "'";
    const auto near = meshdockctl::suggest(s, verbs);
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    return msg;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* env_addr = std::getenv("MESHDOCK_ADDR");
  const char* env_token = std::getenv("MESHDOCK_TOKEN");
  o.addr = env_addr && *env_addr ? env_addr : kDefaultAddr;
  o.token = env_token ? env_token : "";

  CLI::App app{"meshdockctl: drive meshdockd (load meshes into shared memory, list, watch, ...)",
               "meshdockctl"};
  app.fallthrough();  // global options after the verb too: `meshdockctl ls --json`
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);
  app.footer(std::string("ADDR: unix:PATH or HOST:PORT (default $MESHDOCK_ADDR, else ") +
             kDefaultAddr +
             ").\n"
             "exit status: 0 ok, 1 other error, 2 usage,\n"
             "  3 daemon unavailable (or health not SERVING), 4 not found,\n"
             "  5 invalid argument, 6 permission denied (also: may not connect to the socket),\n"
             "  7 resource exhausted, 8 already exists, 9 failed precondition,\n"
             "  10 deadline exceeded.\n"
             "`meshdockctl VERB --help` describes a verb.");
  app.add_option("-a,--addr", o.addr,
                 "meshdockd's address: unix:PATH or HOST:PORT (default $MESHDOCK_ADDR)");
  app.add_option("--token", o.token, "bearer token for TCP ($MESHDOCK_TOKEN)");
  app.add_flag("-j,--json", o.json, "print replies as JSON (watch: one object per line)");
  app.add_option("-t,--timeout", o.timeout, "seconds to wait for a reply (0: no limit)")
      ->check(seconds_validator());
  app.add_flag("-v,--verbose", o.verbose, "list every note of a loaded mesh");

  // load
  std::string path, name, device, format;
  bool float32 = false, int32 = false, zero_copy_only = false, watch = false, replace = false;
  unsigned num_slots = 0;
  auto* load = app.add_subcommand("load", "read a mesh file and publish it in shared memory");
  load->add_option("FILE", path, "the mesh file (relative paths are made absolute)")->required();
  load->add_option("-n,--name", name,
                   "the mesh's name (default: the file name up to its first dot, "
                   "box.v41b.msh -> box); A-Z a-z 0-9 _ . -, at most 200 characters")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.empty() ? std::string(
                                   "an empty name names nothing (leave --name out to "
                                   "name the mesh after its file)")
                             : std::string();
          },
          "NAME"));
  load->add_flag("--float32", float32, "convert float64 arrays to float32");
  load->add_flag("--int32", int32, "convert int64 connectivity to int32");
  load->add_flag("--zero-copy-only", zero_copy_only, "refuse any conversion that copies");
  load->add_option("-d,--device", device, "auto (default), cpu or cuda:N");
  load->add_option("--format", format,
                   "the reader (msh, vtu, vtk, stl, ...); default by extension");
  load->add_option("-s,--slots", num_slots, "ring slots (0: the daemon's default)")
      ->check(slots_validator());
  load->add_flag("-w,--watch", watch, "reload when the file changes");
  load->add_flag("-r,--replace", replace, "replace a loaded mesh of that name");

  auto* reload = app.add_subcommand("reload", "read a loaded mesh's file again");
  reload->add_option("NAME", name, "the mesh")->required()->check(name_validator());
  auto* unload = app.add_subcommand("unload", "drop a mesh (its segments are removed)");
  unload->add_option("NAME", name, "the mesh")->required()->check(name_validator());
  auto* ls = app.add_subcommand("ls", "list the loaded meshes");
  auto* describe =
      app.add_subcommand("describe", "a mesh's arrays (dtype, shape, offset) and manifest");
  describe->add_option("NAME", name, "the mesh")->required()->check(name_validator());

  std::string out_path;
  bool force = false;
  auto* exp = app.add_subcommand("export", "write a loaded mesh to a file (under an export root)");
  exp->add_option("NAME", name, "the mesh")->required()->check(name_validator());
  exp->add_option("PATH", out_path, "the file to write")->required();
  exp->add_option(
      "--format", format,
      "the writer: vtu, vtp, msh, msh22, vtk, stl, obj, ply, off, inp, mesh, meshb, "
      "su2, exo, bdf, dat (Tecplot), avs, node (TetGen: writes x.node and x.ele), "
      "ugrid, f3grid (FLAC3D), vol (Netgen; x.vol.gz gzipped), ansys (Fluent as meshio writes "
      "it), fluent (as Fluent writes it: faces), mdpa (Kratos as meshio writes it), kratos "
      "(.mdpa as Kratos reads it: generic elements and conditions), post / dato (PERMAS; "
      "x.post.gz gzipped), neuroglancer (precomputed mesh, no extension), or "
      "meshio's name "
      "with the encoding (vtk-ascii, vtu-ascii, gmsh22-binary); default by extension");
  exp->add_flag("-f,--force", force, "replace an existing file (never a loaded mesh's source)");

  std::string field, npy_path;
  unsigned block = 0;
  auto* publish = app.add_subcommand(
      "publish", "publish an array from a .npy file: a mesh's field, or a tensor of its own");
  publish->add_option("NAME", name, "the mesh (or the tensor's slot)")
      ->required()
      ->check(name_validator());
  publish
      ->add_option("FIELD", field,
                   "point_data/NAME, cell_data/NAME (with --block) or tensor (a standalone "
                   "array in a slot of its own, created by its first publish)")
      ->required();
  publish->add_option("FILE", npy_path, "a .npy file (numpy.save): C order, little-endian")
      ->required();
  publish->add_option("-b,--block", block,
                      "the cell block of a cell_data field (0 with every cell's row: all blocks)");
  publish->add_option("-d,--device", device, "tensor, first publish: auto, cpu or cuda:N");
  publish->add_option("-s,--slots", num_slots, "tensor, first publish: ring slots")
      ->check(slots_validator());
  std::string via = "auto";
  publish
      ->add_option("--via", via,
                   "how the bytes travel: shm (a shared-memory object of ours the daemon reads; "
                   "its Unix socket only), grpc (messages), auto (shm above 256 KiB on a Unix "
                   "socket, else grpc; grpc when the daemon cannot read the object)")
      ->check(CLI::IsMember({"auto", "grpc", "shm"}));

  auto* watchv = app.add_subcommand("watch", "print events as they happen (Ctrl-C stops)");
  watchv->add_option("NAME", name, "only this mesh's events")->check(name_validator());
  auto* stats = app.add_subcommand("stats", "memory, uptime and per-mesh counters");
  auto* metrics = app.add_subcommand(
      "metrics", "the daemon's counters in Prometheus' text format (what metrics_listen serves)");
  auto* health = app.add_subcommand(
      "health",
      "exit 0 when meshdockd is SERVING, 3 when not (or nothing answers), 6 token refused");
  auto* shutdown =
      app.add_subcommand("shutdown", "stop meshdockd (consumers see the shutdown flag)");

  std::string revoke;
  auto* leases = app.add_subcommand("leases", "the frames consumers hold; --revoke drops a pid's");
  auto* lease_name =
      leases->add_option("NAME", name, "only this mesh's leases")->check(name_validator());
  leases->add_option("--revoke", revoke, "drop every lease of process PID (a stuck consumer)")
      ->type_name("PID")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::size_t used = 0;
            try {
              (void)std::stoi(v, &used);
            } catch (const std::exception&) {
              used = 0;
            }
            return used && used == v.size() ? "" : "'" + v + "' is not a pid";
          },
          "PID"))
      ->excludes(lease_name);

  // The SDKs' default: $MESHDOCK_PREFIX when set and not empty, else meshdock.
  const char* env_prefix = std::getenv("MESHDOCK_PREFIX");
  std::string prefix = env_prefix && *env_prefix ? std::string(env_prefix)
                                                 : std::string(meshdock::shm::kDefaultPrefix);
  auto* insp = app.add_subcommand("inspect", "read a mesh's segments directly (no daemon needed)");
  insp->add_option("NAME", name, "the mesh")->required()->check(name_validator());
  insp->add_option("-p,--prefix", prefix,
                   "the daemon's shared-memory prefix (default $MESHDOCK_PREFIX, else meshdock.)");

  std::string shell;
  auto* completion = app.add_subcommand("completion", "print a shell completion script");
  completion->add_option("SHELL", shell, "bash")->check(CLI::IsMember({"bash"}))->required();

  if (argc < 2) {  // no verb: the list of them, as an error
    std::fputs(app.help().c_str(), stderr);
    return meshdockctl::kUsage;
  }
  if (const auto bad = unknown_verb(argc, argv, app)) {
    std::fprintf(stderr, "meshdockctl: %s\nRun with --help for the list of commands.\n",
                 bad->c_str());
    return meshdockctl::kUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 names the option or argument ("--timeout: Value abc not in range ..."); say whose.
    std::string where = "meshdockctl";
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::string what = e.what();
    // CLI11's "--revoke: 1 required PID:PID missing" for a --revoke with no value.
    if (what.rfind("--revoke:", 0) == 0 && what.find("missing") != std::string::npos)
      what = "--revoke needs a PID (meshdockctl leases --revoke PID)";
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for more.\n", where.c_str(), what.c_str(),
                 where.c_str());
    return meshdockctl::kUsage;
  }
  g_verbose = o.verbose;

  if (completion->parsed()) {
    std::fputs(completion_script(app).c_str(), stdout);
    return 0;
  }
  if (insp->parsed()) return inspect(o, name, prefix);
  for (const CLI::App* sub : app.get_subcommands()) o.verb = sub->get_name();
  if (const auto bad = meshdockctl::address_problem(o.addr, "--addr")) {
    std::fprintf(stderr, "meshdockctl: %s\n", bad->c_str());
    return meshdockctl::kUsage;
  }

  try {
    Client c(o);
    grpc::ClientContext ctx;
    c.prepare(ctx);
    if (load->parsed()) {
      v1::LoadRequest r;
      r.set_path(absolute(path));
      c.path_note(r.path(), relative_note(path));
      r.set_name(name.empty() ? default_name(path) : name);
      if (name.empty()) {
        try {
          meshdock::shm::validate_name(r.name());
        } catch (const std::exception& e) {
          std::fprintf(stderr,
                       "meshdockctl load: no --name, and the file name does not make one: %s; "
                       "give --name NAME\n",
                       e.what());
          return meshdockctl::kUsage;
        }
      }
      r.set_replace(replace);
      auto* op = r.mutable_options();
      op->set_float32(float32);
      op->set_int32(int32);
      op->set_zero_copy_only(zero_copy_only);
      op->set_device(device);
      op->set_format(format);
      op->set_watch(watch);
      op->set_num_slots(num_slots);
      auto reader = c.stub().Load(&ctx, r);
      return stream_load(c, *reader);
    }
    if (reload->parsed()) {
      v1::NameRequest r;
      r.set_name(name);
      auto reader = c.stub().Reload(&ctx, r);
      return stream_load(c, *reader);
    }
    if (unload->parsed()) {
      v1::NameRequest r;
      r.set_name(name);
      v1::UnloadReply rep;
      return c.print(
          c.stub().Unload(&ctx, r, &rep), rep,
          +[](const v1::UnloadReply& x) { std::printf("unloaded %s\n", x.name().c_str()); });
    }
    if (ls->parsed()) {
      v1::ListReply rep;
      return c.print(
          c.stub().List(&ctx, v1::ListRequest(), &rep), rep, +[](const v1::ListReply& x) {
            if (x.slots().empty()) std::printf("no meshes loaded\n");
            for (const auto& s : x.slots()) print_slot(s);
          });
    }
    if (describe->parsed()) {
      v1::NameRequest r;
      r.set_name(name);
      v1::DescribeReply rep;
      return c.print(
          c.stub().Describe(&ctx, r, &rep), rep, +[](const v1::DescribeReply& x) {
            print_slot(x.slot());
            for (const auto& arr : x.arrays()) {
              std::string shape;
              for (auto d : arr.shape()) {
                if (!shape.empty()) shape += 'x';
                shape += std::to_string(d);
              }
              const auto dt = meshdockctl::dtype_name(arr.dtype().code(), arr.dtype().bits(),
                                                      arr.dtype().lanes());
              std::printf("    %-32s %-11s %-8s %-14s @%llu (%llu bytes)\n", arr.name().c_str(),
                          arr.role().c_str(), dt.c_str(), shape.c_str(),
                          static_cast<unsigned long long>(arr.offset()),
                          static_cast<unsigned long long>(arr.nbytes()));
            }
          });
    }
    if (exp->parsed()) {
      v1::ExportRequest r;
      r.set_name(name);
      r.set_path(absolute(out_path));
      c.path_note(r.path(), relative_note(out_path));
      r.set_format(format);
      r.set_overwrite(force);  // without it an existing PATH is ALREADY_EXISTS (exit 8)
      v1::ExportReply rep;
      return c.print(
          c.stub().Export(&ctx, r, &rep), rep, +[](const v1::ExportReply& x) {
            std::printf("wrote %s (%llu bytes)\n", x.path().c_str(),
                        static_cast<unsigned long long>(x.bytes_written()));
            for (const auto& n : x.notes()) std::printf("  note: %s\n", n.c_str());
          });
    }
    if (publish->parsed())
      return publish_npy(c, name, field, npy_path, block, device, num_slots, via);
    if (metrics->parsed()) {
      v1::MetricsReply rep;
      return c.print(
          c.stub().Metrics(&ctx, v1::MetricsRequest(), &rep), rep,
          +[](const v1::MetricsReply& x) { std::fputs(x.text().c_str(), stdout); });
    }
    if (stats->parsed()) {
      v1::StatsReply rep;
      return c.print(
          c.stub().Stats(&ctx, v1::StatsRequest(), &rep), rep, +[](const v1::StatsReply& x) {
            // device_memory_budget bounds every slot buffer, host ones included.
            std::printf("backend %s, up %.1f s, slot memory: host %s, device %s",
                        x.backend().c_str(), x.uptime_seconds(),
                        size_text(x.host_memory_used()).c_str(),
                        size_text(x.device_memory_used()).c_str());
            if (x.device_memory_budget())
              std::printf(", budget %s (device_memory_budget, host and device together)",
                          size_text(x.device_memory_budget()).c_str());
            std::printf("\n");
            for (const auto& s : x.slots())
              std::printf("  %-20s %10s  frames %llu  leases %u  load %.3f s\n", s.name().c_str(),
                          size_text(s.bytes()).c_str(), static_cast<unsigned long long>(s.frames()),
                          s.leases(), s.last_load_seconds());
          });
    }
    if (watchv->parsed()) {
      v1::WatchRequest r;
      r.set_name(name);
      auto reader = c.stub().Watch(&ctx, r);
      // Watching a name not loaded is allowed (it waits for the name's load: LOADED or
      // LOAD_FAILED), but other verbs exit 4 for it: say so, once, so a mistyped name is seen.
      if (!name.empty()) {
        grpc::ClientContext dctx;
        c.prepare(dctx);  // the token; the hint waits 5 s at most, whatever --timeout says
        dctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::NameRequest dr;
        dr.set_name(name);
        v1::DescribeReply drep;
        if (c.stub().Describe(&dctx, dr, &drep).error_code() == grpc::StatusCode::NOT_FOUND)
          std::fprintf(stderr, "meshdockctl: watch: no mesh named '%s' is loaded; waiting for it\n",
                       name.c_str());
      }
      // The event's timestamp is the daemon's CLOCK_MONOTONIC: on this host (unix: address) it
      // maps to the wall clock exactly; over TCP the clocks differ, so the receive time is used.
      const bool same_host = !meshdockctl::unix_socket_path(o.addr).empty();
      v1::Event e;
      while (reader->Read(&e)) {
        const double wall =
            same_host
                ? meshdockctl::wall_of_monotonic(e.timestamp())
                : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                      .count();
        if (e.dropped() && !o.json)  // JSON Lines carry it as "dropped"
          std::fprintf(stderr,
                       "meshdockctl: watch: %llu events lost before the next one: this watch "
                       "read more slowly than they came (meshdockd keeps 1024 per watcher)\n",
                       static_cast<unsigned long long>(e.dropped()));
        if (o.json)
          std::printf("%s\n", meshdockctl::to_json(e, wall).dump().c_str());  // JSON Lines
        else {
          // A frame only where the event has one (LOADED, RELOADED, PUBLISHED); no name for
          // SHUTDOWN, which names no mesh.
          std::string line = meshdockctl::rfc3339(wall);
          char head[64];
          std::snprintf(head, sizeof head, " %.3f %-11s", e.timestamp(),
                        v1::Event::Kind_Name(e.kind()).c_str());
          line += head;
          if (!e.name().empty()) line += " " + e.name();
          const bool framed = e.kind() == v1::Event::LOADED || e.kind() == v1::Event::RELOADED ||
                              e.kind() == v1::Event::PUBLISHED;
          if (framed) line += " frame " + std::to_string(e.frame());
          if (!e.message().empty()) line += " " + e.message();
          std::printf("%s\n", line.c_str());
        }
        std::fflush(stdout);
      }
      const auto s = reader->Finish();
      if (!s.ok()) return c.fail(s);
      // The daemon ended the stream (it shut down: the SHUTDOWN event above). Not 0: a script
      // running `until meshdockctl watch; ...` or a supervisor must see the events stopped.
      std::fprintf(stderr, "meshdockctl: watch: meshdockd at %s shut down; no more events\n",
                   o.addr.c_str());
      return meshdockctl::kUnavailable;
    }
    if (health->parsed()) {
      auto stub = grpc::health::v1::Health::NewStub(c.channel());
      grpc::health::v1::HealthCheckResponse rep;
      const auto s = stub->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &rep);
      if (!s.ok()) return c.fail(s);
      if (o.json) {
        auto j = meshdockctl::to_json(rep);
        j["addr"] = o.addr;
        print_json(j);
      } else {
        std::printf(
            "%s %s\n", o.addr.c_str(),
            grpc::health::v1::HealthCheckResponse::ServingStatus_Name(rep.status()).c_str());
      }
      return rep.status() == grpc::health::v1::HealthCheckResponse::SERVING
                 ? 0
                 : meshdockctl::kUnavailable;
    }
    if (leases->parsed() && !revoke.empty()) {
      v1::RevokeLeasesRequest r;
      r.set_pid(std::stoi(revoke));  // checked by the option's validator
      v1::RevokeLeasesReply rep;
      const auto s = c.stub().RevokeLeases(&ctx, r, &rep);
      if (!s.ok()) return c.fail(s);
      if (o.json) {
        auto j = meshdockctl::to_json(rep);
        j["pid"] = r.pid();
        print_json(j);
      } else {
        std::printf("revoked %u lease%s\n", rep.revoked(), rep.revoked() == 1 ? "" : "s");
        // 0 is not an error (the leases may have gone by themselves), but say why it is 0.
        if (!rep.revoked())
          std::printf("pid %d holds no lease%s\n", r.pid(),
                      r.pid() > 0 && kill(r.pid(), 0) != 0 && errno == ESRCH
                          ? " (no process has that pid here)"
                          : "");
      }
      return 0;
    }
    if (leases->parsed()) {
      v1::LeasesRequest r;
      r.set_name(name);
      v1::LeasesReply rep;
      return c.print(
          c.stub().Leases(&ctx, r, &rep), rep, +[](const v1::LeasesReply& x) {
            if (x.leases().empty()) std::printf("no leases held\n");
            for (const auto& l : x.leases())
              std::printf("%-20s slot %u  pid %d  uid %u  frame %llu%s  age %.1f s\n",
                          l.name().c_str(), l.slot(), l.pid(), l.uid(),
                          static_cast<unsigned long long>(l.frame()),
                          l.claiming() ? " (claiming)" : "", l.age_seconds());
          });
    }
    if (shutdown->parsed()) {
      v1::ShutdownReply rep;
      const auto s = c.stub().Shutdown(&ctx, v1::ShutdownRequest(), &rep);
      if (!s.ok()) return c.fail(s);
      if (o.json)
        print_json(Json{{"stopping", true}});
      else
        std::printf("meshdockd is stopping\n");
      return 0;
    }
    return meshdockctl::kUsage;  // unreachable: require_subcommand(1)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshdockctl: %s\n", e.what());
    return meshdockctl::kOther;
  }
}
