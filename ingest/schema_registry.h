#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hotrow::ingest {

// A schema as a Schema Registry returns it (GET /schemas/ids/{id}, GET /subjects/{s}/versions/{v}).
struct RegistrySchema {
  std::string schema;       // the schema text: Avro JSON; for Protobuf asked `serialized`, the
                            // base64 FileDescriptorProto
  std::string schema_type;  // "AVRO" (also when the registry leaves it out), "PROTOBUF", "JSON"
  struct Reference {
    std::string name;  // the import's file name ("common.proto")
    std::string subject;
    int version = 0;
  };
  std::vector<Reference> references;
};

// Where decoders get schemas. The outcomes decoders rely on:
// - NotFound: the registry answered that no such schema exists (404): the record's fault
//   (`unknown_schema`);
// - any other failure (unreachable, timed out, 5xx, 401, an answer that does not parse): not the
//   record's; the record waits and is decoded again later.
//
// Thread-safety: implementations need not be thread-safe.
class SchemaSource {
 public:
  virtual ~SchemaSource() = default;
  // The schema of `id`. `serialized` asks `?format=serialized` (Protobuf: the descriptor).
  virtual Result<RegistrySchema> ById(uint32_t id, bool serialized) = 0;
  // A reference's schema.
  virtual Result<RegistrySchema> BySubjectVersion(const std::string& subject, int version,
                                                  bool serialized) = 0;
  // Ends a request under way on another thread soon (it then fails as unreachable), so that
  // whoever waits on it can stop. The only member callable from another thread. Default: nothing.
  virtual void Interrupt() {}
};

struct RegistryOptions {
  // "http://host:port[/prefix]" or "https://...". Required.
  std::string url;
  // "user:password" for HTTP basic auth. Default: empty (none).
  std::string user_info;
  // PEM file of the CAs an https registry is verified against. Default: empty (the system's).
  std::string ca_file;
  // Bound on connecting and on each read. Default: 5 s.
  int64_t timeout_ms = 5000;
};

// The REST client of a Confluent Schema Registry (its documented subset: the two GETs above), on
// cpp-httplib, one keep-alive connection. Caches nothing: decoders cache what they build from a
// schema by id (ids are immutable in a registry).
//
// Fails with InvalidArgument for a URL that is not http(s)://host[:port][/path].
Result<std::unique_ptr<SchemaSource>> OpenSchemaRegistry(const RegistryOptions& options);

// Wraps `source` so that an id the registry answered 404 for is answered NotFound again, without
// a request, for `ttl_ms` (steady clock): a stream of records naming an unknown id (each one
// rejected as unknown_schema) then costs the registry one request per id per ttl, not one per
// record, and the poller no round trip. Ids are immutable once registered; the ttl bounds how long
// an id registered after a record named it stays unknown. Other failures are never remembered.
std::unique_ptr<SchemaSource> RememberNotFound(std::unique_ptr<SchemaSource> source,
                                               int64_t ttl_ms = 10000);

// Registers `schema` (of `schema_type`: "AVRO", "PROTOBUF") under `subject`
// (POST /subjects/{subject}/versions) and returns its id: the writers' side, for `hotrow produce`.
// IOError when the registry cannot be asked or refuses.
Result<uint32_t> RegisterSchema(const RegistryOptions& options, const std::string& subject,
                                const std::string& schema, const std::string& schema_type);

// Reads an answer of GET /schemas/ids/{id} or /subjects/{s}/versions/{v}. Corruption when it is
// not such an object.
Result<RegistrySchema> ParseRegistrySchema(const std::string& body);

}  // namespace hotrow::ingest
