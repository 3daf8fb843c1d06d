#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace hotrow::query {

// Where a record lies in a CacheArena: its chunk and its byte offset in it.
struct ArenaRef {
  uint32_t chunk = 0;
  uint32_t offset = 0;
  bool operator==(const ArenaRef&) const = default;
};

// The payloads (and long ids) of one shard of the last-N cache (query/last_cache.h), appended to
// chunks of memory instead of a heap allocation each: a write copies its payload to the end of
// the open chunk, which the previous write touched, where a buffer of its own was a malloc and a
// cache miss.
//
// Layout. A chunk is `chunk_bytes` long (a record longer than a quarter of that gets a chunk of
// its own size); a record is its owner (a number the caller gives, here the entry's), its length
// and its bytes, padded to 8:
//
//   | owner u32 | length u32 | bytes ... | pad to 8 |
//
// Reclaiming. A record the caller no longer uses is freed (Free), which only counts it dead in
// its chunk. A chunk wholly dead is released at once (the open one is reset). A sealed chunk (one
// no longer appended to) that is at least half dead is evacuated by the next Evacuate: its live
// records are copied to the open chunk and the chunk released. Which records are live the arena
// cannot tell; the caller's `locate(owner, ref)` answers where it keeps `ref` (to repoint it), or
// null when it no longer uses it. So the memory of sealed chunks is at most twice their live
// records, and each byte is copied at most once per time it outlives half of its chunk.
//
// Counted bytes (bytes()): the live records, and the dead ones of sealed chunks (memory held until
// their chunk is evacuated); the open chunk's dead records and unused tail, at most one chunk, are
// not counted, so that what a shard holds counts what it holds, whatever its churn.
//
// Not thread-safe: the shard's lock guards it.
class CacheArena {
 public:
  // REQUIRES: chunk_bytes a multiple of 8, at least 64.
  explicit CacheArena(size_t chunk_bytes);
  CacheArena(const CacheArena&) = delete;
  CacheArena& operator=(const CacheArena&) = delete;

  // Appends a record of `bytes` owned by `owner`. May open a chunk; never moves another record.
  ArenaRef Append(uint32_t owner, std::string_view bytes);
  // The bytes of the record at `ref`. REQUIRES: live.
  std::string_view Read(ArenaRef ref) const;
  // Puts `bytes` in place of the record at `ref` (of `length` bytes) when they take the same room
  // (RecordBytes): a full entry's newest event in its oldest's place, with no dead record and no
  // append. False (nothing changed) when they do not. REQUIRES: live.
  bool Rewrite(ArenaRef ref, size_t length, std::string_view bytes);
  // Asks the CPU to fetch the record at `ref` for writing (Rewrite): for a prefetch only.
  void Prefetch(ArenaRef ref) const {
    __builtin_prefetch(chunks_[ref.chunk].data.get() + ref.offset, 1);
  }
  // Counts the record at `ref` (of `length` bytes, as appended) dead. REQUIRES: live.
  void Free(ArenaRef ref, size_t length);
  // Evacuates every sealed chunk found at least half dead since the last call. `locate(owner, ref)`
  // returns the caller's ArenaRef* that holds `ref` (which is repointed), or null when the record
  // is no longer used.
  template <typename Locate>
  void Evacuate(Locate locate);

  // The bytes counted against the cache's cap (above).
  size_t bytes() const { return live_bytes_ + sealed_dead_bytes_; }
  // The memory the chunks hold.
  size_t chunk_memory() const { return chunk_memory_; }
  size_t chunks() const { return chunks_.size() - free_chunks_.size(); }
  // Chunks evacuated since construction.
  uint64_t evacuated() const { return evacuated_; }

  // A record's size in its chunk, header and padding included.
  static size_t RecordBytes(size_t length) { return (8 + length + 7) & ~size_t{7}; }

 private:
  struct Chunk {
    std::unique_ptr<char[]> data;  // null: released, its index on free_chunks_
    uint32_t capacity = 0;
    uint32_t used = 0;
    uint32_t dead = 0;
    bool pending = false;  // on pending_
  };
  static constexpr uint32_t kNone = UINT32_MAX;

  uint32_t NewChunk(uint32_t capacity);
  void Release(uint32_t chunk);
  // Seals the open chunk (none is open after it).
  void Seal();

  const size_t chunk_bytes_;
  std::vector<Chunk> chunks_;
  std::vector<uint32_t> free_chunks_;  // indices of released chunks, reused first
  std::vector<uint32_t> pending_;      // sealed chunks at least half dead
  uint32_t open_ = kNone;              // the chunk appended to
  size_t live_bytes_ = 0;
  size_t sealed_dead_bytes_ = 0;
  size_t chunk_memory_ = 0;
  uint64_t evacuated_ = 0;
};

template <typename Locate>
void CacheArena::Evacuate(Locate locate) {
  while (!pending_.empty()) {
    const uint32_t c = pending_.back();
    pending_.pop_back();
    chunks_[c].pending = false;
    if (chunks_[c].data == nullptr) {  // wholly freed while pending: its index is free now
      free_chunks_.push_back(c);
      continue;
    }
    // The chunk's memory stays put while records are appended elsewhere (chunks_ may grow).
    const char* base = chunks_[c].data.get();
    const uint32_t used = chunks_[c].used;
    for (uint32_t at = 0; at < used;) {
      uint32_t owner, length;
      __builtin_memcpy(&owner, base + at, 4);
      __builtin_memcpy(&length, base + at + 4, 4);
      ArenaRef* holder = locate(owner, ArenaRef{c, at});
      if (holder != nullptr) {
        // Moved: live here before, live there after; the old copy's bytes go with the chunk.
        *holder = Append(owner, std::string_view(base + at + 8, length));
        live_bytes_ -= RecordBytes(length);
      }
      at += static_cast<uint32_t>(RecordBytes(length));
    }
    // What was live in it now lives in the open chunk; what was dead goes with it.
    sealed_dead_bytes_ -= chunks_[c].dead;
    Release(c);
    ++evacuated_;
  }
}

}  // namespace hotrow::query
