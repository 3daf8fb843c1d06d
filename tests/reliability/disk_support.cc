#include "tests/reliability/disk_support.h"

#include <httplib.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hotrow::testing {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TmpfsMount::TmpfsMount(const std::string& path, int size_mb) : path_(path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  const std::string options = "size=" + std::to_string(size_mb) + "m";
  if (mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) == 0) {
    mounted_ = true;
    return;
  }
  const int err = errno;
  permission_denied_ = err == EPERM || err == EACCES;
  error_ = "mount -t tmpfs -o " + options + " tmpfs " + path + ": " + std::strerror(err);
}

TmpfsMount::~TmpfsMount() {
  if (!mounted_) return;
  // A child that still holds a file (a serve the test could not stop) keeps the mount busy:
  // detach it then, the kernel frees it when the last user goes.
  if (umount2(path_.c_str(), 0) != 0) umount2(path_.c_str(), MNT_DETACH);
}

uint64_t TmpfsMount::FreeBytes() const {
  struct statvfs st;
  if (statvfs(path_.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

uint64_t FillUntilFull(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::setvbuf(f, nullptr, _IONBF, 0);
  const std::string chunk(64 << 10, 'f');
  uint64_t written = 0;
  while (true) {
    const size_t n = std::fwrite(chunk.data(), 1, chunk.size(), f);
    written += n;
    if (n < chunk.size()) break;
  }
  std::fclose(f);
  return written;
}

CommandResult RunHotrow(const std::vector<std::string>& args, const std::string& stderr_path,
                        std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {HotrowBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult result;
  {
    ChildProcess child(argv, stderr_path);
    std::string line;
    while (child.ReadLine(&line, timeout)) {  // drain stdout so the child never blocks on it
    }
    result.exit_code = child.Wait(timeout);
    if (result.exit_code == -1) child.Signal(SIGKILL);
  }
  result.stderr_text = ReadWholeFile(stderr_path);
  return result;
}

ServeProcess::ServeProcess(const std::string& config_path, const std::string& log_path)
    : log_path_(log_path),
      child_({HotrowBinary(), "serve", "--config", config_path}, log_path) {}

ServeProcess::~ServeProcess() {
  if (child_.Running()) Stop();
}

bool ServeProcess::AwaitStarted(std::chrono::milliseconds timeout) {
  static constexpr char kMarker[] = "HTTP on http://";
  std::string address;
  const bool found = WaitFor(
      [&] {
        const std::string log = Log();
        const size_t at = log.find(kMarker);
        if (at != std::string::npos) {
          const size_t begin = at + sizeof(kMarker) - 1;
          address = log.substr(begin, log.find_first_of(", \n", begin) - begin);
          return true;
        }
        return !child_.Running();
      },
      timeout, std::chrono::milliseconds(50));
  const size_t colon = address.rfind(':');
  if (!found || colon == std::string::npos) return false;
  host_ = address.substr(0, colon);
  port_ = std::stoi(address.substr(colon + 1));
  return true;
}

bool ServeProcess::AwaitReady(std::chrono::milliseconds timeout) {
  return WaitFor([&] { return Get("/readyz").first == 200 || !child_.Running(); }, timeout,
                 std::chrono::milliseconds(100)) &&
         child_.Running();
}

std::pair<int, std::string> ServeProcess::Get(const std::string& target) const {
  if (port_ == 0) return {-1, ""};
  httplib::Client client(host_, port_);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(30));
  httplib::Result res = client.Get(target);
  if (!res) return {-1, ""};
  return {res->status, res->body};
}

nlohmann::json ServeProcess::Stats() const {
  auto [status, body] = Get("/v1/stats");
  if (status != 200) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();
}

int ServeProcess::Stop(std::chrono::milliseconds timeout) {
  child_.Signal(SIGTERM);
  const int rc = child_.Wait(timeout);
  if (rc == -1) child_.Signal(SIGKILL);
  return rc;
}

}  // namespace hotrow::testing
