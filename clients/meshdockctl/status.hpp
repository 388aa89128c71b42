// meshdockctl's exit statuses and error messages (docs/operations.md, "meshdockctl", lists the
// same table; keep them in step).
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <vector>

namespace meshdockctl {

enum Exit : int {
  kOk = 0,
  kOther = 1,
  kUsage = 2,
  kUnavailable = 3,  // no daemon answering, or health not SERVING
  kNotFound = 4,
  kInvalidArgument = 5,
  kPermissionDenied = 6,  // includes a socket this user may not connect to (EACCES)
  kResourceExhausted = 7,
  kAlreadyExists = 8,
  kFailedPrecondition = 9,
  kDeadlineExceeded = 10,
};

int exit_code(const grpc::Status& s);
const char* code_name(grpc::StatusCode c);

// Why a daemon at `addr` did not answer, when the answer is on this host: for a unix: address,
// the socket is probed with connect(2). Sets `code` (kUnavailable or kPermissionDenied) and
// returns a message that names the socket and, on EACCES, the group to join (and `what` gave
// the address where it may be wrong). Returns "" when
// nothing better than gRPC's own message is known (TCP, or the socket accepts connections).
std::string diagnose_unavailable(const std::string& addr, int& code,
                                 const std::string& what = "--addr");

// Why `addr` is no address a client can reach (nullopt: it is one), in words that start with
// `what` (the option or argument that gave it: "--addr", "meshdock_producer_open: target"). gRPC
// takes far more (and its resolver's complaints about "foo" or "" are long log lines about DNS
// and channel stacks): what meshdockd listens on is unix:PATH or HOST:PORT, and gRPC's
// scheme:... forms pass.
std::optional<std::string> address_problem(const std::string& addr, const std::string& what);

// The socket path of a "unix:PATH" / "unix://PATH" address; "" for anything else.
std::string unix_socket_path(const std::string& addr);

// The closest of `choices` to `word` (edit distance <= 2, or a prefix of it or it of one of at
// least 4 characters), or "".
std::string suggest(const std::string& word, const std::vector<std::string>& choices);

}  // namespace meshdockctl
