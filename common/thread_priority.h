#pragma once

namespace hotrow {

// Answers never wait behind ingest (DESIGN.md, "No thread waits on a socket"): the threads that
// write the store (ingest's writers, RocksDB's flush and compaction threads, the last-N cache's
// apply thread) run under Linux's SCHED_BATCH policy, the HTTP I/O threads and the query workers
// under the default one.
//
// SCHED_BATCH, not a higher nice value: a batch thread keeps its full share of the CPU (a store
// under heavy queries still flushes, compacts and deletes dropped buckets' files; at nice 19 a
// loaded machine starved those for more than 30 s), but it never preempts another thread when it
// wakes, and the scheduler gives it longer, later slices. A woken I/O thread therefore runs at once
// instead of queueing behind a writer's slice, which is what an answer's latency needs.
//
// Sets the calling thread's policy (not the process's); once per thread, later calls are free.
// False when the kernel refused (logged once per process); the thread then runs as before.
bool RunAsBatchThread();

// Whether thread `tid` (a Linux thread id; 0: the calling thread) runs under SCHED_BATCH.
bool IsBatchThread(int tid = 0);

}  // namespace hotrow
