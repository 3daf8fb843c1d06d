#include "ingest/schema_registry.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace hotrow::ingest {

Result<RegistrySchema> ParseRegistrySchema(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("schema") || !j["schema"].is_string()) {
    return Status::Corruption("the registry's answer is not an object with a \"schema\" string");
  }
  RegistrySchema out;
  out.schema = j["schema"].get<std::string>();
  out.schema_type = "AVRO";
  if (auto it = j.find("schemaType"); it != j.end() && it->is_string()) {
    out.schema_type = it->get<std::string>();
  }
  if (auto it = j.find("references"); it != j.end() && it->is_array()) {
    for (const nlohmann::json& ref : *it) {
      if (!ref.is_object() || !ref.value("name", nlohmann::json()).is_string() ||
          !ref.value("subject", nlohmann::json()).is_string() ||
          !ref.value("version", nlohmann::json()).is_number_integer()) {
        return Status::Corruption("the registry's answer has a malformed reference");
      }
      out.references.push_back({ref["name"].get<std::string>(), ref["subject"].get<std::string>(),
                                ref["version"].get<int>()});
    }
  }
  return out;
}

namespace {

// Percent-encodes a path segment (a subject name).
std::string EncodeSegment(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// The registry's origin ("http://host:port") and path prefix of `url`.
Status SplitRegistryUrl(const std::string& url, std::string* origin, std::string* prefix);

class HttpSchemaRegistry final : public SchemaSource {
 public:
  HttpSchemaRegistry(const std::string& origin, std::string prefix, const RegistryOptions& options)
      : origin_(origin), prefix_(std::move(prefix)), client_(origin) {
    const time_t seconds = static_cast<time_t>(options.timeout_ms / 1000);
    const time_t micros = static_cast<time_t>((options.timeout_ms % 1000) * 1000);
    client_.set_connection_timeout(seconds, micros);
    client_.set_read_timeout(seconds, micros);
    client_.set_write_timeout(seconds, micros);
    client_.set_keep_alive(true);
    if (!options.user_info.empty()) {
      const size_t colon = options.user_info.find(':');
      client_.set_basic_auth(options.user_info.substr(0, colon),
                             colon == std::string::npos ? "" : options.user_info.substr(colon + 1));
    }
    if (!options.ca_file.empty()) client_.set_ca_cert_path(options.ca_file.c_str());
    client_.enable_server_certificate_verification(true);
  }

  Result<RegistrySchema> ById(uint32_t id, bool serialized) override {
    return Get("/schemas/ids/" + std::to_string(id), serialized, "schema id " + std::to_string(id));
  }

  Result<RegistrySchema> BySubjectVersion(const std::string& subject, int version,
                                          bool serialized) override {
    return Get("/subjects/" + EncodeSegment(subject) + "/versions/" + std::to_string(version),
               serialized, "subject " + subject + " version " + std::to_string(version));
  }

  void Interrupt() override { client_.stop(); }

 private:
  Result<RegistrySchema> Get(const std::string& path, bool serialized, const std::string& what) {
    const std::string target = prefix_ + path + (serialized ? "?format=serialized" : "");
    httplib::Result res = client_.Get(target);
    if (!res) {
      return Status::IOError("schema registry " + origin_ + " unreachable (" +
                             httplib::to_string(res.error()) + ") asking " + what);
    }
    if (res->status == 404) {
      return Status::NotFound("the schema registry has no " + what);
    }
    if (res->status != 200) {
      return Status::IOError("schema registry " + origin_ + " answered " +
                             std::to_string(res->status) + " asking " + what);
    }
    Result<RegistrySchema> schema = ParseRegistrySchema(res->body);
    if (!schema.ok()) {
      return Status::IOError("schema registry " + origin_ + " asking " + what + ": " +
                             schema.status().message());
    }
    return schema;
  }

  const std::string origin_;  // scheme://host:port
  const std::string prefix_;  // a path the API sits under, without a trailing '/'; maybe empty
  httplib::Client client_;
};

Status SplitRegistryUrl(const std::string& url, std::string* origin_out, std::string* prefix_out) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos ||
      (url.compare(0, scheme_end, "http") != 0 && url.compare(0, scheme_end, "https") != 0)) {
    return Status::InvalidArgument(
        "ingest.schema_registry.url: expected http://host:port or "
        "https://host:port, got \"" +
        url + "\"");
  }
  const size_t path_start = url.find('/', scheme_end + 3);
  const std::string origin = url.substr(0, path_start);
  if (origin.size() == scheme_end + 3) {
    return Status::InvalidArgument("ingest.schema_registry.url: no host in \"" + url + "\"");
  }
  std::string prefix = path_start == std::string::npos ? "" : url.substr(path_start);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  *origin_out = origin;
  *prefix_out = prefix;
  return Status::Ok();
}

}  // namespace

