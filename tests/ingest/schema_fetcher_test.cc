// Schemas fetched off the caller's thread (ingest/schema_fetcher.h): one fetch per schema in
// flight, a registry that hangs never holds the caller, failures held, the thread stopped.

#include "ingest/schema_fetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "tests/support/process.h"

namespace hotrow::ingest {
namespace {

using hotrow::testing::WaitFor;

// A registry whose answers a test holds back: ById blocks while the gate is closed (or until
// Interrupt), then answers `status` (a schema when Ok).
class GatedRegistry final : public SchemaSource {
 public:
  Result<RegistrySchema> ById(uint32_t id, bool /*serialized*/) override {
    calls_.fetch_add(1);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_ || interrupted_; });
    if (interrupted_) return Status::IOError("interrupted");
    if (!status_.ok()) return status_;
    return RegistrySchema{"schema " + std::to_string(id), "AVRO", {}};
  }
  Result<RegistrySchema> BySubjectVersion(const std::string&, int, bool) override {
    return Status::NotFound("no subjects here");
  }
  void Interrupt() override {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
    cv_.notify_all();
  }
  void Open(Status status = Status::Ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    status_ = std::move(status);
    cv_.notify_all();
  }
  int calls() const { return calls_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  bool interrupted_ = false;
  Status status_;
  std::atomic<int> calls_{0};
};

TEST(SchemaFetcherTest, AHungRegistryNeverHoldsTheCallerAndIsAskedOncePerSchema) {
  auto registry = std::make_unique<GatedRegistry>();
  GatedRegistry* gated = registry.get();
  auto stats = std::make_shared<SchemaFetchStats>();
  SchemaFetcherOptions options;
  options.inline_wait_ms = 0;
  auto source = FetchInBackground(std::move(registry), stats, options);

  for (int i = 0; i < 50; ++i) {
    Result<RegistrySchema> r = source->ById(7, false);
    ASSERT_EQ(r.status().code(), Status::Code::kBusy) << r.status().ToString();
  }
  ASSERT_TRUE(WaitFor([&] { return gated->calls() == 1; }));
  for (int i = 0; i < 50; ++i) ASSERT_FALSE(source->ById(7, false).ok());
  EXPECT_EQ(stats->waiting.load(), 1u);
  // Another id queues behind the hung request, once.
  EXPECT_FALSE(source->ById(8, false).ok());
  EXPECT_FALSE(source->ById(8, false).ok());
  EXPECT_EQ(stats->waiting.load(), 2u);

  gated->Open();
  ASSERT_TRUE(WaitFor([&] { return stats->completed.load() == 2; }));
  Result<RegistrySchema> r = source->ById(7, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->schema, "schema 7");
  EXPECT_TRUE(source->ById(8, false).ok());
  EXPECT_EQ(gated->calls(), 2);  // nothing asked twice
  EXPECT_EQ(stats->waiting.load(), 0u);
  EXPECT_EQ(stats->failures.load(), 0u);
}

TEST(SchemaFetcherTest, AnAnsweringRegistryIsAnsweredInline) {
  auto registry = std::make_unique<GatedRegistry>();
  registry->Open();
  SchemaFetcherOptions options;
  options.inline_wait_ms = 600000;  // the wait ends with the answer
  auto source = FetchInBackground(std::move(registry), nullptr, options);
  Result<RegistrySchema> r = source->ById(3, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->schema, "schema 3");
  // A 404 is the record's fault and comes back as it is.
  EXPECT_EQ(source->BySubjectVersion("s", 1, false).status().code(), Status::Code::kNotFound);
}

TEST(SchemaFetcherTest, AFailureIsHeldForEveryCallerThenAskedAgain) {
  auto registry = std::make_unique<GatedRegistry>();
  GatedRegistry* gated = registry.get();
  registry->Open(Status::IOError("registry answered 503"));
  auto stats = std::make_shared<SchemaFetchStats>();
  SchemaFetcherOptions options;
  options.inline_wait_ms = 600000;
  options.failure_hold_ms = 600000;
  auto source = FetchInBackground(std::move(registry), stats, options);
  for (int i = 0; i < 20; ++i) {
    Result<RegistrySchema> r = source->ById(5, false);
    ASSERT_EQ(r.status().code(), Status::Code::kIOError) << r.status().ToString();
  }
  EXPECT_EQ(gated->calls(), 1);
  EXPECT_EQ(stats->failures.load(), 1u);

  options.failure_hold_ms = 0;  // nothing held: each lookup asks again
  auto registry2 = std::make_unique<GatedRegistry>();
  GatedRegistry* gated2 = registry2.get();
  registry2->Open(Status::IOError("registry answered 503"));
  auto again = FetchInBackground(std::move(registry2), nullptr, options);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(again->ById(5, false).ok());
  EXPECT_EQ(gated2->calls(), 3);
}

TEST(SchemaFetcherTest, DestroyingInterruptsARequestThatHangs) {
  auto registry = std::make_unique<GatedRegistry>();
  GatedRegistry* gated = registry.get();
  SchemaFetcherOptions options;
  options.inline_wait_ms = 0;
  auto source = FetchInBackground(std::move(registry), nullptr, options);
  EXPECT_FALSE(source->ById(1, false).ok());
  ASSERT_TRUE(WaitFor([&] { return gated->calls() == 1; }));
  source.reset();  // returns: the hung request was interrupted and the thread joined
}

}  // namespace
}  // namespace hotrow::ingest
