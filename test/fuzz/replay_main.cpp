// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The replay driver: a main() for a fuzz target built without libFuzzer. It runs the target's
// generated seeds, every file of the corpus directories named on the command line, and then
// deterministic mutations of all of them (bit flips, interesting integers over length fields,
// truncation, insertion, splicing), so that the ordinary test suite exercises the same
// LLVMFuzzerTestOneInput that the fuzzer drives.
//
//   <target>_replay [--mutations N] [--seed S] [CORPUS_DIR_OR_FILE...]
//   <target>_replay --write-seeds DIR     # the generated seeds as files, for libFuzzer
//
// Exit status 0 when every input decoded or raised dsgd::error; any other exception is
// reported with the input's bytes and makes the status 1 (a crash or a broken invariant
// aborts, as under libFuzzer).
#include "fuzz_support.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Values that break length and count checks: zero, one, sign bits, all ones, powers of two
// around allocation sizes, and small sizes.
constexpr std::array<std::uint64_t, 16> interesting{0,
                                                    1,
                                                    2,
                                                    0x7f,
                                                    0x80,
                                                    0xff,
                                                    0x7fff,
                                                    0xffff,
                                                    0x7fffffff,
                                                    0x80000000,
                                                    0xffffffff,
                                                    std::uint64_t{1} << 32,
                                                    std::uint64_t{1} << 40,
                                                    0x7fffffffffffffff,
                                                    0x8000000000000000,
                                                    0xffffffffffffffff};

class mutator {
 public:
  explicit mutator(std::uint64_t seed) : rng_(seed) {}

  std::string mutate(std::string s, const std::vector<std::string>& pool) {
    const int ops = 1 + static_cast<int>(below(4));
    for (int i = 0; i < ops; ++i) apply(s, pool);
    return s;
  }

 private:
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }

  void apply(std::string& s, const std::vector<std::string>& pool) {
    switch (below(8)) {
      case 0:  // flip one bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 1:  // one byte to an interesting or random value
        if (!s.empty()) s[below(s.size())] = static_cast<char>(below(2) ? interesting[below(6)] : rng_());
        break;
      case 2: {  // a little-endian integer of 2, 4 or 8 bytes to an interesting value
        const std::size_t width = std::size_t{2} << below(3);
        if (s.size() < width) break;
        const auto at = below(s.size() - width + 1);
        auto v = interesting[below(interesting.size())];
        if (below(4) == 0) v = s.size() + below(16) - 8;  // lengths near the real one
        for (std::size_t i = 0; i < width; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
        break;
      }
      case 3:  // truncate
        s.resize(below(s.size() + 1));
        break;
      case 4: {  // erase a range
        if (s.empty()) break;
        const auto at = below(s.size());
        s.erase(at, 1 + below(std::min<std::size_t>(16, s.size() - at)));
        break;
      }
      case 5: {  // insert random bytes
        std::string bytes(1 + below(16), '\0');
        for (auto& c : bytes) c = static_cast<char>(rng_());
        s.insert(below(s.size() + 1), bytes);
        break;
      }
      case 6: {  // duplicate a range
        if (s.empty()) break;
        const auto at = below(s.size());
        const auto n = 1 + below(std::min<std::size_t>(64, s.size() - at));
        s.insert(below(s.size() + 1), s.substr(at, n));
        break;
      }
      default: {  // splice: a prefix of this input and a suffix of another
        const auto& other = pool[below(pool.size())];
        s = s.substr(0, below(s.size() + 1)) + other.substr(below(other.size() + 1));
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

// Runs one input; @returns false when it raised something other than dsgd::error.
bool run(const std::string& input, const std::string& label) {
  try {
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL %s: escaped %s: %s\n", label.c_str(), typeid(e).name(), e.what());
  } catch (...) {
    std::fprintf(stderr, "FAIL %s: escaped a non-standard exception\n", label.c_str());
  }
  std::fprintf(stderr, "  input (%zu bytes):", input.size());
  for (std::size_t i = 0; i < input.size(); ++i)
    std::fprintf(stderr, "%s%02x", i % 32 == 0 ? "\n    " : " ",
                 static_cast<unsigned>(static_cast<unsigned char>(input[i])));
  std::fprintf(stderr, "\n");
  return false;
}

int usage() {
  std::fprintf(stderr,
               "usage: replay [--mutations N] [--seed S] [CORPUS_DIR_OR_FILE...]\n"
               "       replay --write-seeds DIR\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mutations = 3000;
  std::uint64_t seed = 20260101;
  std::vector<std::string> pool = dsgd::fuzz::seeds();
  std::size_t from_files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutations" && i + 1 < argc) {
      mutations = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--write-seeds" && i + 1 < argc) {
      const fs::path dir = argv[++i];
      fs::create_directories(dir);
      for (std::size_t k = 0; k < pool.size(); ++k) {
        std::ofstream out(dir / ("seed-" + std::to_string(k)), std::ios::binary);
        out.write(pool[k].data(), static_cast<std::streamsize>(pool[k].size()));
      }
      std::printf("wrote %zu seeds to %s\n", pool.size(), dir.c_str());
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else if (fs::is_directory(arg)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());  // a fixed order keeps the mutations reproducible
      for (const auto& f : files) pool.push_back(read_whole(f));
      from_files += files.size();
    } else if (fs::is_regular_file(arg)) {
      pool.push_back(read_whole(arg));
      ++from_files;
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", arg.c_str());
      return 2;
    }
  }
  if (pool.empty()) {
    std::fprintf(stderr, "replay: no seeds and no corpus\n");
    return 2;
  }

  std::size_t failures = 0;
  for (std::size_t k = 0; k < pool.size(); ++k)
    if (!run(pool[k], "corpus input " + std::to_string(k))) ++failures;
  mutator m(seed);
  for (std::size_t k = 0; k < mutations; ++k) {
    const auto& base = pool[k % pool.size()];
    if (!run(m.mutate(base, pool), "mutation " + std::to_string(k) + " (seed " + std::to_string(seed) + ")"))
      ++failures;
  }
  std::printf("%zu inputs (%zu generated seeds, %zu corpus files, %zu mutations): %zu failed\n",
              pool.size() + mutations, pool.size() - from_files, from_files, mutations, failures);
  return failures == 0 ? 0 : 1;
}
