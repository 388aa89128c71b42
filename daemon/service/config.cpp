#include "daemon/service/config.hpp"

#include <sys/stat.h>
#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "meshdock/shm.hpp"

// The build sets it from the install prefix (CMakeLists.txt, MESHDOCK_DEFAULT_CONFIG).
#ifndef MESHDOCK_DEFAULT_CONFIG
#define MESHDOCK_DEFAULT_CONFIG "/etc/meshdock/meshdockd.json"
#endif

namespace meshdock::service {

const char* const kDefaultConfigPath = MESHDOCK_DEFAULT_CONFIG;

ConfigSource resolve_config_source(const std::optional<std::string>& flag, const char* env,
                                   const std::string& default_path) {
  if (flag) return {*flag, "--config", default_path};
  if (env)
    return {*env ? std::optional<std::string>(env) : std::nullopt, "$MESHDOCK_CONFIG",
            default_path};
  struct stat st {};
  if (::stat(default_path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
    return {std::nullopt, "the default path", default_path};
  // There (or unreachable for another reason, EACCES say): load_config says what is wrong.
  return {default_path, "the default path", default_path};
}

std::string ConfigSource::describe() const {
  if (path) return "configuration: from " + *path + " (" + origin + ")";
  const std::string why = origin == "$MESHDOCK_CONFIG"
                              ? "$MESHDOCK_CONFIG is set and empty"
                              : "no --config, $MESHDOCK_CONFIG unset, nothing at " + default_path;
  return "configuration: none (" + why + "): built-in defaults and flags";
}

mode_t parse_mode(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used, 8);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v > 0777)
    throw ConfigError(what + ": '" + s + "' is not an octal permission like \"0660\"");
  return static_cast<mode_t>(v);
}

namespace {

// A value of the file, checked (`what` names it in the error): a string; a whole number in
// [min, max].
std::string string_of(const nlohmann::json& v, const std::string& what) {
  if (!v.is_string()) throw ConfigError(what + " must be a string");
  return v.get<std::string>();
}
std::uint64_t whole_number(const nlohmann::json& v, const std::string& what, std::uint64_t max,
                           std::uint64_t min = 0) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max || v.get<std::uint64_t>() < min)
    throw ConfigError(what + " must be a whole number from " + std::to_string(min) + " to " +
                      std::to_string(max));
  return v.get<std::uint64_t>();
}

// "load": a list of {"path", "name" (both required), "device", "num_slots", "watch"}; an error
// names the entry ("key 'load', entry 1") and its key.
std::vector<StartupLoad> parse_loads(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw ConfigError(what + " must be a list of {\"path\", \"name\", ...}");
  std::vector<StartupLoad> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto at = what + ", entry " + std::to_string(i);
    const auto& e = v[i];
    if (!e.is_object()) throw ConfigError(at + " must be an object with \"path\" and \"name\"");
    StartupLoad l;
    for (const auto& [k, x] : e.items()) {
      const auto field = at + ": '" + k + "'";
      if (k == "path") {
        l.path = string_of(x, field);
      } else if (k == "name") {
        l.name = string_of(x, field);
      } else if (k == "device") {
        l.device = string_of(x, field);
      } else if (k == "num_slots") {
        l.num_slots =
            static_cast<std::uint32_t>(whole_number(x, field, shm::kMaxSlots, shm::kMinSlots));
      } else if (k == "watch") {
        if (!x.is_boolean()) throw ConfigError(field + " must be true or false");
        l.watch = x.get<bool>();
      } else {
        throw ConfigError(at + ": unknown key '" + k +
                          "' (known: path, name, device, num_slots, watch)");
      }
    }
    if (l.path.empty() || l.name.empty())
      throw ConfigError(at + " needs a \"path\" and a \"name\"");
    // Checked here, not at the load: a start that cannot serve an entry says so and stops
    // (exit 2) rather than coming up without it and a line in the log.
    if (l.path.front() != '/')
      throw ConfigError(at + ": path '" + l.path + "' is not absolute: give it from / (under " +
                        "one of `roots`)");
    try {
      shm::validate_name(l.name, "name");
      if (const auto clash = shm::slot_name_collision(l.name); !clash.empty())
        throw shm::ProtocolError(clash);
    } catch (const shm::ProtocolError& err) {
      throw ConfigError(at + ": " + err.what());
    }
    for (const auto& o : out)
      if (o.name == l.name) throw ConfigError(at + ": the name '" + l.name + "' is loaded twice");
    out.push_back(std::move(l));
  }
  return out;
}

