// The command line of `hotrow` (CONTRACT.md, "Binary"): every subcommand's flags, read with CLI11
// into the structs of cli/commands.h. Each subcommand's callback runs it and keeps its exit code.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>

#include "cli/commands.h"

namespace hotrow::cli {
namespace {

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Consume Kafka topics into the hot store and serve the HTTP API until SIGTERM");
  cmd->add_option("--config", flags->config_file,
                  "YAML configuration file, e.g. configs/hotrow.yaml (default: none, every key at "
                  "its documented default)");
  cmd->add_option("--set", flags->overrides,
                  "Override one key, section.key=value (the value read as YAML); repeatable")
      ->allow_extra_args(false);
  cmd->callback([flags, exit_code] { *exit_code = RunServe(*flags); });
}

void AddCheckConfigCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "check-config",
      "Validate a configuration as serve would (every key, the token and TLS files it names, "
      "certificates parse) and print the effective configuration as YAML; exit 0, or 2 naming "
      "the bad key");
  cmd->add_option("--config", flags->config_file,
                  "YAML configuration file (default: none, every key at its documented default)");
  cmd->add_option("--set", flags->overrides,
                  "Override one key, section.key=value (the value read as YAML); repeatable")
      ->allow_extra_args(false);
  cmd->callback([flags, exit_code] { *exit_code = RunCheckConfig(*flags); });
}

void AddDemoCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Broker, synthetic producer and service in one process; prints example curl lines");
  cmd->add_option("--rate", flags->rate, "Events per second to produce (0: as fast as possible)")
      ->capture_default_str();
  cmd->add_option("--data", flags->data_dir,
                  "Directory for the store (default: a temporary one, removed at exit)");
  cmd->add_option("--listen", flags->listen,
                  "HTTP address, host:port (port 0: any free port; printed)")
      ->capture_default_str();
  cmd->callback([flags, exit_code] { *exit_code = RunDemo(*flags); });
}

void AddEmbeddedKafkaCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "embedded-kafka",
      "Run only the loopback Kafka broker; prints bootstrap=127.0.0.1:PORT, runs until SIGTERM");
  auto flags = std::make_shared<EmbeddedKafkaFlags>();
  cmd->add_option("--topic", flags->topic, "Topic to create")->capture_default_str();
  cmd->add_option("--partitions", flags->partitions, "Partitions of the topic")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->callback([flags, exit_code] { *exit_code = RunEmbeddedKafka(*flags); });
}

void AddProduceCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "produce", "Produce synthetic IoT events (JSON, keyed by device id) at a steady rate");
  auto options = std::make_shared<ingest::ProducerOptions>();
  cmd->add_option("--brokers", options->brokers, "Bootstrap servers, host:port[,host:port]")
      ->required();
  cmd->add_option("--topic", options->topic, "Topic to produce to")->required();
  cmd->add_option("--rate", options->rate, "Events per second; 0 for as fast as possible")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}))
      ->capture_default_str();
  cmd->add_option("--count", options->count, "Events to produce; 0 until SIGTERM")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--devices", options->devices, "Distinct device ids")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the device and reading choice")
      ->capture_default_str();
  cmd->add_option("--skew", options->skew, "Zipf exponent of the device choice; 0 is uniform")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--format", options->format,
                  "json, or the reading as avro or protobuf (with --schema-registry or "
                  "--schema-file)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, ingest::Format>{{"json", ingest::Format::kJson},
                                                {"avro", ingest::Format::kAvro},
                                                {"protobuf", ingest::Format::kProtobuf}}));
  cmd->add_option("--schema-registry", options->registry_url,
                  "Register the schema under <topic>-value and frame each record (Confluent)");
  cmd->add_option("--schema-file", options->schema_file,
                  "Write unframed records, and their schema here (Avro JSON or a descriptor set, "
                  "message hotrow.synthetic.Reading)");
  cmd->callback([options, exit_code] { *exit_code = RunProduce(*options); });
}

