// `hotrow query latest|range|scan|index ...`: a small HTTP client of a running service's API,
// printing one JSON event per line.

#include <httplib.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "access/client_access.h"
#include "access/tls.h"
#include "cli/commands.h"
#include "wire/url_codec.h"

namespace hotrow::cli {
namespace {

// The error message of a JSON error body, or the body itself when it is not one.
std::string ErrorMessageOf(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  std::string text = body.substr(0, 200);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "(no message)" : text;
}

int ExitCodeForHttpStatus(int status) { return status == 400 ? kExitUsage : kExitFailure; }

int ReportHttpError(int status, const std::string& body) {
  std::fprintf(stderr, "hotrow: %s (HTTP %d)\n", ErrorMessageOf(body).c_str(), status);
  return ExitCodeForHttpStatus(status);
}

std::unique_ptr<httplib::Client> NewClient(const QueryFlags& flags, int* exit_code) {
  const std::string& server = flags.server;
  Result<access::ClientAccess> access = access::ClientAccess::Load(flags.token_file);
  if (!access.ok()) {
    // The message names http.token_file, the server's key; the flag here is --token-file.
    std::string why = access.status().message();
    const std::string key = "http.token_file: ";
    if (why.rfind(key, 0) == 0) why = why.substr(key.size());
    std::fprintf(stderr, "hotrow: --token-file: %s\n", why.c_str());
    *exit_code = kExitUsage;
    return nullptr;
  }
  if (!flags.cacert.empty()) {
    if (server.rfind("https://", 0) != 0) {
      std::fprintf(stderr, "hotrow: --cacert: only for an https:// --server, got \"%s\"\n",
                   server.c_str());
      *exit_code = kExitUsage;
      return nullptr;
    }
    const Status trusted = access->TrustCaFile(flags.cacert);
    if (!trusted.ok()) {
      std::fprintf(stderr, "hotrow: --cacert: %s\n", trusted.message().c_str());
      *exit_code = kExitUsage;
      return nullptr;
    }
  }
  auto client = std::make_unique<httplib::Client>(server);
  if (!client->is_valid()) {
    std::fprintf(stderr, "hotrow: --server: not a URL such as %s: \"%s\"\n", kDefaultServer,
                 server.c_str());
    *exit_code = kExitUsage;
    return nullptr;
  }
  access->ApplyTo(client.get());
  client->set_connection_timeout(std::chrono::seconds(5));
  client->set_read_timeout(std::chrono::seconds(60));
  return client;
}

int ReportTransportError(const QueryFlags& flags, const httplib::Client& client,
                         httplib::Error error) {
  const std::string& server = flags.server;
  std::string why;
  switch (error) {
    case httplib::Error::Connection:
      why = "cannot connect; is `hotrow serve` (or `hotrow demo`) running there?";
      break;
    case httplib::Error::Read:
      why = "the connection broke while reading the answer";
      // An HTTPS server closes a plain HTTP connection without a word.
      if (server.rfind("http://", 0) == 0) why += " (if the server serves HTTPS, use https://)";
      break;
    case httplib::Error::ConnectionTimeout:
      why = "no connection within 5 s";
      break;
    case httplib::Error::SSLConnection:
      why = "the TLS handshake failed; does the server serve HTTPS (http.tls_cert)?";
      break;
    case httplib::Error::SSLLoadingCerts:
      why = "cannot load the CA certificates " +
            (flags.cacert.empty() ? std::string("of the system") : "of --cacert " + flags.cacert);
      break;
    case httplib::Error::SSLServerVerification: {
      const long result = client.get_openssl_verify_result();
      why = "the server's certificate is not trusted: " +
            (result == 0 ? std::string("it does not name the host asked for")
                         : access::CertificateVerifyError(result)) +
            " (verified against " +
            (flags.cacert.empty() ? std::string("the system's CAs; pass --cacert FILE")
                                  : "--cacert " + flags.cacert) +
            ")";
      break;
    }
    default:
      why = "HTTP error: " + httplib::to_string(error);
      break;
  }
  std::fprintf(stderr, "hotrow: no answer from %s: %s\n", server.c_str(), why.c_str());
  return kExitFailure;
}

// GETs `path` and prints each event of a {"event_id", "events": [...]} answer on its own line.
int PrintEvents(const QueryFlags& flags, const std::string& path) {
  int exit_code = kExitOk;
  std::unique_ptr<httplib::Client> client = NewClient(flags, &exit_code);
  if (!client) return exit_code;
  httplib::Result res = client->Get(path);
  if (!res) return ReportTransportError(flags, *client, res.error());
  if (res->status != 200) return ReportHttpError(res->status, res->body);
  nlohmann::ordered_json answer =
      nlohmann::ordered_json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object() || !answer.contains("events") || !answer["events"].is_array()) {
    std::fprintf(stderr, "hotrow: %s did not answer with events; is it a hotrow server?\n",
                 flags.server.c_str());
    return kExitFailure;
  }
  for (const auto& event : answer["events"]) {
    const std::string line =
        event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  std::fflush(stdout);
  // An index answer names the buckets of its range that do not index the field.
  if (answer.contains("unindexed") && answer["unindexed"].is_array() &&
      !answer["unindexed"].empty()) {
    std::fprintf(stderr,
                 "hotrow: note: %zu bucket(s) of the range do not index this field (made before "
                 "it was in index.fields); their events are not in the answer: %s\n",
                 answer["unindexed"].size(), answer["unindexed"].dump().c_str());
  }
  return kExitOk;
}

// GETs an NDJSON scan and copies its event lines to stdout as they arrive. An {"error": ...}
// line (a scan cut short by the server) goes to stderr and fails the command.
int StreamScan(const QueryFlags& flags, const std::string& path) {
  int exit_code = kExitOk;
  std::unique_ptr<httplib::Client> client = NewClient(flags, &exit_code);
  if (!client) return exit_code;
  int status = 0;
  std::string error_body;  // the body of a non-200 answer
  std::string partial;     // an event line not yet complete
  std::string cut_short;   // the message of an error line
  httplib::Result res = client->Get(
      path,
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t size) {
        if (status != 200) {
          if (error_body.size() < 64 * 1024) error_body.append(data, size);
          return true;
        }
        partial.append(data, size);
        size_t start = 0;
        for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
          const std::string_view line(partial.data() + start, nl + 1 - start);
          if (line.rfind("{\"error\":", 0) == 0) {
            cut_short = ErrorMessageOf(std::string(line));
          } else {
            std::fwrite(line.data(), 1, line.size(), stdout);
          }
        }
        partial.erase(0, start);
        return true;
      });
  std::fflush(stdout);
  if (status != 0 && status != 200) return ReportHttpError(status, error_body);
  if (!cut_short.empty()) {
    std::fprintf(stderr, "hotrow: the scan was cut short: %s\n", cut_short.c_str());
    return kExitFailure;
  }
  if (!res) return ReportTransportError(flags, *client, res.error());
  return kExitOk;
}