nlohmann::json loads_json(const std::vector<StartupLoad>& loads) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : loads) {  // what was given, so that the output parses again
    nlohmann::json e = {{"path", l.path}, {"name", l.name}, {"watch", l.watch}};
    if (!l.device.empty()) e["device"] = l.device;
    if (l.num_slots) e["num_slots"] = l.num_slots;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

Config parse_config(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": the configuration must be a JSON object");
  Config c;
  for (const auto& [key, v] : j.items()) {
    const auto what = where + ": key '" + key + "'";
    auto str = [&]() { return string_of(v, what); };
    auto uint = [&](std::uint64_t max, std::uint64_t min = 0) {
      return whole_number(v, what, max, min);
    };
    if (key == "listen") {
      c.listen = str();
    } else if (key == "socket_mode") {
      c.socket_mode = parse_mode(str(), what);
    } else if (key == "roots") {
      if (!v.is_array()) throw ConfigError(what + " must be a list of directories");
      c.roots.clear();
      for (const auto& r : v) {
        if (!r.is_string()) throw ConfigError(what + " must hold strings");
        c.roots.push_back(r.get<std::string>());
      }
    } else if (key == "export_roots") {
      if (v.is_null()) {
        c.export_roots.reset();
        continue;
      }
      if (!v.is_array()) throw ConfigError(what + " must be a list of directories (or null)");
      c.export_roots.emplace();
      for (const auto& r : v) {
        if (!r.is_string()) throw ConfigError(what + " must hold strings");
        c.export_roots->push_back(r.get<std::string>());
      }
    } else if (key == "max_file_size") {
      c.max_file_size = uint(UINT64_MAX);
    } else if (key == "max_meshes") {
      c.max_meshes = static_cast<std::uint32_t>(uint(1u << 20));
    } else if (key == "device_memory_budget") {
      c.device_memory_budget = uint(UINT64_MAX);
    } else if (key == "num_slots") {
      c.num_slots = static_cast<std::uint32_t>(uint(shm::kMaxSlots, shm::kMinSlots));
    } else if (key == "prefix") {
      c.prefix = str();
    } else if (key == "shm_mode") {
      c.shm_mode = parse_mode(str(), what);
    } else if (key == "device") {
      c.device = str();
    } else if (key == "log_level") {
      c.log_level = str();
    } else if (key == "token_file") {
      c.token_file = str();
    } else if (key == "lease_wait_ms") {
      c.lease_wait_ms = static_cast<std::uint32_t>(uint(60000));
    } else if (key == "load") {
      c.load = parse_loads(v, what);
    } else if (key == "cuda_link_grace_ms") {
      c.cuda_link_grace_ms = static_cast<std::uint32_t>(uint(600000));
    } else if (key == "publish_copy") {
      c.publish_copy = str();
      if (c.publish_copy != "auto" && c.publish_copy != "changed" && c.publish_copy != "all")
        throw ConfigError(what + " must be \"auto\", \"changed\" or \"all\", not \"" +
                          c.publish_copy + "\"");
    } else if (key == "metrics_listen") {
      c.metrics_listen = str();
    } else if (key == "watch_interval_ms") {
      c.watch_interval_ms = static_cast<std::uint32_t>(uint(3600000));
    } else if (key == "max_message_size") {
      c.max_message_size = static_cast<std::uint32_t>(uint(64u << 20));
    } else if (key == "max_streams") {
      c.max_streams = static_cast<std::uint32_t>(uint(100000));
    } else if (key == "max_streams_per_peer") {
      c.max_streams_per_peer = static_cast<std::uint32_t>(uint(100000));
    } else if (key == "max_connections") {
      c.max_connections = static_cast<std::uint32_t>(uint(1000000));
    } else if (key == "max_connections_per_uid") {
      c.max_connections_per_uid = static_cast<std::uint32_t>(uint(1000000));
    } else if (key == "max_loads") {
      c.max_loads = static_cast<std::uint32_t>(uint(100000));
    } else if (key == "max_loads_per_peer") {
      c.max_loads_per_peer = static_cast<std::uint32_t>(uint(100000));
    } else if (key == "max_exports") {
      c.max_exports = static_cast<std::uint32_t>(uint(100000));
    } else if (key == "max_exports_per_peer") {
      c.max_exports_per_peer = static_cast<std::uint32_t>(uint(100000));
    } else if (key == "max_rpc_threads") {
      c.max_rpc_threads = static_cast<std::uint32_t>(uint(200000));
    } else if (key == "max_rpc_memory") {
      c.max_rpc_memory = uint(UINT64_MAX);
    } else if (key == "max_decoded_size") {
      c.max_decoded_size = uint(UINT64_MAX);
    } else {
      throw ConfigError(
          where + ": unknown key '" + key +
          "' (known: listen, socket_mode, roots, export_roots, max_file_size, max_meshes, "
          "device_memory_budget, num_slots, prefix, shm_mode, device, log_level, "
          "token_file, lease_wait_ms, cuda_link_grace_ms, load, publish_copy, watch_interval_ms, "
          "metrics_listen, "
          "max_message_size, "
          "max_streams, max_streams_per_peer, max_connections_per_uid, max_connections, "
          "max_loads, max_loads_per_peer, max_exports, max_exports_per_peer, max_rpc_threads, "
          "max_rpc_memory, max_decoded_size)");
    }
  }
  return c;
}

