#include "query/cache_arena.h"

#include <cstring>

namespace hotrow::query {

CacheArena::CacheArena(size_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}

uint32_t CacheArena::NewChunk(uint32_t capacity) {
  uint32_t c;
  if (!free_chunks_.empty()) {
    c = free_chunks_.back();
    free_chunks_.pop_back();
  } else {
    c = static_cast<uint32_t>(chunks_.size());
    chunks_.emplace_back();
  }
  Chunk& chunk = chunks_[c];
  chunk.data = std::make_unique_for_overwrite<char[]>(capacity);
  chunk.capacity = capacity;
  chunk.used = 0;
  chunk.dead = 0;
  chunk_memory_ += capacity;
  return c;
}

void CacheArena::Release(uint32_t c) {
  Chunk& chunk = chunks_[c];
  chunk_memory_ -= chunk.capacity;
  chunk.data.reset();
  chunk.capacity = chunk.used = chunk.dead = 0;
  free_chunks_.push_back(c);
}

void CacheArena::Seal() {
  Chunk& chunk = chunks_[open_];
  const uint32_t c = open_;
  open_ = kNone;
  if (chunk.used == chunk.dead) {
    Release(c);
    return;
  }
  sealed_dead_bytes_ += chunk.dead;
  if (2 * chunk.dead >= chunk.used && !chunk.pending) {
    chunk.pending = true;
    pending_.push_back(c);
  }
}

ArenaRef CacheArena::Append(uint32_t owner, std::string_view bytes) {
  const size_t size = RecordBytes(bytes.size());
  uint32_t c;
  if (size > chunk_bytes_ / 4) {
    c = NewChunk(static_cast<uint32_t>(size));  // its own chunk, sealed from the start
  } else {
    if (open_ == kNone || chunks_[open_].used + size > chunks_[open_].capacity) {
      if (open_ != kNone) Seal();
      open_ = NewChunk(static_cast<uint32_t>(chunk_bytes_));
    }
    c = open_;
  }
  Chunk& chunk = chunks_[c];
  char* at = chunk.data.get() + chunk.used;
  const uint32_t length = static_cast<uint32_t>(bytes.size());
  std::memcpy(at, &owner, 4);
  std::memcpy(at + 4, &length, 4);
  if (!bytes.empty()) std::memcpy(at + 8, bytes.data(), bytes.size());
  const ArenaRef ref{c, chunk.used};
  chunk.used += static_cast<uint32_t>(size);
  live_bytes_ += size;
  return ref;
}

std::string_view CacheArena::Read(ArenaRef ref) const {
  const char* at = chunks_[ref.chunk].data.get() + ref.offset;
  uint32_t length;
  std::memcpy(&length, at + 4, 4);
  return std::string_view(at + 8, length);
}

bool CacheArena::Rewrite(ArenaRef ref, size_t length, std::string_view bytes) {
  if (RecordBytes(bytes.size()) != RecordBytes(length)) return false;
  char* at = chunks_[ref.chunk].data.get() + ref.offset;
  const uint32_t new_length = static_cast<uint32_t>(bytes.size());
  std::memcpy(at + 4, &new_length, 4);
  if (!bytes.empty()) std::memcpy(at + 8, bytes.data(), bytes.size());
  return true;
}

void CacheArena::Free(ArenaRef ref, size_t length) {
  const uint32_t size = static_cast<uint32_t>(RecordBytes(length));
  Chunk& chunk = chunks_[ref.chunk];
  chunk.dead += size;
  live_bytes_ -= size;
  if (ref.chunk == open_) {
    // The open chunk's dead records are not counted; wholly dead, it starts over.
    if (chunk.dead == chunk.used) chunk.used = chunk.dead = 0;
    return;
  }
  sealed_dead_bytes_ += size;
  if (chunk.dead == chunk.used) {
    sealed_dead_bytes_ -= chunk.dead;
    if (chunk.pending) {
      // Released now; Evacuate skips it. Its index is not reused while it is pending.
      chunk_memory_ -= chunk.capacity;
      chunk.data.reset();
      chunk.capacity = chunk.used = chunk.dead = 0;
      return;
    }
    Release(ref.chunk);
    return;
  }
  if (2 * chunk.dead >= chunk.used && !chunk.pending) {
    chunk.pending = true;
    pending_.push_back(ref.chunk);
  }
}

}  // namespace hotrow::query
