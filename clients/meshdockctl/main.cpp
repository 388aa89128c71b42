// meshdockctl: the command line for meshdock.
//
// gRPC verbs talk to meshdockd (--addr, default $MESHDOCK_ADDR or the system socket); `inspect`
// reads a slot's segments directly (works without the daemon, for debugging consumers).
// --json prints the reply as JSON for scripts. Exit status says how a call ended (usage()).
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "meshdock/inspect.hpp"
#include "meshdock/v1/meshdock.grpc.pb.h"

namespace {

namespace v1 = meshdock::v1;
constexpr const char* kDefaultAddr = "unix:/run/meshdock/meshdockd.sock";

int usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: meshdockctl [--addr ADDR] [--token T] [--json] [--timeout S] COMMAND ...\n"
      "  load PATH --name NAME [--float32] [--int32] [--zero-copy-only] [--device D]\n"
      "       [--format F] [--slots N] [--watch] [--replace]\n"
      "  ls | describe NAME | reload NAME | unload NAME | export NAME PATH [--format F] [--force]\n"
      "  watch [NAME] | stats | health | shutdown\n"
      "  leases [NAME] | leases --revoke PID    (what held frames pin; revoke a stuck consumer's)\n"
      "  inspect NAME [--prefix P]          (reads shared memory; no daemon needed)\n"
      "ADDR: unix:PATH or HOST:PORT (default $MESHDOCK_ADDR, else %s);\n"
      "T: the bearer token for TCP (default $MESHDOCK_TOKEN).\n"
      "exit status: 0 ok, 1 other error, 2 usage, 3 daemon unavailable, 4 not found,\n"
      "  5 invalid argument, 6 permission denied, 7 resource exhausted, 8 already exists,\n"
      "  9 failed precondition, 10 deadline exceeded\n",
      kDefaultAddr);
  return out == stderr ? 2 : 0;
}

int exit_code(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return 0;
    case grpc::StatusCode::UNAVAILABLE:
      return 3;
    case grpc::StatusCode::NOT_FOUND:
      return 4;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return 5;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return 6;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 7;
    case grpc::StatusCode::ALREADY_EXISTS:
      return 8;
    case grpc::StatusCode::FAILED_PRECONDITION:
      return 9;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 10;
    default:
      return 1;
  }
}