Config load_config(const std::string& path) {
  // Read whole with its reason when it cannot be (a directory read through an ifstream fails
  // with libstdc++'s "basic_filebuf::underflow error", past every ConfigError).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError(path + ": cannot open the configuration file (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode))
    throw ConfigError(path + ": cannot read the configuration file: it is a directory");
  std::ifstream f(path);
  if (!f)
    throw ConfigError(path + ": cannot open the configuration file (" + std::strerror(errno) + ")");
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    throw ConfigError(path + ": cannot read the configuration file (" + e.what() + ")");
  }
  if (f.bad()) throw ConfigError(path + ": cannot read the configuration file");
  nlohmann::json j;
  // nlohmann keeps the last of two equal keys without a word; a configuration that says
  // "roots" twice is a mistake to name, not a choice to make for the operator.
  std::vector<std::pair<std::string, std::vector<std::string>>> objects;  // (key, keys seen)
  std::string last_key;
  const nlohmann::json::parser_callback_t no_duplicates =
      [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        if (event == E::object_start) {
          objects.emplace_back(objects.empty() ? "" : last_key, std::vector<std::string>{});
        } else if (event == E::object_end && !objects.empty()) {
          objects.pop_back();
        } else if (event == E::key && !objects.empty()) {
          last_key = parsed.get<std::string>();
          auto& seen = objects.back().second;
          if (std::find(seen.begin(), seen.end(), last_key) != seen.end()) {
            const auto& in = objects.back().first;
            throw ConfigError(path + ": key '" + last_key + "' is given twice" +
                              (in.empty() ? "" : " in '" + in + "'") +
                              " (JSON would keep the last without a word); give it once");
          }
          seen.push_back(last_key);
        }
        return true;
      };
  try {
    j = nlohmann::json::parse(text, no_duplicates, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(path + ": not valid JSON (" + e.what() + ")");
  }
  return parse_config(j, path);
}

