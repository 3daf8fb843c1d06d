#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ingest/schema_registry.h"

// Schemas fetched off the poller: a registry that accepts connections and never answers must not
// hold the thread that reads every partition. The poller asks; a fetcher thread asks the
// registry; the poller's record waits (its partition held, the others read on) until the answer
// is there.
//
// Operation:
// - A lookup whose answer is there returns it at once: a schema (kept, up to a bound: ids and
//   subject versions are immutable), or a failure, remembered for `failure_hold_ms` and returned
//   to every lookup of it meanwhile, so that a registry that fails is asked about one thing at
//   most once per hold, however many partitions wait on it.
// - A lookup of something not asked yet queues one fetch and, when the fetcher was idle, waits
//   for its answer for at most `inline_wait_ms`: a registry that answers at once costs the
//   record no hold. Otherwise, and while the fetch is under way, the lookup fails Busy (not the
//   record's fault: the decoder answers kWait and the record waits). One fetch per schema id or
//   subject version is ever queued or under way.
// - The fetcher thread starts at the first lookup that needs it (check-config makes decoders
//   and asks nothing), and stops, interrupting a request under way, when the source is
//   destroyed.
//
// Limitations: one fetcher thread (one registry connection): while a request hangs, the ones
// queued behind it wait too, each bounded by the registry client's timeout. At most
// kMaxQueuedFetches are queued; past that a lookup fails Busy without queuing.
namespace hotrow::ingest {

// What the fetcher has done, for the ingestor's stats and its poller. Any thread.
struct SchemaFetchStats {
  // Fetches queued or under way.
  std::atomic<uint64_t> waiting{0};
  // Fetches that failed for a reason that is not the record's (unreachable, timed out, 5xx).
  std::atomic<uint64_t> failures{0};
  // Fetches finished, whatever the outcome: when it moves, waiting records may be decoded.
  std::atomic<uint64_t> completed{0};
};

struct SchemaFetcherOptions {
  // How long a lookup that queued a fetch on an idle fetcher waits for its answer. Default:
  // 100 ms.
  int64_t inline_wait_ms = 100;
  // How long a failed fetch is answered from memory before it is asked again. Default: 1 s.
  int64_t failure_hold_ms = 1000;
  // The schemas kept (by count; the oldest dropped past it). Default: 256.
  size_t max_kept = 256;
};

// The most fetches queued at once.
inline constexpr size_t kMaxQueuedFetches = 1000;

// Wraps `source` (which then is used by the fetcher thread only) so that its lookups are made
// off the caller's thread as above. `stats` may be null.
//
// Thread-safety: the returned source may be used from any thread.
std::unique_ptr<SchemaSource> FetchInBackground(std::unique_ptr<SchemaSource> source,
                                                std::shared_ptr<SchemaFetchStats> stats,
                                                SchemaFetcherOptions options = {});

}  // namespace hotrow::ingest
