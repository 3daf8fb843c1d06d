// `hotrow check-config [--config FILE] [--set section.key=value]...`: validates a configuration as
// `hotrow serve` would before it opens anything (every key, the files it names, the certificates)
// and prints the effective configuration as YAML on stdout; exit 0, or 2 with one line on stderr
// naming the key. For operators and for the unit's ExecStartPre= (CONTRACT.md "Running as a
// service").

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "config/config.h"
#include "service/config_check.h"
#include "service/file_limit.h"

namespace hotrow::cli {

int RunCheckConfig(const ServeFlags& flags) {
  Result<config::Config> config = config::LoadConfig(flags.config_file, flags.overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "hotrow: %s\n", config.status().message().c_str());
    return kExitUsage;
  }
  for (const std::string& warning : config->warnings) {
    std::fprintf(stderr, "hotrow: warning: %s\n", warning.c_str());
  }
  Status checked = service::CheckConfig(*config);
  if (checked.ok()) checked = service::FitFileLimit(*config, /*raise=*/false);
  if (!checked.ok()) {
    std::fprintf(stderr, "hotrow: %s\n", checked.message().c_str());
    return kExitUsage;
  }
  const std::string source = flags.config_file.empty() ? "the defaults" : flags.config_file;
  std::printf("# hotrow check-config: valid (%s, %zu --set)\n%s", source.c_str(),
              flags.overrides.size(), config::EffectiveYaml(*config).c_str());
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace hotrow::cli