Failpoint parse_failpoint(const std::string& spec) {
  Failpoint f;
  if (spec.empty()) return f;
  const auto colon = spec.find(':');
  static const char* const kPhases[] = {"open", "read",      "build_payload",
                                        "copy", "mid_write", "upload_delay"};
  f.phase = spec.substr(0, colon);
  const bool known =
      std::find(std::begin(kPhases), std::end(kPhases), f.phase) != std::end(kPhases);
  unsigned ms = 0;
  const char* first = spec.data() + (colon == std::string::npos ? spec.size() : colon + 1);
  const char* last = spec.data() + spec.size();
  auto r = std::from_chars(first, last, ms);
  if (r.ec == std::errc{} && r.ptr != last && *r.ptr == ':')
    r = std::from_chars(r.ptr + 1, last, f.after);
  if (!known || colon == std::string::npos || r.ec != std::errc{} || r.ptr != last || ms > 600000)
    throw ConfigError("MESHDOCK_FAILPOINT '" + spec +
                      "' is not PHASE:MS[:AFTER] (PHASE open, read, build_payload, copy, "
                      "mid_write or upload_delay; MS up to 600000)");
  f.pause = std::chrono::milliseconds(ms);
  return f;
}

namespace {

// The PORT of "HOST:PORT" (all of `text`): 0..65535, nothing else.
std::optional<unsigned short> port_of(std::string_view text) {
  unsigned port = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size() || port > 65535)
    return std::nullopt;
  return static_cast<unsigned short>(port);
}

// "unix:PATH" (a path) or "HOST:PORT" (a port 0..65535 after the last ':', before it something
// that is no URL: no '/'). "tcp:", "http://h:80", "unix:" are not.
bool listen_well_formed(const std::string& l) {
  if (l.starts_with("unix:")) return l.size() > 5;
  const auto colon = l.rfind(':');
  if (colon == std::string::npos || colon == 0 || l.find('/') != std::string::npos) return false;
  return port_of(std::string_view(l).substr(colon + 1)).has_value();
}

}  // namespace

MetricsAddress parse_metrics_listen(const std::string& listen, const std::string& name) {
  const auto what = name + " '" + listen + "'";
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw ConfigError(what + " is not HOST:PORT (e.g. 127.0.0.1:9464)");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  const auto port = port_of(std::string_view(listen).substr(colon + 1));
  if (!port) throw ConfigError(what + ": the port is not a number from 0 to 65535");
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(host, ec);
  if (ec) throw ConfigError(what + ": '" + host + "' is not an IP address");
  if (!addr.is_loopback())
    throw ConfigError(what + ": " + host +
                      " is not a loopback address; the metrics listener has no "
                      "authentication, so it serves this host only (127.0.0.1, ::1)");
  return {addr.to_string(), *port};
}

