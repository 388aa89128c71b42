// meshdockd's configuration (daemon/service/config.hpp): which file is read, export_roots, and
// that roots which do not exist stop the start naming the key and the path.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "daemon/service/config.hpp"
#include "daemon/service/roots.hpp"

namespace svc = meshdock::service;
namespace fs = std::filesystem;

namespace {

class ConfigFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("meshdock-config-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(base_ / name) << text;
    return base_ / name;
  }
  fs::path base_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const svc::ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(ConfigSource, TheFlagWinsOverTheVariableAndTheDefault) {
  const auto s = svc::resolve_config_source(std::string("/x/flag.json"), "/x/env.json", "/");
  EXPECT_EQ(s.path.value_or("none"), "/x/flag.json");
  EXPECT_EQ(s.origin, "--config");
  EXPECT_EQ(s.describe(), "configuration: from /x/flag.json (--config)");
}

TEST(ConfigSource, TheVariableWinsOverTheDefault) {
  // The default exists ("/" does) but the variable names another file: that one is read,
  // even when it does not exist (load_config then fails naming it).
  const auto s = svc::resolve_config_source(std::nullopt, "/x/env.json", "/");
  EXPECT_EQ(s.path.value_or("none"), "/x/env.json");
  EXPECT_EQ(s.describe(), "configuration: from /x/env.json ($MESHDOCK_CONFIG)");
}

TEST(ConfigSource, AnEmptyVariableMeansNoFile) {
  const auto s = svc::resolve_config_source(std::nullopt, "", "/");
  EXPECT_FALSE(s.path);
  EXPECT_EQ(s.describe(),
            "configuration: none ($MESHDOCK_CONFIG is set and empty): built-in defaults and "
            "flags");
}

TEST_F(ConfigFiles, TheDefaultIsReadWhenItExistsAndSkippedWhenNot) {
  const auto missing = (base_ / "etc" / "meshdockd.json").string();
  auto s = svc::resolve_config_source(std::nullopt, nullptr, missing);
  EXPECT_FALSE(s.path);
  EXPECT_EQ(s.describe(), "configuration: none (no --config, $MESHDOCK_CONFIG unset, nothing at " +
                              missing + "): built-in defaults and flags");
  // A file where a directory of the path should be (ENOTDIR) counts as missing too.
  write("etc", "not a directory");
  EXPECT_FALSE(svc::resolve_config_source(std::nullopt, nullptr, missing).path);

  const auto present = write("meshdockd.json", R"({"num_slots": 4})").string();
  s = svc::resolve_config_source(std::nullopt, nullptr, present);
  ASSERT_TRUE(s.path);
  EXPECT_EQ(*s.path, present);
  EXPECT_EQ(s.describe(), "configuration: from " + present + " (the default path)");
  EXPECT_EQ(svc::load_config(*s.path).num_slots, 4u);
}

TEST_F(ConfigFiles, ANamedFileThatIsMissingIsAnErrorNamingIt) {
  const auto p = (base_ / "nope.json").string();
  EXPECT_EQ(error_of([&] { svc::load_config(p); }),
            p + ": cannot open the configuration file (No such file or directory)");
}

// Before: {"num_slots": 4, "num_slots": 8} started with 8 slots and said nothing.
TEST_F(ConfigFiles, AKeyGivenTwiceIsAnErrorNamingIt) {
  const auto p =
      write("twice.json", R"({"num_slots": 4, "roots": ["/a"], "num_slots": 8})").string();
  EXPECT_EQ(error_of([&] { svc::load_config(p); }),
            p + ": key 'num_slots' is given twice (JSON would keep the last without a word); "
                "give it once");
  // Equal keys in different objects are not duplicates; a nested duplicate names its object.
  const auto nested =
      write("nested.json", R"({"a": {"x": 1}, "b": {"x": 2, "y": {"x": 3}, "x": 4}})").string();
  EXPECT_EQ(error_of([&] { svc::load_config(nested); }),
            nested +
                ": key 'x' is given twice in 'b' (JSON would keep the last without a "
                "word); give it once");
}

TEST(ConfigDefault, TheBuiltInDefaultPathIsTheInstalledConfig) {
  // MESHDOCK_DEFAULT_CONFIG from CMake: ${sysconfdir}/meshdock/meshdockd.json.
  const std::string p = svc::kDefaultConfigPath;
  EXPECT_TRUE(p.starts_with("/")) << p;
  EXPECT_TRUE(p.ends_with("/meshdock/meshdockd.json")) << p;
}

TEST(ExportRoots, AbsentOrNullMeansExportUnderRoots) {
  auto c = svc::parse_config(nlohmann::json::parse(R"({"roots": ["/a"]})"), "f.json");
  EXPECT_FALSE(c.export_roots);
  c = svc::parse_config(nlohmann::json::parse(R"({"roots": ["/a"], "export_roots": null})"),
                        "f.json");
  EXPECT_FALSE(c.export_roots);
  EXPECT_EQ(nlohmann::json::parse(svc::config_json(c))["export_roots"], nullptr);
}

TEST(ExportRoots, AListIsKeptAndPrinted) {
  auto c = svc::parse_config(
      nlohmann::json::parse(R"({"roots": ["/a"], "export_roots": ["/b", "/c"]})"), "f.json");
  ASSERT_TRUE(c.export_roots);
  EXPECT_EQ(*c.export_roots, (std::vector<std::string>{"/b", "/c"}));
  EXPECT_EQ(c.roots, std::vector<std::string>{"/a"});
  const auto j = nlohmann::json::parse(svc::config_json(c));
  EXPECT_EQ(j["export_roots"], nlohmann::json::parse(R"(["/b", "/c"])"));
  // The printed configuration parses back to the same thing.
  const auto again = svc::parse_config(j, "printed");
  EXPECT_EQ(again.export_roots, c.export_roots);
  // An empty list: export disabled (kept, distinct from absent).
  c = svc::parse_config(nlohmann::json::parse(R"({"export_roots": []})"), "f.json");
  ASSERT_TRUE(c.export_roots);
  EXPECT_TRUE(c.export_roots->empty());
}

TEST(ExportRoots, WrongTypesNameTheKey) {
  EXPECT_EQ(error_of([] {
              svc::parse_config(nlohmann::json::parse(R"({"export_roots": "/b"})"), "f.json");
            }),
            "f.json: key 'export_roots' must be a list of directories (or null)");
  EXPECT_EQ(error_of([] {
              svc::parse_config(nlohmann::json::parse(R"({"export_roots": [1]})"), "f.json");
            }),
            "f.json: key 'export_roots' must hold strings");
  const auto unknown = error_of(
      [] { svc::parse_config(nlohmann::json::parse(R"({"export_root": ["/b"]})"), "f.json"); });
  EXPECT_NE(unknown.find("unknown key 'export_root'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("export_roots,"), std::string::npos) << unknown;
}

// The SDKs attach only under a prefix that ends with a separator (Slot::resolve_prefix), so a
// daemon that took "md7" published slots no consumer could attach to, Client.attach included.
TEST(Prefix, APrefixWithoutItsSeparatorStopsTheStartSuggestingOne) {
  svc::Config c;
  for (const char* ok : {"", "meshdock.", "md7-", "md_"}) {
    c.prefix = ok;
    EXPECT_NO_THROW(svc::check_config(c)) << ok;
  }
  c.prefix = "md7";
  EXPECT_EQ(error_of([&] { svc::check_config(c); }),
            "prefix 'md7' does not end with '.', '-' or '_', so segment names would run into it "
            "('md7NAME'); meshdock prefixes end with one: did you mean 'md7.'?");
  c.prefix = "a/b.";
  // The key once ("prefix: prefix 'a/b.' ..." before), and where the value came from.
  EXPECT_EQ(error_of([&] { svc::check_config(c); }).find("prefix 'a/b.' has a character"), 0u);
  EXPECT_EQ(error_of([&] {
              svc::check_config(c, [](const std::string& k) { return "f.json: " + k; });
            }).find("f.json: prefix 'a/b.' has a character"),
            0u);
}

// check_config's messages name where each value came from, as the caller's KeyName says
// (meshdockd: "--device" for a flag, "FILE: device" for the file).
TEST(CheckConfig, ErrorsNameTheValuesSource) {
  const svc::KeyName from_file = [](const std::string& k) { return "bad.json: " + k; };
  auto error = [&](auto set, const svc::KeyName& name) {
    svc::Config c;
    set(c);
    return error_of([&] { svc::check_config(c, name); });
  };
  EXPECT_EQ(error([](svc::Config& c) { c.log_level = "verbose"; }, from_file),
            "bad.json: log_level 'verbose' is not error, warn, info or debug");
  EXPECT_EQ(error([](svc::Config& c) { c.device = "gpu"; },
                  [](const std::string& k) { return "--" + k; }),
            "--device 'gpu' is not auto, cpu or cuda:N");
  EXPECT_EQ(error([](svc::Config& c) { c.max_message_size = 1; }, from_file),
            "bad.json: max_message_size 1 is under 64 KiB (a Load request with a long path needs "
            "more)");
  EXPECT_EQ(error([](svc::Config& c) { c.num_slots = 11; }, {}), "num_slots 11 is not 1..10");
}

// "tcp:1234" read as host "tcp" and said it needed a token; "tcp:" and URLs are malformed.
TEST(CheckConfig, ListenIsUnixPathOrHostPortAndTcpNeedsAToken) {
  svc::Config c;
  for (const char* bad : {"tcp:", "http://127.0.0.1:80", "unix:", "nohost", ":80",
                          "127.0.0.1:99999", "127.0.0.1:x"}) {
    c.listen = bad;
    EXPECT_EQ(error_of([&] { svc::check_config(c); }),
              "listen '" + std::string(bad) +
                  "' is malformed: give unix:PATH or HOST:PORT (a PORT from 0 to 65535)");
  }
  c.listen = "127.0.0.1:50051";
  EXPECT_EQ(error_of([&] { svc::check_config(c); }),
            "listen '127.0.0.1:50051' is TCP, which needs a bearer token: set \"token_file\"");
  for (const char* ok : {"127.0.0.1:50051", "[::1]:0", "localhost:1", "tcp:1234"}) {
    c.listen = ok;
    c.token_file = "/etc/meshdock/token";  // read at the start, not here
    EXPECT_NO_THROW(svc::check_config(c)) << ok;
  }
}

// As rpc::MetricsHttp would refuse it, before anything is bound (and by --print-config).
TEST(CheckConfig, MetricsListenIsALoopbackHostPort) {
  svc::Config c;
  for (const char* ok : {"", "127.0.0.1:0", "127.3.2.1:9464", "localhost:9464", "[::1]:9464"}) {
    c.metrics_listen = ok;
    EXPECT_NO_THROW(svc::check_config(c)) << ok;
  }
  const std::pair<const char*, const char*> bad[] = {
      {"0.0.0.0:19464", "metrics_listen '0.0.0.0:19464': 0.0.0.0 is not a loopback address"},
      {"[::]:1", "metrics_listen '[::]:1': :: is not a loopback address"},
      {"nonsense", "metrics_listen 'nonsense' is not HOST:PORT (e.g. 127.0.0.1:9464)"},
      {"127.0.0.1:99999", "metrics_listen '127.0.0.1:99999': the port is not a number"},
      {"example.com:80", "metrics_listen 'example.com:80': 'example.com' is not an IP address"}};
  for (const auto& [value, said] : bad) {
    c.metrics_listen = value;
    const auto e = error_of(
        [&] { svc::check_config(c, [](const std::string& k) { return "c.json: " + k; }); });
    EXPECT_EQ(e.find(std::string("c.json: ") + said), 0u) << e;
  }
}

TEST(PublishCopy, AutoByDefaultAndOnlyTheThreeWords) {
  EXPECT_EQ(svc::parse_config(nlohmann::json::object(), "f.json").publish_copy, "auto");
  for (const char* w : {"auto", "changed", "all"}) {
    const auto c = svc::parse_config(nlohmann::json{{"publish_copy", w}}, "f.json");
    EXPECT_EQ(c.publish_copy, w);
    EXPECT_EQ(nlohmann::json::parse(svc::config_json(c))["publish_copy"], w);
  }
  EXPECT_EQ(error_of([] {
              svc::parse_config(nlohmann::json{{"publish_copy", "some"}}, "f.json");
            }),
            "f.json: key 'publish_copy' must be \"auto\", \"changed\" or \"all\", not \"some\"");
  EXPECT_EQ(error_of([] {
              svc::parse_config(nlohmann::json{{"publish_copy", true}}, "f.json");
            }),
            "f.json: key 'publish_copy' must be a string");
}

TEST(CudaLinkGrace, HalfASecondByDefaultAndAtMostTenMinutes) {
  EXPECT_EQ(svc::parse_config(nlohmann::json::object(), "f.json").cuda_link_grace_ms, 500u);
  const auto c = svc::parse_config(nlohmann::json{{"cuda_link_grace_ms", 3000u}}, "f.json");
  EXPECT_EQ(c.cuda_link_grace_ms, 3000u);
  EXPECT_EQ(nlohmann::json::parse(svc::config_json(c))["cuda_link_grace_ms"], 3000);
  EXPECT_EQ(error_of([] {
              svc::parse_config(nlohmann::json{{"cuda_link_grace_ms", 600001u}}, "f.json");
            }),
            "f.json: key 'cuda_link_grace_ms' must be a whole number from 0 to 600000");
}

TEST_F(ConfigFiles, AMissingExportRootIsAConfigErrorNamingTheKeyAndThePath) {
  fs::create_directories(base_ / "exports");
  const auto missing = (base_ / "gone").string();
  const auto e = error_of([&] {
    svc::Roots r({(base_ / "exports").string(), missing}, svc::Roots::Resolver::automatic,
                 svc::Roots::Use::write_only);
  });
  EXPECT_NE(e.find("export root '" + missing + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("\"export_roots\""), std::string::npos) << e;
  EXPECT_NE(e.find("--export-root"), std::string::npos) << e;
  EXPECT_NE(e.find("no such directory"), std::string::npos) << e;
  // The same path as a read root names the other key.
  const auto r = error_of([&] { svc::Roots roots({missing}); });
  EXPECT_NE(r.find("root '" + missing + "' (config key \"roots\""), std::string::npos) << r;
}

TEST_F(ConfigFiles, ExportRootsRefuseWhatIsOutsideThem) {
  fs::create_directories(base_ / "exports");
  fs::create_directories(base_ / "meshes");
  const svc::Roots w({(base_ / "exports").string()}, svc::Roots::Resolver::automatic,
                     svc::Roots::Use::write_only);
  EXPECT_EQ(w.open_dir_for_write((base_ / "exports" / "out.vtu").string()).leaf, "out.vtu");
  try {
    w.open_dir_for_write((base_ / "meshes" / "out.vtu").string());
    ADD_FAILURE() << "a path under a read root was writable through the export roots";
  } catch (const svc::RootsError& e) {
    EXPECT_EQ(e.kind(), svc::RootsError::Kind::kOutside);
    EXPECT_NE(std::string(e.what()).find("outside the allowed export roots"), std::string::npos)
        << e.what();
  }
}

TEST(ShippedConfig, ParsesAndSeparatesReadAndExportRoots) {
  const auto c = svc::load_config(MESHDOCK_SOURCE_DIR "/config/meshdockd.json");
  svc::check_config(c);
  EXPECT_EQ(c.roots, std::vector<std::string>{"/var/lib/meshdock/meshes"});
  ASSERT_TRUE(c.export_roots);
  EXPECT_EQ(*c.export_roots, std::vector<std::string>{"/var/lib/meshdock/exports"});
  EXPECT_EQ(c.listen, "unix:/run/meshdock/meshdockd.sock");
}

}  // namespace
