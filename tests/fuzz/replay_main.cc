// Replays saved fuzz inputs without libFuzzer, so that every seed and every crash reproducer is a
// regression test in the normal (gcc) and sanitizer builds.
//
//   fuzz_replay_<target> DIR...
//
// Runs LLVMFuzzerTestOneInput once on every regular file under each DIR (recursively). A DIR that
// does not exist is skipped: a target has a regressions/ folder only once a crash has been found.
// Exits 1 when no input at all was found (a corpus that went missing must not pass silently); a
// property violation or a sanitizer report aborts the process, which fails the test.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> InputsUnder(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  return files;
}

// Runs one file. The bytes go in a buffer of exactly their size, so that ASan sees a read past the
// end as libFuzzer would.
bool Replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", file.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  std::fprintf(stderr, "replay %s (%zu bytes)\n", file.c_str(), data.size());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t replayed = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    for (const fs::path& file : InputsUnder(argv[i])) {
      ok = Replay(file) && ok;
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs\n", replayed);
  if (replayed == 0) {
    std::fprintf(stderr, "no inputs found; expected a seed corpus directory\n");
    return 1;
  }
  return ok ? 0 : 1;
}