std::string Param(const char* name, const std::string& value, bool* first) {
  if (value.empty()) return "";
  std::string out = *first ? "?" : "&";
  *first = false;
  return out + name + "=" + wire::PercentEncode(value);
}

}  // namespace

int RunQueryLatest(const QueryFlags& f) {
  bool first = true;
  return PrintEvents(f,
                     "/v1/events/" + wire::PercentEncode(f.id) + "/latest" + Param("n", f.n, &first));
}

int RunQueryRange(const QueryFlags& f) {
  bool first = true;
  std::string path = "/v1/events/" + wire::PercentEncode(f.id);
  path += Param("from", f.from, &first);
  path += Param("to", f.to, &first);
  path += Param("limit", f.limit, &first);
  path += Param("order", f.order, &first);
  return PrintEvents(f, path);
}

int RunQueryIndex(const QueryFlags& f) {
  const bool range = !f.from.empty() || !f.to.empty();
  if (range && !f.n.empty()) {
    std::fprintf(stderr, "hotrow: -n: not with --from/--to (use --limit)\n");
    return kExitUsage;
  }
  if (!range && (!f.limit.empty() || !f.order.empty())) {
    std::fprintf(stderr, "hotrow: --limit and --order need --from and --to\n");
    return kExitUsage;
  }
  bool first = true;
  std::string path =
      "/v1/index/" + wire::PercentEncode(f.field) + "/" + wire::PercentEncode(f.value);
  if (range) {
    path += Param("from", f.from, &first);
    path += Param("to", f.to, &first);
    path += Param("limit", f.limit, &first);
    path += Param("order", f.order, &first);
  } else {
    path += "/latest" + Param("n", f.n, &first);
  }
  return PrintEvents(f, path);
}

int RunQueryScan(const QueryFlags& f) {
  bool first = true;
  std::string path = "/v1/scan";
  path += Param("from", f.from, &first);
  path += Param("to", f.to, &first);
  path += Param("limit", f.limit, &first);
  return StreamScan(f, path);
}

}  // namespace hotrow::cli
