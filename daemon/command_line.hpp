// meshdockd's command line: its options (CLI11), its --help text, and the configuration they
// make with the file they name (each flag overrides the key of its name; docs/operations.md).
//
//   argv -> parse_args -> Args -> effective_config (file + flags, checked) -> svc::Config
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "daemon/service/config.hpp"

namespace meshdock::command_line {

// What the flags said; unset ones leave the file's value (or the default) in place.
struct Args {
  std::optional<std::string> config_file;
  std::optional<std::string> listen, prefix, device, log_level;
  std::vector<std::string> roots, export_roots;
  std::optional<std::uint32_t> slots;
  bool print_config = false;
};

enum class Action { kServe, kHelp, kVersion, kProbe };

// The command line ("--opt VALUE" or "--opt=VALUE", as meshdockctl takes them; a repeated
// single-valued option: the last one counts). 0 when it parsed, else the exit status of a usage
// error (2), said on stderr in one line: what is wrong and where the options are, not the whole
// help (which buried the one line that mattered). --help, --version and --probe-device act only
// once every argument has been read: a typo next to one is an error, not ignored; --help wins,
// then --version, then --probe-device.
int parse_args(int argc, char** argv, Args& a, Action& action);

// Prints the help to `out`; returns 0 (stdout) or 2 (stderr).
int usage(std::FILE* out);

// Where the configuration comes from: --config, else $MESHDOCK_CONFIG, else the default file
// when it exists.
service::ConfigSource config_source(const Args& a);

// What an error calls the value of `key`: the flag that set it ("--device"), else the file's
// key ("FILE: device"), else the key (a built-in default).
service::KeyName key_name(const Args& a, const service::ConfigSource& source);

// The file's configuration (or the defaults) with the flags over it and MESHDOCK_FAILPOINT
// read, checked (service::ConfigError naming the flag or FILE: key).
service::Config effective_config(const Args& a, const service::ConfigSource& source);

}  // namespace meshdock::command_line
