// `hotrow check-config` through the real binary (CONTRACT.md "Running as a service"): every example
// configuration and the one `cmake --install` installs pass (exit 0) and print an effective
// configuration that passes again unchanged; each kind of bad value (a key, a type, a range, a
// file, a section, the YAML itself, two keys that disagree, a token, a certificate, a key, a CA,
// a listen address, the peers, store.path) is exit 2 with one line naming the key.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace hotrow::check_config_test {
namespace {

using testing::ChildProcess;
using testing::ReadFile;
using testing::WriteFile;

struct CheckRun {
  int rc = -1;
  std::string out;
  std::string err;
};

CheckRun CheckConfig(const testing::TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::HotrowBinary(), "check-config"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string err_path = dir.Sub("check.err");
  WriteFile(err_path, "");
  ChildProcess child(argv, err_path);
  CheckRun run;
  for (std::string line; child.ReadLine(&line);) run.out += line + "\n";
  run.rc = child.Wait();
  run.err = ReadFile(err_path);
  return run;
}

// A self-signed certificate for 127.0.0.1 and its key, made by the openssl CLI.
void MakeCertificate(const testing::TempDir& dir, const std::string& name) {
  const std::string err = dir.Sub("openssl.err");
  ChildProcess openssl(
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
       "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
       "-keyout", dir.Sub(name + ".key"), "-out", dir.Sub(name + ".crt")},
      err);
  ASSERT_EQ(openssl.Wait(), 0) << ReadFile(err);
}

// Checks `file`, then checks what it printed: the same effective configuration again.
void ExpectValidAndStable(const testing::TempDir& dir, const std::string& file,
                          const std::vector<std::string>& sets = {}) {
  SCOPED_TRACE(file);
  std::vector<std::string> args = {"--config", file};
  args.insert(args.end(), sets.begin(), sets.end());
  const CheckRun first = CheckConfig(dir, args);
  ASSERT_EQ(first.rc, 0) << first.err;
  EXPECT_EQ(first.err, "");
  EXPECT_EQ(first.out.rfind("# hotrow check-config: valid", 0), 0u) << first.out;
  for (const char* key : {"kafka:", "brokers:", "store:", "ttl:", "keying:", "ingest:", "index:",
                          "http:", "listen:", "query:", "cluster:", "max_staleness:"}) {
    EXPECT_NE(first.out.find(key), std::string::npos) << key << " missing from\n" << first.out;
  }
  const std::string printed = dir.Sub("printed.yaml");
  WriteFile(printed, first.out);
  const CheckRun second = CheckConfig(dir, {"--config", printed});
  ASSERT_EQ(second.rc, 0) << second.err << "\n" << first.out;
  // Past the first line (which names the file), the same configuration.
  EXPECT_EQ(second.out.substr(second.out.find('\n')), first.out.substr(first.out.find('\n')));
}

TEST(CheckConfigTest, EveryExampleConfigurationIsValidAndPrintsItsEffectiveConfiguration) {
  testing::TempDir dir;
  int examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(hotrow::testing::SourceDir() + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    ExpectValidAndStable(dir, entry.path().string());
    ++examples;
  }
  EXPECT_GE(examples, 1);
  // The configuration `cmake --install` and the Debian package put in /etc/hotrow
  // (packaging/CMakeLists.txt makes it next to the binary's build directory).
  const std::string installed =
      std::filesystem::path(testing::HotrowBinary()).parent_path().string() +
      "/packaging/hotrow.yaml";
  ASSERT_TRUE(std::filesystem::exists(installed)) << installed;
  EXPECT_NE(ReadFile(installed).find("\n  path: /var/lib/hotrow\n"), std::string::npos);
  if (geteuid() == 0) {
    ExpectValidAndStable(dir, installed);
  } else {
    // /var/lib/hotrow is the service user's: another user's check-config refuses it (store.path).
    ExpectValidAndStable(dir, installed, {"--set", "store.path=" + dir.Sub("store")});
  }
  // No file: every default; --set applies.
  const CheckRun defaults = CheckConfig(dir, {"--set", "store.ttl=20s"});
  ASSERT_EQ(defaults.rc, 0) << defaults.err;
  EXPECT_NE(defaults.out.find("ttl: 20s"), std::string::npos) << defaults.out;
  EXPECT_NE(defaults.out.find("bucket: 2s"), std::string::npos) << defaults.out;
}

