// meshdockctl: the command line for meshdock.
//
// `inspect` reads a slot's segments directly (works without the daemon, for debugging
// consumers). The gRPC verbs (load, ls, describe, reload, unload, export, watch, stats, health)
// arrive with the daemon's control plane (issue 5) and until then exit with status 3.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "meshdock/inspect.hpp"

namespace {

int usage(std::FILE* out) {
  std::fprintf(out,
               "usage: meshdockctl [--json] inspect NAME [--prefix P]\n"
               "       meshdockctl --version\n"
               "exit status: 0 ok, 1 error from the slot or daemon, 2 usage, 3 not available\n");
  return out == stderr ? 2 : 0;
}

void print_human(const meshdock::SlotReport& r) {
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

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string prefix(meshdock::shm::kDefaultPrefix);
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--prefix") {
      if (++i >= argc) return usage(stderr);
      prefix = argv[i];
    } else if (a == "--version") {
      std::printf("meshdockctl 0.1.0\n");
      return 0;
    } else if (a == "--help" || a == "-h") {
      return usage(stdout);
    } else {
      args.push_back(a);
    }
  }
  if (args.empty()) return usage(stderr);
  const std::string& verb = args[0];
  if (verb == "inspect") {
    if (args.size() != 2) return usage(stderr);
    try {
      const auto report = meshdock::inspect_slot(args[1], prefix);
      if (json) {
        std::printf("%s\n", meshdock::to_json(report).dump(2).c_str());
      } else {
        print_human(report);
      }
      return 0;
    } catch (const meshdock::SdkError& e) {
      std::fprintf(stderr, "meshdockctl: %s\n", e.what());
      return 1;
    }
  }
  static const char* kDaemonVerbs[] = {"load",   "ls",    "describe", "reload", "unload",
                                       "export", "watch", "stats",    "health"};
  for (const char* v : kDaemonVerbs) {
    if (verb == v) {
      std::fprintf(stderr,
                   "meshdockctl: '%s' talks to meshdockd's gRPC service, which is not "
                   "built yet (issue 5)\n",
                   v);
      return 3;
    }
  }
  std::fprintf(stderr, "meshdockctl: unknown command '%s'\n", verb.c_str());
  return usage(stderr);
}
