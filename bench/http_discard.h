// The HTTP clients of range_http_bench: GETs whose body is discarded as it arrives (counted, not
// parsed), and the CPU of the process's threads by role, to tell the server's share from the
// client's.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <map>
#include <string>

namespace hotrow::bench {

// GETs `target` with curl (`-o /dev/null`: the body discarded as it arrives, read in curl's 16 KiB
// pieces, where httplib's client reads 4 KiB at a time) in a child process; returns the body's
// size in bytes, or aborts when curl fails. Its CPU shows in ChildCpuSeconds.
uint64_t CurlDiscarding(int port, const std::string& target);

// GETs `target` with libcurl in this thread, reading up to 1 MiB per call and discarding the body
// as it arrives; returns the body's size in bytes and adds this thread's CPU seconds to `*cpu_s`
// (when not null). With `keep` (a handle of the caller's), successive GETs to a server reuse its
// connection (keep-alive), as a dashboard's client does; without, the GET has a connection of its
// own.
uint64_t LibcurlDiscarding(int port, const std::string& target, double* cpu_s,
                           CURL* keep = nullptr);

// CPU seconds of the child processes waited for so far (the curl clients).
double ChildCpuSeconds();

// CPU time (ns, from /proc/self/task/*/schedstat) of this process's threads, summed by role:
// "pool" (hotrow-query-*), "http" (the connection threads), "other" (the client and the rest).
// Unlike wall-clock rates, it does not depend on what else the machine runs.
std::map<std::string, double> CpuByRole();

}  // namespace hotrow::bench
