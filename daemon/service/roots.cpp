#include "daemon/service/roots.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "daemon/mesh/mapped_file.hpp"
#include "daemon/service/config.hpp"

namespace meshdock::service {

namespace {

using Kind = RootsError::Kind;

constexpr std::uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

long openat2(int dir, const char* path, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = kResolve;
  return ::syscall(SYS_openat2, dir, path, &how, sizeof how);
}

bool under(const std::string& p, const std::string& r) {
  return p == r || (r == "/" ? p.starts_with("/") : p.starts_with(r + "/"));
}

std::string normal(const std::string& p) {
  std::string n = std::filesystem::path(p).lexically_normal().string();
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}

// What the client is told: the path it gave and what is wrong with it, never what a symlink
// there points to.
[[noreturn]] void refuse(int err, const std::string& path, const std::string& root) {
  switch (err) {
    case EXDEV:
      throw RootsError(Kind::kOutside, path +
                                           " leads outside the allowed roots (a symlink or "
                                           "'..' out of " +
                                           root + ", or an absolute symlink, is not followed)");
    case ELOOP:
      throw RootsError(Kind::kOutside, path +
                                           " goes through a symlink that is not followed (a "
                                           "loop, a /proc magic link, or any symlink where "
                                           "the kernel lacks openat2)");
    case ENOENT:
      throw RootsError(Kind::kNotFound, path + ": no such file or directory");
    case ENOTDIR:
      throw RootsError(Kind::kNotFound, path + ": a component of it is not a directory");
    case EACCES:
    case EPERM:
      throw RootsError(Kind::kDenied, path + ": permission denied");
    case ENXIO:
    case EOPNOTSUPP:
    case EISDIR:
      throw RootsError(Kind::kNotRegular, path + " is not a regular file");
    case ENAMETOOLONG:
      throw RootsError(Kind::kInvalid, path + ": a name in it is too long");
    default:
      throw RootsError(Kind::kIo, path + ": cannot open (" + std::strerror(err) + ")");
  }
}

}  // namespace

Roots::Roots(const std::vector<std::string>& roots, Resolver resolver, Use use) : use_(use) {
  for (const auto& r : roots) {
    const std::string what =
        use == Use::read
            ? "root '" + r + "' (config key \"roots\" / --root DIR)"
            : "export root '" + r + "' (config key \"export_roots\" / --export-root DIR)";
    mesh::UniqueFd fd(::open(r.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd)
      throw ConfigError(what + ": " +
                        (errno == ENOENT    ? std::string("no such directory")
                         : errno == ENOTDIR ? std::string("not a directory")
                                            : std::string(std::strerror(errno))));
    char buf[PATH_MAX];
    Root root;
    root.lexical = normal(r);
    root.real = ::realpath(r.c_str(), buf) ? std::string(buf) : root.lexical;
    root.fd = std::move(fd);
    roots_.push_back(std::move(root));
    names_.push_back(r);
  }
  walk_ = resolver == Resolver::walk;
  if (!walk_ && !roots_.empty()) {
    // ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that does not know the call.
    const long fd = openat2(roots_.front().fd.get(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
      ::close(static_cast<int>(fd));
    else if (errno == ENOSYS || errno == EPERM)
      walk_ = true;
  }
}

std::pair<const Roots::Root*, std::string> Roots::locate(const std::string& path,
                                                         std::string& n) const {
  n = normal(path);
  const Root* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& r : roots_)
    for (const std::string* form : {&r.lexical, &r.real})
      if (under(n, *form) && (!best || form->size() > best_len)) {
        best = &r;
        best_len = form->size();
      }
  if (!best) {
    std::string list;
    for (const auto& x : names_) list += (list.empty() ? "" : ", ") + x;
    throw RootsError(Kind::kOutside, path + " is outside the allowed " +
                                         (use_ == Use::read ? "roots" : "export roots") + " (" +
                                         list + ")");
  }
  std::string rel = n.size() > best_len ? n.substr(best_len) : std::string();
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return {best, rel};
}

mesh::UniqueFd Roots::open_beneath(const Root& root, const std::string& rel, int flags,
                                   const std::string& path) const {
  const std::string& where = root.lexical;
  if (!walk_) {
    for (int attempt = 0;; ++attempt) {
      const long fd = openat2(root.fd.get(), rel.empty() ? "." : rel.c_str(), flags);
      if (fd >= 0) return mesh::UniqueFd(static_cast<int>(fd));
      // EAGAIN: a rename raced the lookup (RESOLVE_BENEATH checks for it); try again a little.
      if (errno == EAGAIN && attempt < 16) continue;
      refuse(errno, path, where);
    }
  }
  // Component by component, no symlink followed (rel is lexically normal: no '.', no '..').
  mesh::UniqueFd cur(::fcntl(root.fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!cur) refuse(errno, path, where);
  std::size_t at = 0;
  while (at < rel.size()) {
    const auto slash = rel.find('/', at);
    const bool last = slash == std::string::npos;
    const std::string name = rel.substr(at, last ? std::string::npos : slash - at);
    const int f = last ? flags | O_NOFOLLOW : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    mesh::UniqueFd next(::openat(cur.get(), name.c_str(), f));
    if (!next) {
      const int err = errno;
      struct stat st {};
      if ((err == ENOTDIR || err == ELOOP) &&
          ::fstatat(cur.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        refuse(ELOOP, path, where);
      refuse(err, path, where);
    }
    cur = std::move(next);
    at = last ? rel.size() : slash + 1;
  }
  if (rel.empty()) {
    mesh::UniqueFd self(::openat(cur.get(), ".", flags));
    if (!self) refuse(errno, path, where);
    return self;
  }
  return cur;
}

RootFile Roots::open_for_read(const std::string& path) const {
  std::string n;
  const auto [root, rel] = locate(path, n);
  if (rel.empty())
    throw RootsError(Kind::kNotRegular, path + " is a root directory, not a regular file");
  RootFile f;
  f.path = n;
  f.fd = open_beneath(*root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, n);
  if (::fstat(f.fd.get(), &f.st) != 0 || !S_ISREG(f.st.st_mode))
    throw RootsError(Kind::kNotRegular, n + " is not a regular file");
  return f;
}

RootDir Roots::open_dir_for_write(const std::string& path) const {
  std::string n;
  const auto [root, rel] = locate(path, n);
  if (rel.empty())
    throw RootsError(Kind::kNotRegular, path + " names a root directory itself; name a file in it");
  if (std::filesystem::path(path).lexically_normal().filename().empty())  // ends in / . or ..
    throw RootsError(Kind::kNotRegular, path + " names a directory");
  const auto slash = rel.find_last_of('/');
  RootDir d;
  d.path = n;
  d.leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
  const std::string parent = slash == std::string::npos ? std::string() : rel.substr(0, slash);
  d.fd = open_beneath(*root, parent, O_PATH | O_DIRECTORY | O_CLOEXEC,
                      n.substr(0, n.find_last_of('/')));
  return d;
}

std::vector<std::string> Roots::list_dir(const std::string& path) const {
  std::string n;
  const auto [root, rel] = locate(path, n);
  const auto fd = open_beneath(*root, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, n);
  try {
    return mesh::list_directory(fd.get(), n);
  } catch (const mesh::ReadError& e) {
    throw RootsError(Kind::kIo, e.what());
  }
}

std::optional<struct stat> Roots::stat(const std::string& path) const {
  try {
    std::string n;
    const auto [root, rel] = locate(path, n);
    const auto fd = open_beneath(*root, rel, O_PATH | O_CLOEXEC, n);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return std::nullopt;
    return st;
  } catch (const RootsError&) {
    return std::nullopt;
  }
}

}  // namespace meshdock::service