const char* code_name(grpc::StatusCode c) {
  static const std::map<grpc::StatusCode, const char*> kNames = {
      {grpc::StatusCode::CANCELLED, "CANCELLED"},
      {grpc::StatusCode::UNKNOWN, "UNKNOWN"},
      {grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {grpc::StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
      {grpc::StatusCode::NOT_FOUND, "NOT_FOUND"},
      {grpc::StatusCode::ALREADY_EXISTS, "ALREADY_EXISTS"},
      {grpc::StatusCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {grpc::StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {grpc::StatusCode::UNAVAILABLE, "UNAVAILABLE"},
      {grpc::StatusCode::INTERNAL, "INTERNAL"},
      {grpc::StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"}};
  auto it = kNames.find(c);
  return it == kNames.end() ? "ERROR" : it->second;
}

struct Options {
  std::string addr, token;
  bool json = false;
  double timeout = 0;  // 0: none (load of a big mesh may take long)
  std::string prefix{meshdock::shm::kDefaultPrefix};
  std::map<std::string, std::string> flags;  // --name X, --device D, ... and switches ("1")
  std::vector<std::string> args;             // verb and positionals
};

std::string to_json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
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
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE)
      std::fprintf(stderr, "meshdockctl: meshdockd at %s is not answering: %s\n", o_.addr.c_str(),
                   s.error_message().c_str());
    else
      std::fprintf(stderr, "meshdockctl: %s: %s\n", code_name(s.error_code()),
                   s.error_message().c_str());
    return exit_code(s);
  }

  template <typename Reply>
  int print(const grpc::Status& s, const Reply& r, void (*human)(const Reply&)) const {
    if (!s.ok()) return fail(s);
    if (o_.json)
      std::printf("%s\n", to_json(r).c_str());
    else
      human(r);
    return 0;
  }

  v1::Meshdock::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  const Options& options() const { return o_; }

 private:
  const Options& o_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Meshdock::Stub> stub_;
};

void print_slot(const v1::SlotInfo& s) {
  std::string types;
  std::map<std::string, int> count;
  for (const auto& t : s.cell_types()) ++count[t];
  for (const auto& [t, n] : count)
    types += (types.empty() ? "" : ", ") + t + (n > 1 ? " x" + std::to_string(n) : "");
  std::printf("%-20s %s  %llu points, %llu cells (%s)\n", s.name().c_str(),
              s.device().device_type() == 2
                  ? ("cuda:" + std::to_string(s.device().device_id())).c_str()
                  : "cpu",
              static_cast<unsigned long long>(s.num_points()),
              static_cast<unsigned long long>(s.num_cells()), types.c_str());
  std::printf("  %s  frames %u  slots %u  %.1f KiB  loaded in %.3f s%s\n", s.path().c_str(),
              s.write_idx(), s.num_slots(), static_cast<double>(s.data_size()) / 1024.0,
              s.load_seconds(), s.watch() ? "  (watched)" : "");
  std::printf("  segments %s %s\n", s.control_segment().c_str(), s.catalog_segment().c_str());
  for (const auto& n : s.notes()) std::printf("  note: %s\n", n.c_str());
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
    std::printf("%s\n", to_json(last).c_str());
  else
    print_slot(last.slot());
  return 0;
}

std::string absolute(const std::string& p) {
  return std::filesystem::absolute(p).lexically_normal();
}

int run(Client& c, const Options& o) {
  const auto& a = o.args;
  const std::string& verb = a[0];
  auto flag = [&](const char* k) { return o.flags.count(k) > 0; };
  auto value = [&](const char* k) {
    auto it = o.flags.find(k);
    return it == o.flags.end() ? std::string() : it->second;
  };
  grpc::ClientContext ctx;
  c.prepare(ctx);
  if (verb == "load" && a.size() == 2) {
    v1::LoadRequest r;
    r.set_path(absolute(a[1]));
    r.set_name(value("--name"));
    if (r.name().empty()) {
      std::fprintf(stderr, "meshdockctl: load needs --name NAME\n");
      return 2;
    }
    r.set_replace(flag("--replace"));
    auto* op = r.mutable_options();
    op->set_float32(flag("--float32"));
    op->set_int32(flag("--int32"));
    op->set_zero_copy_only(flag("--zero-copy-only"));
    op->set_device(value("--device"));
    op->set_format(value("--format"));
    op->set_watch(flag("--watch"));
    if (flag("--slots"))
      op->set_num_slots(static_cast<std::uint32_t>(std::stoul(value("--slots"))));
    auto reader = c.stub().Load(&ctx, r);
    return stream_load(c, *reader);
  }
  if (verb == "reload" && a.size() == 2) {
    v1::NameRequest r;
    r.set_name(a[1]);
    auto reader = c.stub().Reload(&ctx, r);
    return stream_load(c, *reader);
  }
  if (verb == "unload" && a.size() == 2) {
    v1::NameRequest r;
    r.set_name(a[1]);
    v1::UnloadReply rep;
    return c.print(
        c.stub().Unload(&ctx, r, &rep), rep,
        +[](const v1::UnloadReply& x) { std::printf("unloaded %s\n", x.name().c_str()); });
  }
  if (verb == "ls" && a.size() == 1) {
    v1::ListReply rep;
    return c.print(
        c.stub().List(&ctx, v1::ListRequest(), &rep), rep, +[](const v1::ListReply& x) {
          if (x.slots().empty()) std::printf("no meshes loaded\n");
          for (const auto& s : x.slots()) print_slot(s);
        });
  }
  if (verb == "describe" && a.size() == 2) {
    v1::NameRequest r;
    r.set_name(a[1]);
    v1::DescribeReply rep;
    return c.print(
        c.stub().Describe(&ctx, r, &rep), rep, +[](const v1::DescribeReply& x) {
          print_slot(x.slot());
          for (const auto& arr : x.arrays()) {
            std::string shape;
            for (auto d : arr.shape()) shape += (shape.empty() ? "" : "x") + std::to_string(d);
            std::printf("    %-32s %-11s %c%u %-14s @%llu (%llu bytes)\n", arr.name().c_str(),
                        arr.role().c_str(), "iufxb??"[std::min<unsigned>(arr.dtype().code(), 6)],
                        arr.dtype().bits(), shape.c_str(),
                        static_cast<unsigned long long>(arr.offset()),
                        static_cast<unsigned long long>(arr.nbytes()));
          }
        });
  }
  if (verb == "export" && a.size() == 3) {
    v1::ExportRequest r;
    r.set_name(a[1]);
    r.set_path(absolute(a[2]));
    r.set_format(value("--format"));
    r.set_overwrite(flag("--force"));  // without it an existing PATH is ALREADY_EXISTS (exit 8)
    v1::ExportReply rep;
    return c.print(
        c.stub().Export(&ctx, r, &rep), rep, +[](const v1::ExportReply& x) {
          std::printf("wrote %s (%llu bytes)\n", x.path().c_str(),
                      static_cast<unsigned long long>(x.bytes_written()));
        });
  }
  if (verb == "stats" && a.size() == 1) {
    v1::StatsReply rep;
    return c.print(
        c.stub().Stats(&ctx, v1::StatsRequest(), &rep), rep, +[](const v1::StatsReply& x) {
          std::printf("backend %s, up %.1f s, host slot memory %.1f MiB, device %.1f MiB",
                      x.backend().c_str(), x.uptime_seconds(),
                      static_cast<double>(x.host_memory_used()) / (1 << 20),
                      static_cast<double>(x.device_memory_used()) / (1 << 20));
          if (x.device_memory_budget())
            std::printf(" of %.1f MiB", static_cast<double>(x.device_memory_budget()) / (1 << 20));
          std::printf("\n");
          for (const auto& s : x.slots())
            std::printf("  %-20s %8.1f KiB  frames %llu  leases %u  load %.3f s\n",
                        s.name().c_str(), static_cast<double>(s.bytes()) / 1024.0,
                        static_cast<unsigned long long>(s.frames()), s.leases(),
                        s.last_load_seconds());
        });
  }
  if (verb == "watch" && a.size() <= 2) {
    v1::WatchRequest r;
    if (a.size() == 2) r.set_name(a[1]);
    auto reader = c.stub().Watch(&ctx, r);
    v1::Event e;
    while (reader->Read(&e)) {
      if (o.json)
        std::printf("%s\n", to_json(e).c_str());
      else
        std::printf("%.3f %-11s %s frame %u %s\n", e.timestamp(),
                    v1::Event::Kind_Name(e.kind()).c_str(), e.name().c_str(), e.frame(),
                    e.message().c_str());
      std::fflush(stdout);
    }
    const auto s = reader->Finish();
    return s.ok() ? 0 : c.fail(s);
  }
  if (verb == "health" && a.size() == 1) {
    auto health = grpc::health::v1::Health::NewStub(c.channel());
    grpc::health::v1::HealthCheckResponse rep;
    const auto s = health->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &rep);
    if (!s.ok()) return c.fail(s);
    const auto name = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(rep.status());
    if (o.json)
      std::printf("%s\n", to_json(rep).c_str());
    else
      std::printf("%s %s\n", o.addr.c_str(), name.c_str());
    return rep.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 3;
  }
  if (verb == "leases" && a.size() <= 2 && o.flags.count("--revoke")) {
    if (a.size() != 1) return usage(stderr);
    v1::RevokeLeasesRequest r;
    try {
      std::size_t used = 0;
      const auto& v = o.flags.at("--revoke");
      r.set_pid(std::stoi(v, &used));
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::exception&) {
      std::fprintf(stderr, "meshdockctl: --revoke '%s' is not a pid\n",
                   o.flags.at("--revoke").c_str());
      return 2;
    }
    v1::RevokeLeasesReply rep;
    return c.print(
        c.stub().RevokeLeases(&ctx, r, &rep), rep,
        +[](const v1::RevokeLeasesReply& x) { std::printf("revoked %u leases\n", x.revoked()); });
  }
  if (verb == "leases" && a.size() <= 2) {
    v1::LeasesRequest r;
    if (a.size() == 2) r.set_name(a[1]);
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
  if (verb == "shutdown" && a.size() == 1) {
    v1::ShutdownReply rep;
    return c.print(
        c.stub().Shutdown(&ctx, v1::ShutdownRequest(), &rep), rep,
        +[](const v1::ShutdownReply&) { std::printf("meshdockd is stopping\n"); });
  }
  return usage(stderr);
}

// ---- inspect (no daemon) -----------------------------------------------------------------------
void print_report(const meshdock::SlotReport& r) {
  std::printf("control  /%s  (%u slots, %zu bytes)\n", r.control_object.c_str(), r.num_slots,
              meshdock::shm::control_block_size(r.num_slots));
  std::printf("  version %llu  write_idx %u  shutdown %s  timestamp %.6f\n",
              static_cast<unsigned long long>(r.version), r.write_idx, r.shutdown ? "yes" : "no",
              r.timestamp);
  const auto& m = r.metadata;
  std::printf("  cuda-link view: %ux%u x%u comps, kind %u, %u bits, flags %u, %u bytes\n", m.width,
              m.height, m.num_comps, m.format_kind, m.bits, m.flags, m.data_size);
  if (!r.has_catalog) {
    std::printf("catalog  none (not a meshdock producer)\n");
    return;
  }
  std::printf("catalog  /%s  daemon pid %d (%s), heartbeat %.1f ms ago, device %d:%d\n",
              r.catalog_object.c_str(), r.daemon_pid, r.daemon_alive ? "alive" : "gone",
              static_cast<double>(r.heartbeat_age_ns) / 1e6, r.device_type, r.device_id);
  for (const auto& p : r.pages) {
    std::printf("  slot %u: frame %llu, %llu bytes, handle %s, %zu leases, %zu arrays\n", p.index,
                static_cast<unsigned long long>(p.frame),
                static_cast<unsigned long long>(p.data_size),
                p.handle.empty() ? "-" : p.handle.c_str(), p.leases.size(),
                p.manifest ? p.manifest->arrays.size() : 0);
    if (p.manifest) {
      for (const auto& a : p.manifest->arrays) {
        std::string shape;
        for (auto d : a.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
        std::printf("    %-28s %-11s %s @%llu\n", a.name.c_str(), meshdock::shm::role_name(a.role),
                    shape.c_str(), static_cast<unsigned long long>(a.offset));
      }
    }
  }
}

int inspect(const Options& o) {
  if (o.args.size() != 2) return usage(stderr);
  try {
    const auto report = meshdock::inspect_slot(o.args[1], o.prefix);
    if (o.json)
      std::printf("%s\n", meshdock::to_json(report).dump(2).c_str());
    else
      print_report(report);
    return 0;
  } catch (const meshdock::SdkError& e) {
    std::fprintf(stderr, "meshdockctl: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* env_addr = std::getenv("MESHDOCK_ADDR");
  const char* env_token = std::getenv("MESHDOCK_TOKEN");
  o.addr = env_addr && *env_addr ? env_addr : kDefaultAddr;
  o.token = env_token ? env_token : "";
  static const char* kValued[] = {"--name", "--device", "--format", "--slots", "--revoke"};
  static const char* kSwitches[] = {"--float32", "--int32",   "--zero-copy-only",
                                    "--watch",   "--replace", "--force"};
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (s == "--json") {
      o.json = true;
    } else if (s == "--addr" || s == "--token" || s == "--prefix" || s == "--timeout") {
      const char* v = next();
      if (!v) return usage(stderr);
      if (s == "--addr") o.addr = v;
      if (s == "--token") o.token = v;
      if (s == "--prefix") o.prefix = v;
      if (s == "--timeout") o.timeout = std::atof(v);
    } else if (s == "--version") {
      std::printf("meshdockctl 0.1.0\n");
      return 0;
    } else if (s == "--help" || s == "-h") {
      return usage(stdout);
    } else if (std::find_if(std::begin(kValued), std::end(kValued),
                            [&](const char* k) { return s == k; }) != std::end(kValued)) {
      const char* v = next();
      if (!v) return usage(stderr);
      o.flags[s] = v;
    } else if (std::find_if(std::begin(kSwitches), std::end(kSwitches),
                            [&](const char* k) { return s == k; }) != std::end(kSwitches)) {
      o.flags[s] = "1";
    } else if (s.starts_with("--")) {
      std::fprintf(stderr, "meshdockctl: unknown option '%s'\n", s.c_str());
      return usage(stderr);
    } else {
      o.args.push_back(s);
    }
  }
  if (o.args.empty()) return usage(stderr);
  if (o.args[0] == "inspect") return inspect(o);
  try {
    Client c(o);
    return run(c, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshdockctl: %s\n", e.what());
    return 1;
  }
}
