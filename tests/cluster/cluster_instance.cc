#include "tests/cluster/cluster_instance.h"

// GCC 12 reports a false -Wrestrict in std::string's inlined copies of "literal" + string
// (GCC bug 105329).
#ifndef __clang__  // clang has no -Wrestrict (the sanitizer builds use it)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "keying/index_key.h"

namespace hotrow::cluster::testing {

std::unique_ptr<Instance> Instance::Start(const InstanceOptions& options) {
  std::unique_ptr<Instance> in(new Instance(options));
  store::StoreOptions store_options;
  store_options.path = options.dir + "/store";
  store_options.salts = 2;
  store_options.wall_clock = options.clock;
  store_options.block_cache_bytes = 8 << 20;
  store_options.write_buffer_bytes = 8 << 20;
  store_options.index_fields = options.index_fields;
  auto store = store::EventStore::Open(store_options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return nullptr;
  in->store_ = std::move(store).value();
  auto credentials = access::Credentials::Open(options.credentials);
  EXPECT_TRUE(credentials.ok()) << credentials.status().ToString();
  if (!credentials.ok()) return nullptr;
  in->credentials_ = std::move(credentials).value();
  ingest::OwnershipOptions ownership;
  ownership.max_staleness_ms = options.max_staleness_ms;
  ownership.clock = options.clock;
  in->ownership_ = std::make_unique<ingest::PartitionOwnership>(in->store_.get(), ownership);
  ClusterOptions cluster;
  cluster.peers = options.peers;
  cluster.self = in->address();
  cluster.credentials = in->credentials_.get();
  cluster.peer_timeout_ms = options.peer_timeout_ms;
  cluster.group_id = options.group;
  cluster.topics = options.topics;
  cluster.brokers = options.brokers;
  cluster.route_by_key = options.route_by_key;
  cluster.route_refresh_ms = options.route_refresh_ms;
  cluster.monotonic_clock = options.monotonic_clock;
  in->cluster_ = std::make_unique<Cluster>(cluster, in->ownership_.get(), in->store_.get());
  if (options.standby) {
    in->followed_ = std::make_unique<ingest::PartitionOwnership>(in->store_.get(), ownership);
    in->cluster_->set_standby(in->followed_.get(), nullptr);
  }
  query::QueryOptions q;
  q.threads = 1;
  in->engine_ = std::make_unique<query::QueryEngine>(in->store_.get(), q);
  in->cluster_->set_engine(in->engine_.get());
  in->metrics_ = std::make_unique<http::Metrics>();
  if (in->credentials_->has_token()) {
    in->auth_ = std::make_unique<http::Authenticator>(in->credentials_.get(), in->metrics_.get());
  }
  http::HttpServerOptions http_options;
  http_options.listen = in->address();
  http_options.max_queries = 6;
  http::HttpBackend backend{in->store_.get(), in->engine_.get(), nullptr, in->metrics_.get()};
  backend.auth = in->auth_.get();
  backend.cluster = in->cluster_.get();
  backend.credentials = in->credentials_.get();
  auto http = http::HttpServer::Start(http_options, backend);
  EXPECT_TRUE(http.ok()) << http.status().ToString();
  if (!http.ok()) return nullptr;
  in->http_ = std::move(http).value();
  return in;
}

Instance::~Instance() {
  if (http_) http_->Stop();
}

namespace {

// Records a run of `partition` from its first record (its window whole) at `next_offset`.
void WriteWholeRun(store::EventStore* store, const std::string& topic, int32_t partition,
                   int64_t next_offset) {
  store::WriteBatchInput batch;
  batch.run_starts[store::TopicPartition{topic, partition}] =
      store::PartitionRun{0, store::PartitionRun::kHoldsAll};
  // No record yet: the run is recorded with an offset of 0 (nothing stored, nothing lacking).
  if (next_offset > 0) batch.next_offsets[store::TopicPartition{topic, partition}] = next_offset;
  store::WriteOutcome outcome;
  ASSERT_TRUE(store->Write(batch, &outcome).ok());
}

}  // namespace

void Instance::Follow(const std::string& topic, int32_t partition, int64_t next_offset) {
  ASSERT_NE(followed_, nullptr) << "InstanceOptions::standby is not set";
  WriteWholeRun(store_.get(), topic, partition, next_offset);
  followed_->Assigned(topic, partition, next_offset, next_offset);
  followed_->UpdatePosition(topic, partition, next_offset, next_offset);
}

void Instance::Serve(const std::string& topic, int32_t partition, int64_t next_offset) {
  store::WriteBatchInput batch;
  batch.run_starts[store::TopicPartition{topic, partition}] =
      store::PartitionRun{0, store::PartitionRun::kHoldsAll};
  batch.next_offsets[store::TopicPartition{topic, partition}] = next_offset;
  if (next_offset > 0) {
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
  } else {
    // No record yet: the run is recorded with an offset of 0 (nothing stored, nothing lacking).
    batch.next_offsets.clear();
    store::WriteOutcome outcome;
    ASSERT_TRUE(store_->Write(batch, &outcome).ok());
  }
  ownership_->Assigned(topic, partition, next_offset, next_offset);
  ownership_->UpdatePosition(topic, partition, next_offset, next_offset);
}

void Instance::Write(const std::vector<hotrow::testing::TestEvent>& events,
                     const std::vector<std::string>& index) {
  store::WriteBatchInput batch;
  for (const hotrow::testing::TestEvent& e : events) {
    Result<store::Row> row = hotrow::testing::MakeRow(store_.get(), e);
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    for (const std::string& field : index) row->index.push_back({field, e.id});
    batch.rows.push_back(std::move(row).value());
    int64_t& next = batch.next_offsets[store::TopicPartition{e.topic, e.partition}];
    next = std::max(next, e.offset + 1);
  }
  store::WriteOutcome outcome;
  ASSERT_TRUE(store_->Write(batch, &outcome).ok());
  ASSERT_EQ(outcome.stored, events.size());
  for (const auto& [tp, next] : batch.next_offsets) {
    ownership_->UpdatePosition(tp.topic, tp.partition, next, next);
  }
}

Answer Get(int port, const std::string& target, const std::string& token,
           const std::string& ca_file) {
  const std::string url =
      std::string(ca_file.empty() ? "http" : "https") + "://127.0.0.1:" + std::to_string(port);
  httplib::Client client(url);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(30));
  if (!token.empty()) client.set_bearer_token_auth(token);
  if (!ca_file.empty()) {
    client.enable_server_certificate_verification(true);
    client.set_ca_cert_path(ca_file);
  }
  Answer a;
  httplib::Result res = client.Get(target);
  if (!res) return a;
  a.status = res->status;
  a.body = res->body;
  return a;
}

namespace {

void Run(const std::string& command, const hotrow::testing::TempDir& dir) {
  const std::string log = dir.Sub("openssl.log");
  const int rc = std::system((command + " >" + log + " 2>&1").c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << command << "\n" << text;
}

}  // namespace

void MakeCa(const hotrow::testing::TempDir& dir, const std::string& name) {
  Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "
      "/CN=" +
          name + " -keyout " + dir.Sub(name + ".key") + " -out " + dir.Sub(name + ".crt"),
      dir);
}

void MakeLeaf(const hotrow::testing::TempDir& dir, const std::string& ca, const std::string& leaf) {
  Run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 "
      "-keyout " +
          dir.Sub(leaf + ".key") + " -out " + dir.Sub(leaf + ".csr"),
      dir);
  std::ofstream(dir.Sub(leaf + ".ext")) << "subjectAltName=IP:127.0.0.1\n";
  Run("openssl x509 -req -days 2 -in " + dir.Sub(leaf + ".csr") + " -CA " + dir.Sub(ca + ".crt") +
          " -CAkey " + dir.Sub(ca + ".key") + " -CAcreateserial -extfile " +
          dir.Sub(leaf + ".ext") + " -out " + dir.Sub(leaf + ".crt"),
      dir);
}

}  // namespace hotrow::cluster::testing
