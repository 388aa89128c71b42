#include "status.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

namespace meshdockctl {

std::optional<std::string> address_problem(const std::string& addr, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return what + " '" + addr + "' " + why + " (meshdockd listens on unix:PATH or HOST:PORT)";
  };
  if (addr.empty()) return bad("is empty");
  for (const char* scheme : {"unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:", "vsock:"})
    if (addr.rfind(scheme, 0) == 0)
      return addr.size() > std::strlen(scheme) ? std::nullopt
                                               : std::optional(bad("names no socket"));
  if (addr.find("://") != std::string::npos) return bad("is a URL");
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("has no :PORT");
  const std::string port = addr.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535 ||
      std::stoi(port) == 0)
    return bad("has no port 1-65535 after its last ':'");
  return std::nullopt;
}

int exit_code(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return kOk;
    case grpc::StatusCode::UNAVAILABLE:
      return kUnavailable;
    case grpc::StatusCode::NOT_FOUND:
      return kNotFound;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return kInvalidArgument;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return kPermissionDenied;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kResourceExhausted;
    case grpc::StatusCode::ALREADY_EXISTS:
      return kAlreadyExists;
    case grpc::StatusCode::FAILED_PRECONDITION:
      return kFailedPrecondition;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kDeadlineExceeded;
    default:
      return kOther;
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

std::string unix_socket_path(const std::string& addr) {
  if (addr.rfind("unix://", 0) == 0) return addr.substr(7);  // unix:///abs/path
  if (addr.rfind("unix:", 0) == 0) return addr.substr(5);
  return "";
}

namespace {

std::string group_name(gid_t gid) {
  if (const group* g = getgrgid(gid)) return g->gr_name;
  return std::to_string(gid);
}

std::string user_name(uid_t uid) {
  if (const passwd* p = getpwuid(uid)) return p->pw_name;
  return std::to_string(uid);
}

std::string describe(const std::string& path, const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return path + " (mode " + mode + ", owner " + user_name(st.st_uid) + ", group " +
         group_name(st.st_gid) + ")";
}

std::string denied(const std::string& what, const std::string& path, const struct stat& st) {
  return "permission denied on " + what + " " + describe(path, st) +
         ": this user may not connect; join group '" + group_name(st.st_gid) +
         "' (e.g. `sudo usermod -aG " + group_name(st.st_gid) +
         " $USER`, then log in again) or run as its owner";
}

}  // namespace

std::string diagnose_unavailable(const std::string& addr, int& code, const std::string& what) {
  code = kUnavailable;
  const std::string path = unix_socket_path(addr);
  if (path.empty()) return "";
  sockaddr_un sa{};
  if (path.size() >= sizeof sa.sun_path) return "";
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  const int rc = connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  const int err = errno;
  close(fd);
  if (rc == 0) return "";
  struct stat st {};
  if (err == EACCES) {
    code = kPermissionDenied;
    if (stat(path.c_str(), &st) == 0 && access(path.c_str(), W_OK) != 0)
      return denied("the socket", path, st);
    // The socket is writable (or cannot be stat'ed): a directory on the way is not searchable.
    for (auto dir = std::filesystem::path(path).parent_path(); !dir.empty();
         dir = dir.parent_path()) {
      if (access(dir.c_str(), X_OK) != 0 && errno == EACCES) {
        if (stat(dir.c_str(), &st) == 0) return denied("the socket's directory", dir, st);
      }
      if (dir == dir.root_path()) break;
    }
    return "permission denied connecting to " + path;
  }
  if (err == ENOENT)
    return "no socket at " + path + " (is meshdockd running? is " + what + " right?)";
  // connect() to a path that is not a socket is refused as if nothing listened: say what it is.
  if (err == ECONNREFUSED && stat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode))
    return path + " is " +
           (S_ISDIR(st.st_mode)   ? "a directory"
            : S_ISREG(st.st_mode) ? "a regular file"
                                  : "not a socket") +
           ", not meshdockd's socket (is " + what + " right?)";
  if (err == ECONNREFUSED)
    return "nothing listens on " + path + " (a socket left by a meshdockd that is gone?)";
  return "";
}

namespace {
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string suggest(const std::string& word, const std::vector<std::string>& choices) {
  std::string best;
  std::size_t best_d = 3;
  for (const auto& c : choices) {
    // A prefix either way counts as one edit: "--address" means "--addr".
    const bool prefix =
        (word.size() >= 2 && c.rfind(word, 0) == 0) || (c.size() >= 4 && word.rfind(c, 0) == 0);
    const std::size_t d = prefix ? 1 : distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace meshdockctl
