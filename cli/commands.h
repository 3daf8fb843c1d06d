#pragma once

#include <CLI/CLI.hpp>

namespace hotrow::cli {

// Each Add*Command adds one subcommand (or a group) to `app`. When that subcommand is chosen, its
// callback runs the command and stores the process exit code in `*exit_code`:
// 0 ok, 2 usage or configuration error, 1 runtime failure (CONTRACT.md).
void AddServeCommand(CLI::App& app, int* exit_code);           // cmd_serve.cc
void AddDemoCommand(CLI::App& app, int* exit_code);            // cmd_demo.cc
void AddEmbeddedKafkaCommand(CLI::App& app, int* exit_code);   // cmd_embedded_kafka.cc
void AddProduceCommand(CLI::App& app, int* exit_code);         // cmd_produce.cc
void AddQueryCommand(CLI::App& app, int* exit_code);           // cmd_query.cc
void AddKeysCommand(CLI::App& app, int* exit_code);            // cmd_keys.cc

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

}  // namespace hotrow::cli
