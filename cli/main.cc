// hotrow: a hot-data store for event streams. See README.md and ../shared/CONTRACT.md.

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "common/logging.h"

int main(int argc, char** argv) {
  // Before anything can log: stdout carries the commands' output (CONTRACT.md), logs go to stderr.
  hotrow::InitLogging("warn");
  CLI::App app{"hotrow: the last minutes of an event stream, queryable in milliseconds"};
  app.require_subcommand(1);
  int exit_code = hotrow::cli::kExitOk;
  hotrow::cli::AddServeCommand(app, &exit_code);
  hotrow::cli::AddDemoCommand(app, &exit_code);
  hotrow::cli::AddEmbeddedKafkaCommand(app, &exit_code);
  hotrow::cli::AddProduceCommand(app, &exit_code);
  hotrow::cli::AddQueryCommand(app, &exit_code);
  hotrow::cli::AddKeysCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "hotrow: %s\n", e.what());
    return hotrow::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hotrow: %s\n", e.what());
    return hotrow::cli::kExitFailure;
  }
  return exit_code;
}
