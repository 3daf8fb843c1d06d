#pragma once

// cluster_bench's standby section (CONTRACT.md "Standby replicas"): what `cluster.standby_replicas`
// buys when a member dies, and what it costs at ingest. Not in bench/run's default run (it builds
// a window of 2M events five times: about 10-15 minutes on a 2-core machine); `cluster_bench
// --section standby` runs it alone, HOTROW_BENCH_STANDBY=1 adds it to a whole cluster_bench run.

#include <cstdint>
#include <string>

namespace hotrow::bench {

struct StandbyFlags {
  int64_t records = 2'000'000;  // the window built before the kill (the mock holds ~200k/partition)
  int partitions = 16;
  int devices = 100'000;
  int rounds = 2;            // alternations of the 1-standby and no-standby builds, timed
  int64_t live_rate = 2000;  // records/s of the producer that never stops during the kill
  int after_settled_s = 30;  // the client keeps asking this long after the survivors settled
  int checked_ids = 8;       // ids whose range over the backlog is checked exact
};

// Reads --standby-records, --standby-partitions, --standby-devices, --standby-rounds,
// --standby-rate and --standby-after-s from argv (pairs; others are left to the caller).
StandbyFlags ParseStandbyFlags(int argc, char** argv);

// Runs the section against `binary` (`hotrow`), with an embedded broker of its own; prints its
// figures and RATIO lines and leaves OutPath("cluster_bench_standby.md"). Dies on failure.
void RunStandbySection(const std::string& binary, const StandbyFlags& flags);

}  // namespace hotrow::bench
