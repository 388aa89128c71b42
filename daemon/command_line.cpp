#include "daemon/command_line.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <utility>

namespace meshdock::command_line {

namespace svc = meshdock::service;

int usage(std::FILE* out) {
  // Each option overrides the configuration key named after it (operations.md lists them all).
  std::fprintf(out,
               "usage: meshdockd [--config FILE] [--listen unix:PATH|HOST:PORT] [--root DIR]...\n"
               "                 [--export-root DIR]... [--prefix P] [--slots N]\n"
               "                 [--device auto|cpu|cuda:N] [--log-level error|warn|info|debug]\n"
               "                 [--print-config]\n"
               "       meshdockd --version | --probe-device\n"
               "\n"
               "Options (each overrides the configuration key in brackets):\n"
               "  --config FILE        the configuration file (JSON)\n"
               "  --listen ADDR        the gRPC address, unix:PATH or HOST:PORT [listen]\n"
               "  --root DIR           a directory Load reads from; repeat for more [roots]\n"
               "  --export-root DIR    a directory Export writes under; repeat for more\n"
               "                       [export_roots]\n"
               "  --prefix P           the shared-memory objects' name prefix [prefix]\n"
               "  --slots N            ring slots per mesh [num_slots]\n"
               "  --device D           auto, cpu or cuda:N [device]\n"
               "  --log-level L        error, warn, info or debug [log_level]\n"
               "  --print-config       check the configuration as a start would (nothing is\n"
               "                       made) and print it (JSON); exit 2 when it is wrong\n"
               "  --probe-device       print the CUDA devices this build can use and exit\n"
               "  --version            print the version and exit\n"
               "  -h, --help           print this help and exit\n"
               "\n"
               "Without --config it reads $MESHDOCK_CONFIG (empty: none), else\n"
               "  %s\n"
               "when it exists, else runs on built-in defaults. Runs in the foreground until\n"
               "SIGTERM / SIGINT; SIGHUP rereads the configuration file.\n",
               svc::kDefaultConfigPath);
  return out == stderr ? 2 : 0;
}

svc::ConfigSource config_source(const Args& a) {
  return svc::resolve_config_source(a.config_file, std::getenv("MESHDOCK_CONFIG"),
                                    svc::kDefaultConfigPath);
}

svc::KeyName key_name(const Args& a, const svc::ConfigSource& source) {
  return [&a, path = source.path](const std::string& key) -> std::string {
    struct Flag {
      const char* key;
      const char* flag;
      bool given;
    };
    const Flag flags[] = {{"listen", "--listen", a.listen.has_value()},
                          {"roots", "--root", !a.roots.empty()},
                          {"export_roots", "--export-root", !a.export_roots.empty()},
                          {"prefix", "--prefix", a.prefix.has_value()},
                          {"num_slots", "--slots", a.slots.has_value()},
                          {"device", "--device", a.device.has_value()},
                          {"log_level", "--log-level", a.log_level.has_value()}};
    for (const auto& f : flags)
      if (key == f.key && f.given) return f.flag;
    return path ? *path + ": " + key : key;
  };
}

svc::Config effective_config(const Args& a, const svc::ConfigSource& source) {
  svc::Config c = source.path ? svc::load_config(*source.path) : svc::Config{};
  if (a.listen) c.listen = *a.listen;
  if (!a.roots.empty()) c.roots = a.roots;
  if (!a.export_roots.empty()) c.export_roots = a.export_roots;
  if (a.prefix) c.prefix = *a.prefix;
  if (a.slots) c.num_slots = *a.slots;
  if (a.device) c.device = *a.device;
  if (a.log_level) c.log_level = *a.log_level;
  if (const char* fp = std::getenv("MESHDOCK_FAILPOINT")) c.failpoint = svc::parse_failpoint(fp);
  svc::check_config(c, key_name(a, source));
  return c;
}

int parse_args(int argc, char** argv, Args& a, Action& action) {
  CLI::App app{"meshdockd"};
  app.set_help_flag();  // usage() is the help: the same text man page and --help print
  app.allow_extras();   // kept, to be named below in this file's words
  const auto last = CLI::MultiOptionPolicy::TakeLast;
  app.add_option("--config", a.config_file)->multi_option_policy(last);
  app.add_option("--listen", a.listen)->multi_option_policy(last);
  app.add_option("--root", a.roots)->type_size(1)->allow_extra_args(false);
  app.add_option("--export-root", a.export_roots)->type_size(1)->allow_extra_args(false);
  app.add_option("--prefix", a.prefix)->multi_option_policy(last);
  app.add_option("--device", a.device)->multi_option_policy(last);
  app.add_option("--log-level", a.log_level)->multi_option_policy(last);
  app.add_option("--slots", a.slots)
      ->multi_option_policy(last)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::uint32_t n = 0;  // all of it a number ("3x" and "-1" were 3 and 4294967295)
            const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
            return v.empty() || r.ec != std::errc{} || r.ptr != v.data() + v.size()
                       ? "'" + v + "' is not a number"
                       : std::string();
          },
          "N"));
  bool help = false, version = false, probe_device = false;
  for (auto [name, flag] :
       {std::pair{"-h,--help", &help}, std::pair{"--version", &version},
        std::pair{"--probe-device", &probe_device}, std::pair{"--print-config", &a.print_config}})
    app.add_flag(name, *flag)->disable_flag_override();
  auto bad_usage = [](const std::string& what) {
    std::fprintf(stderr, "meshdockd: %s (meshdockd --help lists the options)\n", what.c_str());
    return 2;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's words, where they are not a person's: "--root: 1 required TEXT missing" and
    // "print-config was given a disallowed flag override".
    std::string what = e.what();
    if (const auto colon = what.find(": "); what.ends_with(" missing") && colon != what.npos)
      what = what.substr(0, colon) + " needs a value";
    else if (const auto at = what.find(" was given a disallowed flag override"); at != what.npos)
      what = "--" + what.substr(0, at) + " takes no value";
    else if (what.starts_with("--slots: "))
      what = "--slots " + what.substr(9);
    return bad_usage(what);
  }
  if (!app.remaining().empty()) return bad_usage("unknown argument '" + app.remaining()[0] + "'");
  action = help           ? Action::kHelp
           : version      ? Action::kVersion
           : probe_device ? Action::kProbe
                          : Action::kServe;
  return 0;
}

}  // namespace meshdock::command_line