void AddServerOption(CLI::App* cmd, QueryFlags* flags) {
  cmd->add_option("--server", flags->server, "URL of the hotrow HTTP API")
      ->default_str(kDefaultServer);
  cmd->add_option("--token-file", flags->token_file,
                  "File holding the server's bearer token (its http.token_file)");
  cmd->add_option("--cacert", flags->cacert,
                  "PEM file of the CA (or the self-signed certificate) that an https:// server's "
                  "certificate is verified against (default: the system's CAs)");
}

void AddQueryCommand(CLI::App& app, int* exit_code) {
  CLI::App* query = app.add_subcommand("query", "Ask a running hotrow service (HTTP client)");
  query->require_subcommand(1);

  auto latest_flags = std::make_shared<QueryFlags>();
  CLI::App* latest =
      query->add_subcommand("latest", "The newest events of one id or of several, newest first");
  latest
      ->add_option("ID", latest_flags->ids,
                   "Event ids, up to 1000 (each at most 256 bytes of UTF-8)")
      ->required();
  latest->add_option("-n", latest_flags->n, "How many of each, 1..10000 (default 10)");
  AddServerOption(latest, latest_flags.get());
  latest->callback([latest_flags, exit_code] { *exit_code = RunQueryLatest(*latest_flags); });

  auto all_flags = std::make_shared<QueryFlags>();
  CLI::App* all = query->add_subcommand("latest-all",
                                        "The newest event of every id in the window, in id order");
  all->add_option("--prefix", all_flags->prefix, "Only the ids that start with this");
  all->add_option("--limit", all_flags->limit,
                  "Ids asked per page, 1..100000 (default 1000); every page is printed");
  AddServerOption(all, all_flags.get());
  all->callback([all_flags, exit_code] { *exit_code = RunQueryLatestAll(*all_flags); });

  auto series_flags = std::make_shared<QueryFlags>();
  CLI::App* series = query->add_subcommand(
      "series", "Aggregates of a numeric payload field of one id, step by step (for charts)");
  series->add_option("ID", series_flags->id, "Event id")->required();
  series->add_option("--field", series_flags->field, "The payload field (a dotted path)")
      ->required();
  series->add_option("--from", series_flags->from, "Start, ms since the epoch or RFC 3339")
      ->required();
  series->add_option("--to", series_flags->to, "End (excluded), ms or RFC 3339")->required();
  series->add_option("--step", series_flags->step,
                     "Step width: ms, or an interval (500ms, 10s, 1m, 1h, 1d, 1w, 1y)");
  series->add_option("--max-points", series_flags->max_points,
                     "Instead of --step: the smallest step giving at most this many points");
  series->add_option("--agg", series_flags->agg,
                     "Aggregates, any of avg,min,max,count,last (default: all)");
  AddServerOption(series, series_flags.get());
  series->callback([series_flags, exit_code] { *exit_code = RunQuerySeries(*series_flags); });

  auto range_flags = std::make_shared<QueryFlags>();
  CLI::App* range = query->add_subcommand("range", "Events of one id with from <= ts < to");
  range
      ->add_option("ID", range_flags->id,
                   "Event id (at most 256 bytes of UTF-8; sent percent-encoded)")
      ->required();
  range->add_option("--from", range_flags->from, "Start, ms since the epoch or RFC 3339")
      ->required();
  range->add_option("--to", range_flags->to, "End (excluded), ms or RFC 3339")->required();
  range->add_option("--limit", range_flags->limit, "At most this many, 1..100000 (default 1000)");
  range->add_option("--order", range_flags->order, "desc (default, newest first) or asc");
  AddServerOption(range, range_flags.get());
  range->callback([range_flags, exit_code] { *exit_code = RunQueryRange(*range_flags); });

  auto index_flags = std::make_shared<QueryFlags>();
  CLI::App* index = query->add_subcommand(
      "index", "Events whose indexed FIELD equals VALUE: the n newest, or those from <= ts < to");
  index->add_option("FIELD", index_flags->field, "A field of index.fields (a dotted path)")
      ->required();
  index
      ->add_option("VALUE", index_flags->value,
                   "Its value as text (a number or boolean as its JSON text)")
      ->required();
  index->add_option("-n", index_flags->n, "How many of the newest, 1..10000 (default 10)");
  index->add_option("--from", index_flags->from, "Start, ms since the epoch or RFC 3339");
  index->add_option("--to", index_flags->to, "End (excluded), ms or RFC 3339");
  index->add_option("--limit", index_flags->limit,
                    "With --from/--to: at most this many (default 1000)");
  index->add_option("--order", index_flags->order, "With --from/--to: desc (default) or asc");
  AddServerOption(index, index_flags.get());
  index->callback([index_flags, exit_code] { *exit_code = RunQueryIndex(*index_flags); });

  auto scan_flags = std::make_shared<QueryFlags>();
  CLI::App* scan = query->add_subcommand("scan", "Every event with from <= ts < to, streamed");
  scan->add_option("--from", scan_flags->from, "Start, ms since the epoch or RFC 3339")->required();
  scan->add_option("--to", scan_flags->to, "End (excluded), ms or RFC 3339")->required();
  scan->add_option("--limit", scan_flags->limit, "At most this many (default: no limit)");
  AddServerOption(scan, scan_flags.get());
  scan->callback([scan_flags, exit_code] { *exit_code = RunQueryScan(*scan_flags); });
}

