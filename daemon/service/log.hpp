// A small leveled logger to stderr (journald picks it up under systemd). An object, passed to
// whoever logs: the level can change on SIGHUP without global state.
#pragma once

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "daemon/mesh/error.hpp"

namespace meshdock::service {

class Logger {
 public:
  enum Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
  void set_level(const std::string& name) {
    level_ = name == "error" ? kError : name == "warn" ? kWarn : name == "debug" ? kDebug : kInfo;
  }
  void error(const std::string& m) { put(kError, "error", m); }
  void warn(const std::string& m) { put(kWarn, "warn", m); }
  void info(const std::string& m) { put(kInfo, "info", m); }
  void debug(const std::string& m) { put(kDebug, "debug", m); }
  // Printed whatever the level (which configuration file was read, before its level applies).
  void notice(const std::string& m) { put(kError, "notice", m); }

 private:
  void put(Level l, const char* tag, const std::string& m) {
    if (l > level_.load()) return;
    std::lock_guard lock(m_);
    // One line per message whatever it quotes (a file's bytes, a client's path): no control
    // byte of theirs can end the line early or forge the next one.
    std::fprintf(stderr, "meshdockd: %s: %s\n", tag, mesh::terminal_safe(m).c_str());
    std::fflush(stderr);
  }
  std::atomic<Level> level_{kInfo};
  std::mutex m_;
};

}  // namespace meshdock::service
