// Driver for fuzz targets when libFuzzer is not available (gcc builds, CI's ctest run):
//   fuzz_X [--mutations N] [--seed S] PATH...
// runs every file under each PATH, then N seeded random mutations of them (bit flips, byte
// sets, little-endian integer overwrites, truncation, extension). Any uncaught exception or
// sanitizer report fails the run; the input that did it is written to ./crash-replay.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::uint8_t> slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void run(const std::vector<std::uint8_t>& input) {
  try {
    LLVMFuzzerTestOneInput(input.data(), input.size());
  } catch (const std::exception& e) {
    std::ofstream("crash-replay", std::ios::binary)
        .write(reinterpret_cast<const char*>(input.data()),
               static_cast<std::streamsize>(input.size()));
    std::fprintf(stderr, "uncaught exception: %s (input saved to crash-replay)\n", e.what());
    std::exit(1);
  }
}

std::vector<std::uint8_t> mutate(std::vector<std::uint8_t> v, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    if (v.empty()) v.push_back(0);
    const std::size_t at = rng() % v.size();
    switch (rng() % 6) {
      case 0:
        v[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        break;
      case 1:
        v[at] = static_cast<std::uint8_t>(rng());
        break;
      case 2: {  // an interesting little-endian u32 at a 4-aligned offset
        static const std::uint32_t vals[] = {0,   1,    2,    3,          10,          11,
                                             255, 4096, 8192, 0x7fffffff, 0x80000000u, 0xffffffffu};
        const std::uint32_t x = vals[rng() % std::size(vals)];
        const std::size_t o = (at / 4) * 4;
        for (std::size_t k = 0; k < 4 && o + k < v.size(); ++k) v[o + k] = (x >> (8 * k)) & 0xff;
        break;
      }
      case 3:
        v.resize(at);
        break;
      case 4:
        v.resize(v.size() + rng() % 64, static_cast<std::uint8_t>(rng()));
        break;
      case 5:
        std::memset(v.data() + at, 0, std::min<std::size_t>(v.size() - at, 1 + rng() % 16));
        break;
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 0;
  std::uint64_t seed = 1;
  std::vector<std::vector<std::uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) {
      mutations = std::stol(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(a)) {
        if (e.is_regular_file()) corpus.push_back(slurp(e.path()));
      }
    } else {
      corpus.push_back(slurp(a));
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  for (const auto& c : corpus) run(c);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < mutations; ++i) run(mutate(corpus[rng() % corpus.size()], rng));
  std::printf("replayed %zu inputs and %ld mutations: no crash\n", corpus.size(), mutations);
  return 0;
}