void check_config(const Config& c, const KeyName& name_of) {
  const auto name = [&](const std::string& key) { return name_of ? name_of(key) : key; };
  if (c.num_slots < shm::kMinSlots || c.num_slots > shm::kMaxSlots)
    throw ConfigError(name("num_slots") + " " + std::to_string(c.num_slots) + " is not 1..10");
  try {
    shm::validate_prefix(c.prefix);
  } catch (const shm::ProtocolError& e) {
    // "prefix 'P' has ...": the key once, as the value's source names it.
    std::string m = e.what();
    if (m.starts_with("prefix ")) m = m.substr(7);
    throw ConfigError(name("prefix") + " " + m);
  }
  // The SDKs refuse such a prefix at attach (Client.attach passes the daemon's own): a daemon
  // that took it would publish slots nobody can attach to.
  if (const auto problem = shm::prefix_separator_problem(c.prefix); !problem.empty())
    throw ConfigError(name("prefix") + " " + problem);
  if (c.device != "auto" && c.device != "cpu" && !c.device.starts_with("cuda:"))
    throw ConfigError(name("device") + " '" + c.device + "' is not auto, cpu or cuda:N");
  if (c.log_level != "error" && c.log_level != "warn" && c.log_level != "info" &&
      c.log_level != "debug")
    throw ConfigError(name("log_level") + " '" + c.log_level +
                      "' is not error, warn, info or debug");
  if (!listen_well_formed(c.listen))
    throw ConfigError(name("listen") + " '" + c.listen +
                      "' is malformed: give unix:PATH or HOST:PORT (a PORT from 0 to 65535)");
  // Over TCP every call carries the token (rpc::Gate); without one the start would stop later.
  if (!c.listen.starts_with("unix:") && c.token_file.empty())
    throw ConfigError(name("listen") + " '" + c.listen +
                      "' is TCP, which needs a bearer token: set \"token_file\"");
  if (!c.metrics_listen.empty()) parse_metrics_listen(c.metrics_listen, name("metrics_listen"));
  if (c.max_meshes == 0) throw ConfigError(name("max_meshes") + " must be at least 1");
  if (c.max_message_size < (64u << 10))
    throw ConfigError(name("max_message_size") + " " + std::to_string(c.max_message_size) +
                      " is under 64 KiB (a Load request with a long path needs more)");
  if (c.max_rpc_memory < 4ull * c.max_message_size)
    throw ConfigError(name("max_rpc_memory") + " " + std::to_string(c.max_rpc_memory) +
                      " must be at least 4 x max_message_size (" +
                      std::to_string(4ull * c.max_message_size) + ")");
  if (c.max_streams == 0 || c.max_streams_per_peer == 0)
    throw ConfigError(name(c.max_streams == 0 ? "max_streams" : "max_streams_per_peer") +
                      ": max_streams and max_streams_per_peer must be at least 1");
  if (c.max_loads == 0 || c.max_loads_per_peer == 0)
    throw ConfigError(name(c.max_loads == 0 ? "max_loads" : "max_loads_per_peer") +
                      ": max_loads and max_loads_per_peer must be at least 1");
  if (c.max_exports == 0 || c.max_exports_per_peer == 0)
    throw ConfigError(name(c.max_exports == 0 ? "max_exports" : "max_exports_per_peer") +
                      ": max_exports and max_exports_per_peer must be at least 1");
  if (c.max_rpc_threads < 2 * c.max_streams + 16)
    throw ConfigError(name("max_rpc_threads") + " " + std::to_string(c.max_rpc_threads) +
                      " must be at least 2 x max_streams + 16 (" +
                      std::to_string(2 * c.max_streams + 16) +
                      "): streams must leave threads for other calls");
}

std::string config_json(const Config& c) {
  char mode[8], shm_mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(c.socket_mode));
  std::snprintf(shm_mode, sizeof shm_mode, "%04o", static_cast<unsigned>(c.shm_mode));
  nlohmann::json j = {
      {"listen", c.listen},
      {"socket_mode", mode},
      {"roots", c.roots},
      {"export_roots", c.export_roots ? nlohmann::json(*c.export_roots) : nlohmann::json(nullptr)},
      {"max_file_size", c.max_file_size},
      {"max_meshes", c.max_meshes},
      {"device_memory_budget", c.device_memory_budget},
      {"num_slots", c.num_slots},
      {"prefix", c.prefix},
      {"shm_mode", shm_mode},
      {"device", c.device},
      {"log_level", c.log_level},
      {"token_file", c.token_file},
      {"lease_wait_ms", c.lease_wait_ms},
      {"cuda_link_grace_ms", c.cuda_link_grace_ms},
      {"load", loads_json(c.load)},
      {"publish_copy", c.publish_copy},
      {"watch_interval_ms", c.watch_interval_ms},
      {"metrics_listen", c.metrics_listen},
      {"max_message_size", c.max_message_size},
      {"max_streams", c.max_streams},
      {"max_streams_per_peer", c.max_streams_per_peer},
      {"max_connections_per_uid", c.max_connections_per_uid},
      {"max_connections", c.max_connections},
      {"max_loads", c.max_loads},
      {"max_loads_per_peer", c.max_loads_per_peer},
      {"max_exports", c.max_exports},
      {"max_exports_per_peer", c.max_exports_per_peer},
      {"max_rpc_threads", c.max_rpc_threads},
      {"max_rpc_memory", c.max_rpc_memory},
      {"max_decoded_size", c.max_decoded_size}};
  return j.dump(2);
}

std::uint64_t decoded_size_limit(const Config& c) {
  if (c.max_decoded_size) return c.max_decoded_size;
  return c.device_memory_budget ? c.device_memory_budget : c.max_file_size;
}

}  // namespace meshdock::service