TEST(CheckConfigTest, SecretKafkaPropertiesAreNotPrinted) {
  testing::TempDir dir;
  const CheckRun run = CheckConfig(dir, {"--set", "kafka.properties.sasl.password=hunter2", "--set",
                                         "kafka.properties.client.id=visible-client"});
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out.find("hunter2"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("<hidden>"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("visible-client"), std::string::npos) << run.out;
}

// One bad configuration: its arguments, and the key its one line of error must name.
struct Bad {
  std::string what;
  std::vector<std::string> args;
  std::string names;
};

TEST(CheckConfigTest, EachKindOfBadValueIsExitTwoNamingTheKey) {
  testing::TempDir dir;
  MakeCertificate(dir, "a");
  MakeCertificate(dir, "b");
  WriteFile(dir.Sub("token"), "s3cr3t-token\n");
  WriteFile(dir.Sub("bad-token"), "two words\n");
  WriteFile(dir.Sub("garbage.pem"), "not a certificate\n");
  WriteFile(dir.Sub("a-file"), "");
  WriteFile(dir.Sub("unknown-section.yaml"), "stroe:\n  path: x\n");
  WriteFile(dir.Sub("unknown-key.yaml"), "store:\n  pth: x\n");
  WriteFile(dir.Sub("not-yaml.yaml"), "store: [unclosed\n");
  WriteFile(dir.Sub("wrong-type.yaml"), "kafka:\n  topics: {a: b}\n");
  const std::vector<Bad> cases = {
      {"unknown key (--set)", {"--set", "store.pth=x"}, "store.pth"},
      {"unknown key (file)", {"--config", dir.Sub("unknown-key.yaml")}, "store.pth"},
      {"unknown section", {"--config", dir.Sub("unknown-section.yaml")}, "stroe"},
      {"not YAML", {"--config", dir.Sub("not-yaml.yaml")}, "not-yaml.yaml"},
      {"missing file", {"--config", dir.Sub("absent.yaml")}, "absent.yaml"},
      {"wrong type", {"--config", dir.Sub("wrong-type.yaml")}, "kafka.topics"},
      {"bad duration", {"--set", "store.ttl=ten"}, "store.ttl"},
      {"out of range", {"--set", "keying.salts=0"}, "keying.salts"},
      {"bad enum", {"--set", "store.clock=sundial"}, "store.clock"},
      {"bad size", {"--set", "store.block_cache=10MB"}, "store.block_cache"},
      {"bad boolean", {"--set", "http.allow_open=perhaps"}, "http.allow_open"},
      {"bad address", {"--set", "http.listen=nowhere"}, "http.listen"},
      {"keys that disagree",
       {"--set", "store.ttl=10s", "--set", "store.bucket=1m"},
       "store.bucket"},
      {"one TLS file", {"--set", "http.tls_cert=" + dir.Sub("a.crt")}, "http.tls_key"},
      {"token file missing",
       {"--set", "http.token_file=" + dir.Sub("absent-token")},
       "http.token_file"},
      {"token file a directory", {"--set", "http.token_file=" + dir.path()}, "http.token_file"},
      {"token not a token",
       {"--set", "http.token_file=" + dir.Sub("bad-token")},
       "http.token_file"},
      {"certificate garbage",
       {"--set", "http.tls_cert=" + dir.Sub("garbage.pem"), "--set",
        "http.tls_key=" + dir.Sub("a.key")},
       "http.tls_cert"},
      {"key of another certificate",
       {"--set", "http.tls_cert=" + dir.Sub("a.crt"), "--set", "http.tls_key=" + dir.Sub("b.key")},
       "http.tls_key"},
      {"CA garbage", {"--set", "cluster.peer_ca=" + dir.Sub("garbage.pem")}, "cluster.peer_ca"},
      {"peer token file missing",
       {"--set", "cluster.peer_token_file=" + dir.Sub("absent-token")},
       "cluster.peer_token_file"},
      {"peer token not a token",
       {"--set", "cluster.peer_token_file=" + dir.Sub("bad-token")},
       "cluster.peer_token_file"},
      {"open listen without a token", {"--set", "http.listen=0.0.0.0:8080"}, "http.listen"},
      {"peers without this instance",
       {"--set", "cluster.peers=[127.0.0.1:9001, 127.0.0.1:9002]"},
       "cluster.peers"},
      {"store.path a file", {"--set", "store.path=" + dir.Sub("a-file")}, "store.path"},
      {"store.path under a file",
       {"--set", "store.path=" + dir.Sub("a-file") + "/store"},
       "store.path"},
      {"unknown librdkafka property",
       {"--set", "kafka.properties.no.such.property=1"},
       "no.such.property"},
      {"bad librdkafka value",
       {"--set", "kafka.properties.session.timeout.ms=soon"},
       "session.timeout.ms"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.what);
    const CheckRun run = CheckConfig(dir, bad.args);
    EXPECT_EQ(run.rc, 2) << run.out << run.err;
    EXPECT_EQ(run.out, "") << "nothing on stdout for a bad configuration";
    EXPECT_NE(run.err.find(bad.names), std::string::npos) << run.err;
    EXPECT_EQ(run.err.rfind("hotrow: ", 0), 0u) << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  }
  // And a good TLS pair with a token passes.
  const CheckRun good = CheckConfig(
      dir, {"--set", "http.tls_cert=" + dir.Sub("a.crt"), "--set",
            "http.tls_key=" + dir.Sub("a.key"), "--set", "http.token_file=" + dir.Sub("token"),
            "--set", "http.listen=0.0.0.0:8443", "--set", "cluster.peer_ca=" + dir.Sub("b.crt")});
  EXPECT_EQ(good.rc, 0) << good.err;
}

// A store.path the running user cannot write is refused by check-config and by the start alike
// (exit 2, which the unit does not restart), naming it; not a failed open restarted every 5 s.
// The tests run as root, for whom access(2) calls every directory writable: the paths are ones
// that even root cannot write, in /proc (a directory under it cannot be made, nor a file in it),
// as a read-only mount (the unit's ProtectSystem=strict) refuses. A directory of mode 0555 is
// tried too where the test does not run as root.
TEST(CheckConfigTest, AStorePathTheUserCannotWriteIsExitTwoForCheckConfigAndServe) {
  testing::TempDir dir;
  std::vector<std::string> unwritable = {"/proc/hotrow-store", "/proc/hotrow/store", "/proc"};
  if (geteuid() != 0) {
    const std::string locked = dir.Sub("locked");
    std::filesystem::create_directory(locked);
    ASSERT_EQ(chmod(locked.c_str(), 0555), 0);
    unwritable.push_back(locked);
    unwritable.push_back(locked + "/store");
  }
  for (const std::string& path : unwritable) {
    SCOPED_TRACE(path);
    const CheckRun run = CheckConfig(dir, {"--set", "store.path=" + path});
    EXPECT_EQ(run.rc, 2) << run.out << run.err;
    EXPECT_EQ(run.out, "");
    EXPECT_EQ(run.err.rfind("hotrow: store.path: ", 0), 0u) << run.err;
    EXPECT_NE(run.err.find(path), std::string::npos) << run.err;

    // The start refuses before it opens the store or asks a broker (none listens at port 1).
    const std::string log = dir.Sub("serve.log");
    ChildProcess serve({testing::HotrowBinary(), "serve", "--set", "store.path=" + path, "--set",
                        "kafka.brokers=127.0.0.1:1", "--set", "http.listen=127.0.0.1:0"},
                       log);
    EXPECT_EQ(serve.Wait(), 2) << ReadFile(log);
    EXPECT_NE(ReadFile(log).find("store.path: "), std::string::npos) << ReadFile(log);
  }
  // What the service can make or write passes: a new directory two levels down, an empty one.
  for (const std::string& path : {dir.Sub("new/store"), dir.path()}) {
    const CheckRun run = CheckConfig(dir, {"--set", "store.path=" + path});
    EXPECT_EQ(run.rc, 0) << path << ": " << run.err;
  }
  // Nothing is left behind by the check, and nothing made.
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("new")));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().rfind(".hotrow-check", 0), std::string::npos)
        << entry.path();
  }
}

}  // namespace
}  // namespace hotrow::check_config_test
