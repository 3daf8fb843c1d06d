#pragma once

#include <cstddef>
#include <functional>

#include "common/status.h"
#include "query/thread_pool.h"

namespace hotrow::query {

// Runs task(0) ... task(count - 1), each once, on at most `max_workers` threads of `pool` and on
// the calling thread, which takes tasks too (so a query never waits for a pool thread that is
// busy elsewhere, and max_workers == 0 runs everything on the caller). Tasks are claimed in
// index order. The first failing task fails the run: tasks not yet started are skipped, and that
// Status is returned once every started task has finished. Used by the queries that aggregate per
// (bucket, salt) and merge the partial results on the caller (latest of every id, series:
// DESIGN.md "Round 3 notes"), and by the last-N cache's walk of every id (a task per group of
// shards).
//
// Returns only when no task is running: a task may use anything the caller owns. A pool thread
// that starts after every task was claimed touches nothing of the caller's.
//
// Thread-safety: `task` runs on several threads at once, each call with its own index.
Status RunSaltTasks(ThreadPool* pool, int max_workers, size_t count,
                    const std::function<Status(size_t index)>& task);

}  // namespace hotrow::query
