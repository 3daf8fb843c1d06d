// The decoders' cache of made schemas (ingest/schema_cache.h): bounded by count, the least
// recently used evicted; failures remembered for their ttl, never evicting a made schema.

#include "ingest/schema_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace hotrow::ingest::schema_cache_test {
namespace {

TEST(SchemaCacheTest, TheLeastRecentlyUsedIsEvictedPastTheBound) {
  SchemaCache<std::string> cache(3);
  for (uint32_t id = 1; id <= 3; ++id) {
    cache.Insert(id, std::make_unique<std::string>("s" + std::to_string(id)));
  }
  ASSERT_NE(cache.Find(1), nullptr);  // 1 is now the most recently used; 2 the least
  EXPECT_EQ(*cache.Insert(4, std::make_unique<std::string>("s4")), "s4");
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.Find(2), nullptr);
  EXPECT_EQ(*cache.Find(1), "s1");
  EXPECT_EQ(*cache.Find(3), "s3");
  EXPECT_EQ(*cache.Find(4), "s4");
  // A hostile run of new ids keeps the bound.
  for (uint32_t id = 100; id < 10'100; ++id) cache.Insert(id, std::make_unique<std::string>());
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_NE(cache.Find(10'099), nullptr);
  EXPECT_EQ(cache.Find(4), nullptr);
}

TEST(SchemaCacheTest, FailuresAreRememberedForTheirTtl) {
  SchemaCache<std::string> remembers(10, /*failure_ttl_ms=*/60'000);
  EXPECT_EQ(remembers.Failure(7), nullptr);
  remembers.RememberFailure(7, "schema id 7: no such reference");
  ASSERT_NE(remembers.Failure(7), nullptr);
  EXPECT_EQ(*remembers.Failure(7), "schema id 7: no such reference (remembered)");
  EXPECT_EQ(remembers.Failure(8), nullptr);
  EXPECT_EQ(remembers.size(), 0u);  // a failure is not a made schema
  SchemaCache<std::string> forgets(10, /*failure_ttl_ms=*/0);
  forgets.RememberFailure(7, "why");
  EXPECT_EQ(forgets.Failure(7), nullptr);  // a ttl of 0 remembers nothing
}

}  // namespace
}  // namespace hotrow::ingest::schema_cache_test
