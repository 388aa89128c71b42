#include "daemon/slots/squatters.hpp"

#include <pwd.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "meshdock/shm/process.hpp"

namespace meshdock::slots {

std::optional<ObjectOwner> object_owner(const std::string& dir, const std::string& object) {
  struct stat st {};
  if (::lstat((dir + "/" + object).c_str(), &st) != 0) return std::nullopt;
  return ObjectOwner{st.st_uid, static_cast<mode_t>(st.st_mode & 07777)};
}

std::string describe_uid(uid_t uid) {
  std::string out = "uid " + std::to_string(uid);
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
    out += std::string(" (") + found->pw_name + ")";
  return out;
}

std::optional<std::string> evict_squatter(const std::string& dir, const std::string& object,
                                          uid_t self,
                                          const std::function<int(const std::string&)>& unlink_fn) {
  const auto owner = object_owner(dir, object);
  if (!owner || owner->uid == self) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(owner->mode));
  const std::string what =
      dir + "/" + object + " (owner " + describe_uid(owner->uid) + ", mode " + mode + ")";
  if (unlink_fn(object) != 0) {
    const int e = errno;
    throw SquatterError(what + " is not the daemon's (" + describe_uid(self) +
                        ") and cannot be removed: " + std::strerror(e) +
                        "; remove it as its owner or root, or use another prefix");
  }
  return "removed " + what + ": not created by this daemon's user (" + describe_uid(self) +
         "), so never trusted";
}

bool live_process_of(std::int32_t pid, uid_t uid) {
  if (!shm::pid_alive(pid)) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream in(line.substr(4));
    long real = -1, effective = -1;
    in >> real >> effective;
    return effective == static_cast<long>(uid);
  }
  return false;  // no /proc entry we can read: not provably ours
}

}  // namespace meshdock::slots
