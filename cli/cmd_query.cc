// `hotrow query latest|latest-all|series|range|scan|index ...`: a small HTTP client of a running
// service's API, printing one JSON event (or series point) per line.

#include <httplib.h>

#include <charconv>
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

// GETs `path` (or POSTs `post_body` there, when not null) and parses the JSON object answered;
// on failure reports it and returns the exit code.
int AskJson(const QueryFlags& flags, const std::string& path, const std::string* post_body,
            nlohmann::ordered_json* answer) {
  int exit_code = kExitOk;
  std::unique_ptr<httplib::Client> client = NewClient(flags, &exit_code);
  if (!client) return exit_code;
  httplib::Result res =
      post_body != nullptr ? client->Post(path, *post_body, "application/json") : client->Get(path);
  if (!res) return ReportTransportError(flags, *client, res.error());
  if (res->status != 200) return ReportHttpError(res->status, res->body);
  *answer = nlohmann::ordered_json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (!answer->is_object()) {
    std::fprintf(stderr, "hotrow: %s did not answer with a JSON object; is it a hotrow server?\n",
                 flags.server.c_str());
    return kExitFailure;
  }
  return kExitOk;
}

void PrintLine(const nlohmann::ordered_json& j) {
  const std::string line =
      j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
}

// Prints each element of answer[member], an array, on its own line; false when it is none.
bool PrintArray(const QueryFlags& flags, const nlohmann::ordered_json& answer, const char* member) {
  if (!answer.contains(member) || !answer[member].is_array()) {
    std::fprintf(stderr, "hotrow: %s did not answer with %s; is it a hotrow server?\n",
                 flags.server.c_str(), member);
    return false;
  }
  for (const auto& item : answer[member]) PrintLine(item);
  std::fflush(stdout);
  return true;
}

// GETs `path` and prints each event of a {"event_id", "events": [...]} answer on its own line.
int PrintEvents(const QueryFlags& flags, const std::string& path) {
  nlohmann::ordered_json answer;
  if (int code = AskJson(flags, path, nullptr, &answer); code != kExitOk) return code;
  if (!PrintArray(flags, answer, "events")) return kExitFailure;
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
  if (f.ids.size() == 1) {
    bool first = true;
    return PrintEvents(
        f, "/v1/events/" + wire::PercentEncode(f.ids[0]) + "/latest" + Param("n", f.n, &first));
  }
  // Several ids: one POST (a list of 1000 ids does not fit in a URL), the events of each id in
  // the order given.
  nlohmann::ordered_json body = {{"ids", f.ids}};
  if (!f.n.empty()) {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(f.n.data(), f.n.data() + f.n.size(), n);
    if (ec != std::errc() || ptr != f.n.data() + f.n.size()) {
      std::fprintf(stderr, "hotrow: -n: expected an integer from 1 to 10000, got \"%s\"\n",
                   f.n.c_str());
      return kExitUsage;
    }
    body["n"] = n;
  }
  const std::string text =
      body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  nlohmann::ordered_json answer;
  if (int code = AskJson(f, "/v1/latest", &text, &answer); code != kExitOk) return code;
  if (!answer.contains("ids") || !answer["ids"].is_object()) {
    std::fprintf(stderr, "hotrow: %s did not answer with ids; is it a hotrow server?\n",
                 f.server.c_str());
    return kExitFailure;
  }
  for (const auto& [id, events] : answer["ids"].items()) {
    for (const auto& event : events) PrintLine(event);
  }
  std::fflush(stdout);
  return kExitOk;
}

int RunQueryLatestAll(const QueryFlags& f) {
  std::string after;
  while (true) {
    bool first = true;
    std::string path = "/v1/latest";
    path += Param("prefix", f.prefix, &first);
    path += Param("limit", f.limit, &first);
    path += Param("after", after, &first);
    nlohmann::ordered_json answer;
    if (int code = AskJson(f, path, nullptr, &answer); code != kExitOk) return code;
    if (!PrintArray(f, answer, "events")) return kExitFailure;
    if (!answer.contains("next") || !answer["next"].is_string()) return kExitOk;
    after = answer["next"].get<std::string>();
  }
}

int RunQuerySeries(const QueryFlags& f) {
  if (f.step.empty() == f.max_points.empty()) {
    std::fprintf(stderr, "hotrow: expected exactly one of --step and --max-points\n");
    return kExitUsage;
  }
  bool first = true;
  std::string path = "/v1/events/" + wire::PercentEncode(f.id) + "/series";
  path += Param("field", f.field, &first);
  path += Param("from", f.from, &first);
  path += Param("to", f.to, &first);
  path += Param("step", f.step, &first);
  path += Param("max_points", f.max_points, &first);
  path += Param("agg", f.agg, &first);
  nlohmann::ordered_json answer;
  if (int code = AskJson(f, path, nullptr, &answer); code != kExitOk) return code;
  if (!PrintArray(f, answer, "points")) return kExitFailure;
  // Events counted in no point: said, not silently dropped.
  if (answer.contains("skipped") && answer["skipped"].is_object()) {
    const auto& skipped = answer["skipped"];
    const uint64_t absent = skipped.value("absent", uint64_t{0});
    const uint64_t not_number = skipped.value("not_number", uint64_t{0});
    if (absent + not_number > 0) {
      std::fprintf(stderr,
                   "hotrow: note: %llu event(s) without the field and %llu whose field is not a "
                   "number are in no point\n",
                   static_cast<unsigned long long>(absent),
                   static_cast<unsigned long long>(not_number));
    }
  }
  return kExitOk;
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
