#pragma once

#include "common/status.h"
#include "config/config.h"

namespace hotrow::fuzz {

// The properties shared by the two config targets (config_file, config_set).
//
// A loaded config holds every key in its documented range (configs/hotrow.yaml), and survives being
// written out as --set overrides and loaded again, field for field. A refused config is refused
// with one line (CONTRACT.md: "one line on stderr naming the bad flag or key"). Aborts otherwise.
void CheckLoadResult(const Result<config::Config>& loaded);

}  // namespace hotrow::fuzz
