// hotrow: a hot-data store for event streams. See README.md and docs/CONTRACT.md.

#include "cli/commands.h"
#include "common/logging.h"

int main(int argc, char** argv) {
  // Before anything can log: stdout carries the commands' output (CONTRACT.md), logs go to stderr.
  hotrow::InitLogging("warn");
  return hotrow::cli::RunCommandLine(argc, argv);
}
