// The corpus replay of a libFuzzer harness, for builds without libFuzzer (the dev, asan and
// release presets; fuzz/CMakeLists.txt): a main that feeds every file named on the command line,
// or found directly in a folder named there, to the harness's LLVMFuzzerTestOneInput once, in
// name order. A harness that no longer compiles (an api::Service method FuzzService lacks, say)
// fails the ordinary build, and an input of the seed corpus that now breaks a harness property
// fails ctest, without the fuzz preset.
//
// Exit status: 0 when every input ran (a failed property aborts inside the harness), 2 when a
// path cannot be read or no input was found.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// The regular files a command-line argument names: the file itself, or a folder's files (not
// its sub-folders), sorted so that runs are repeatable.
bool CollectInputs(const std::filesystem::path& argument, std::vector<std::filesystem::path>& out) {
  std::error_code error;
  if (std::filesystem::is_regular_file(argument, error)) {
    out.push_back(argument);
    return true;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(argument, error)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (error) return false;
  std::sort(files.begin(), files.end());
  out.insert(out.end(), files.begin(), files.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!CollectInputs(argv[i], inputs)) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no input to replay\n");
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
