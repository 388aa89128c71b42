// meshdockctl's JSON: replies as scripts want them. Built by hand rather than with protobuf's
// JSON printer, which writes 64-bit integers as strings and a dtype as {code,bits,lanes}: here
// every integer is a JSON number, a dtype is its numpy name ("float64"), describe's manifest is
// an object, and a monotonic timestamp has a wall-clock RFC 3339 "time" beside it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "grpc/health/v1/health.pb.h"
#include "meshdock/v1/meshdock.pb.h"

namespace meshdockctl {

using Json = nlohmann::ordered_json;

// "float64", "int32", "uint8", "bfloat16", "bool"; lanes > 1 adds "x<lanes>" ("float32x4").
// A code the proto does not define is "dtype(code=C,bits=B)" (never an exception: it is
// printing what a daemon said).
std::string dtype_name(unsigned code, unsigned bits, unsigned lanes = 1);

// UTC, millisecond precision: "2026-12-04T04:10:00.123Z".
std::string rfc3339(double unix_seconds);
// Wall-clock seconds of a CLOCK_MONOTONIC instant of this host (a unix: daemon's clock).
double wall_of_monotonic(double monotonic_seconds);

Json slot_json(const meshdock::v1::SlotInfo& s);
Json to_json(const meshdock::v1::LoadProgress& p);
Json to_json(const meshdock::v1::ListReply& r);
// The manifest (catalog page JSON) embedded as an object with its dtypes named; a manifest
// that does not parse is kept as the string it was, under "manifest_text".
Json to_json(const meshdock::v1::DescribeReply& r);
Json to_json(const meshdock::v1::UnloadReply& r);
Json to_json(const meshdock::v1::ExportReply& r);
Json to_json(const meshdock::v1::PublishReply& r);
Json to_json(const meshdock::v1::StatsReply& r);
// {"text": the Prometheus exposition} (meshdockctl metrics --json).
Json to_json(const meshdock::v1::MetricsReply& r);
Json to_json(const meshdock::v1::LeasesReply& r);
Json to_json(const meshdock::v1::RevokeLeasesReply& r);
// `wall_seconds`: when the event happened, by the wall clock (see main.cpp's watch).
Json to_json(const meshdock::v1::Event& e, double wall_seconds);
Json to_json(const grpc::health::v1::HealthCheckResponse& r);

// Replaces every "dtype": [code, bits, lanes] inside `j` (a manifest, an inspect report) with
// its name, in place.
void name_dtypes(nlohmann::json& j);

// "cpu", "cuda:N" (DLPack device type 1 / 2); another type is "device_type T:N".
std::string device_name(std::int64_t type, std::int64_t id);
// An inspect report (meshdock::to_json) in the forms every other reply uses: dtypes named,
// "device" as device_name, the heartbeat's age in seconds ("heartbeat_age_seconds", as
// "last_load_seconds") rather than nanoseconds.
void script_inspect(nlohmann::json& report);

}  // namespace meshdockctl