// Flags shared by both keys subcommands.
void AddConfigFlags(CLI::App* command, KeysFlags* flags) {
  command
      ->add_option("--config", flags->config_file,
                   "YAML configuration (for keying.salts and keying.salt_by)")
      ->type_name("FILE");
  // One value per --set, so that `--set a=1 HEX` never swallows the positional argument.
  command->add_option("--set", flags->overrides, "override one key: section.key=value")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
}

void AddKeysCommand(CLI::App& app, int* exit_code) {
  CLI::App* keys = app.add_subcommand("keys", "inspect stored row keys");
  keys->require_subcommand(1);

  auto explain_flags = std::make_shared<KeysFlags>();
  CLI::App* explain =
      keys->add_subcommand("explain", "decode one stored row key (hex) into its fields");
  explain
      ->add_option("HEX", explain_flags->hex,
                   "the key: 62 hex digits (a 31-byte event key) or 64 (a 32-byte index key)")
      ->required();
  explain
      ->add_option("--data", explain_flags->data_dir,
                   "store directory, to print the topic name as well (opened read-only)")
      ->type_name("DIR");
  AddConfigFlags(explain, explain_flags.get());
  explain->callback([explain_flags, exit_code] { *exit_code = RunKeysExplain(*explain_flags); });

  auto analyze_flags = std::make_shared<KeysFlags>();
  CLI::App* analyze = keys->add_subcommand(
      "analyze", "count stored keys per salt and per bucket, with the deviation from the mean");
  analyze->add_option("--data", analyze_flags->data_dir, "store directory (opened read-only)")
      ->type_name("DIR")
      ->required();
  AddConfigFlags(analyze, analyze_flags.get());
  analyze->callback([analyze_flags, exit_code] { *exit_code = RunKeysAnalyze(*analyze_flags); });
}

}  // namespace

int RunCommandLine(int argc, char** argv) {
  CLI::App app{"hotrow: the last minutes of an event stream, queryable in milliseconds"};
  app.require_subcommand(1);
  app.footer(
      "Each subcommand takes --help. Exit codes: 0 ok, 1 runtime failure, 2 usage or "
      "configuration error (one line on stderr naming the flag or key).\n"
      "As a service (hotrow.service): READY=1 once the store is open and HTTP listens, WATCHDOG=1 "
      "while healthy, SIGHUP re-reads the token and certificates; with $JOURNAL_STREAM, log lines "
      "carry syslog priorities. The manual: man hotrow; the contract: docs/CONTRACT.md.");
  int exit_code = kExitOk;
  AddServeCommand(app, &exit_code);
  AddCheckConfigCommand(app, &exit_code);
  AddDemoCommand(app, &exit_code);
  AddEmbeddedKafkaCommand(app, &exit_code);
  AddProduceCommand(app, &exit_code);
  AddQueryCommand(app, &exit_code);
  AddKeysCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "hotrow: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hotrow: %s\n", e.what());
    return kExitFailure;
  }
  return exit_code;
}

}  // namespace hotrow::cli