namespace {

class NotFoundMemory final : public SchemaSource {
 public:
  NotFoundMemory(std::unique_ptr<SchemaSource> source, int64_t ttl_ms)
      : source_(std::move(source)), ttl_ms_(ttl_ms) {}

  Result<RegistrySchema> ById(uint32_t id, bool serialized) override {
    const int64_t now = SteadyMs();
    auto it = not_found_.find(id);
    if (it != not_found_.end()) {
      if (now < it->second.until_ms) return Status::NotFound(it->second.message);
      not_found_.erase(it);
    }
    Result<RegistrySchema> schema = source_->ById(id, serialized);
    if (schema.status().code() == Status::Code::kNotFound) {
      if (not_found_.size() >= kMaxRemembered) not_found_.clear();
      not_found_[id] = {now + ttl_ms_, schema.status().message() + " (remembered)"};
    }
    return schema;
  }

  Result<RegistrySchema> BySubjectVersion(const std::string& subject, int version,
                                          bool serialized) override {
    return source_->BySubjectVersion(subject, version, serialized);
  }

  void Interrupt() override { source_->Interrupt(); }

 private:
  static constexpr size_t kMaxRemembered = 10000;
  static int64_t SteadyMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  struct Entry {
    int64_t until_ms;
    std::string message;
  };
  std::unique_ptr<SchemaSource> source_;
  const int64_t ttl_ms_;
  std::unordered_map<uint32_t, Entry> not_found_;
};

}  // namespace

std::unique_ptr<SchemaSource> RememberNotFound(std::unique_ptr<SchemaSource> source,
                                               int64_t ttl_ms) {
  return std::make_unique<NotFoundMemory>(std::move(source), ttl_ms);
}

Result<std::unique_ptr<SchemaSource>> OpenSchemaRegistry(const RegistryOptions& options) {
  std::string origin, prefix;
  HOTROW_RETURN_IF_ERROR(SplitRegistryUrl(options.url, &origin, &prefix));
  return std::unique_ptr<SchemaSource>(
      std::make_unique<HttpSchemaRegistry>(origin, std::move(prefix), options));
}

Result<uint32_t> RegisterSchema(const RegistryOptions& options, const std::string& subject,
                                const std::string& schema, const std::string& schema_type) {
  std::string origin, prefix;
  HOTROW_RETURN_IF_ERROR(SplitRegistryUrl(options.url, &origin, &prefix));
  httplib::Client client(origin);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(5, 0);
  nlohmann::json body = {{"schema", schema}};
  if (schema_type != "AVRO") body["schemaType"] = schema_type;
  httplib::Result res = client.Post(prefix + "/subjects/" + EncodeSegment(subject) + "/versions",
                                    body.dump(), "application/vnd.schemaregistry.v1+json");
  if (!res) {
    return Status::IOError("schema registry " + origin + " unreachable (" +
                           httplib::to_string(res.error()) + ")");
  }
  nlohmann::json answer = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 200 || !answer.is_object() || !answer.contains("id") ||
      !answer["id"].is_number_unsigned()) {
    return Status::IOError("schema registry " + origin + " refused the schema of " + subject +
                           ": " + std::to_string(res->status) + " " + res->body.substr(0, 200));
  }
  return answer["id"].get<uint32_t>();
}

}  // namespace hotrow::ingest
