#include "bench/http_discard.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

namespace hotrow::bench {

// GETs `target` with curl (`-o /dev/null`: the body discarded as it arrives, read in curl's 16 KiB
// pieces, where httplib's client reads 4 KiB at a time) in a child process; returns the body's
// size in bytes, or aborts when curl fails. Its CPU shows in ChildCpuSeconds.
uint64_t CurlDiscarding(int port, const std::string& target) {
  const std::string command =
      "curl --silent --show-error --fail --max-time 120 -o /dev/null "
      "-w '%{size_download}' 'http://127.0.0.1:" +
      std::to_string(port) + target + "'";
  FILE* out = popen(command.c_str(), "r");
  unsigned long long bytes = 0;
  const bool read = out != nullptr && std::fscanf(out, "%llu", &bytes) == 1;
  if (out == nullptr || pclose(out) != 0 || !read) {
    std::fprintf(stderr, "curl GET %s failed\n", target.c_str());
    std::abort();
  }
  return bytes;
}

// GETs `target` with libcurl in this thread, reading up to 1 MiB per call and discarding the body
// as it arrives; returns the body's size in bytes and adds this thread's CPU seconds to `*cpu_s`
// (when not null). With `keep` (a handle of the caller's), successive GETs to a server reuse its
// connection (keep-alive), as a dashboard's client does; without, the GET has a connection of its
// own.
uint64_t LibcurlDiscarding(int port, const std::string& target, double* cpu_s, CURL* keep) {
  std::unique_ptr<CURL, void (*)(CURL*)> own(keep == nullptr ? curl_easy_init() : nullptr,
                                             curl_easy_cleanup);
  CURL* curl = keep != nullptr ? keep : own.get();
  if (curl == nullptr) std::abort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + target;
  uint64_t bytes = 0;
  using Write = size_t (*)(char*, size_t, size_t, void*);
  const Write count = [](char*, size_t size, size_t n, void* total) {
    *static_cast<uint64_t*>(total) += size * n;
    return size * n;
  };
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 1L << 20);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, count);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &bytes);
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 120L);
  timespec t0{}, t1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  const CURLcode rc = curl_easy_perform(curl);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  if (rc != CURLE_OK) {
    std::fprintf(stderr, "libcurl GET %s failed: %s\n", target.c_str(), curl_easy_strerror(rc));
    std::abort();
  }
  if (cpu_s != nullptr) *cpu_s += (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  return bytes;
}

// CPU seconds of the child processes waited for so far (the curl clients).
double ChildCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// CPU time (ns, from /proc/self/task/*/schedstat) of this process's threads, summed by role:
// "pool" (hotrow-query-*), "http" (the connection threads), "other" (the client and the rest).
// Unlike wall-clock rates, it does not depend on what else the machine runs.
std::map<std::string, double> CpuByRole() {
  std::map<std::string, double> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string comm;
    std::getline(std::ifstream(task.path() / "comm"), comm);
    double ns = 0;
    std::ifstream(task.path() / "schedstat") >> ns;
    const std::string role = comm.rfind("hotrow-query", 0) == 0                     ? "pool"
                             : comm.rfind("http-", 0) == 0 && comm != "http-listen" ? "http"
                                                                                    : "other";
    out[role] += ns / 1e9;
  }
  return out;
}

}  // namespace hotrow::bench
