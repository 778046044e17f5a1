// A short, deterministic fuzz run of one bench/fuzz/ target inside the regular test suite (gcc,
// ASan + UBSan; the long runs use libFuzzer and clang, bench/docs/fuzz.md).
//
//   fuzz_smoke_<target> <corpus dir> <mutated inputs> [seed]
//
// Feeds every file of the corpus to LLVMFuzzerTestOneInput as it is, then the given number of
// mutants: each a corpus file (or two spliced) changed in one to four places: bit flips, random
// bytes, inserted tokens that parsers trip over (quotes, brackets, huge and negative numbers,
// NULs, deep nesting), deleted, duplicated or cut-off ranges. The seed fixes the sequence, so a
// failure reproduces exactly; the failing input is written to $FUZZ_SMOKE_ARTIFACT_DIR (default:
// the working directory) before it runs.
#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> read_corpus(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    std::fprintf(stderr, "cannot open corpus directory %s\n", dir.c_str());
    std::exit(2);
  }
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());  // the order, and so the run, must not depend on the filesystem
  std::vector<std::string> corpus;
  for (const auto& n : names) {
    std::ifstream f(dir + "/" + n, std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "corpus directory %s is empty\n", dir.c_str());
    std::exit(2);
  }
  return corpus;
}

const std::vector<std::string>& tokens() {
  static const std::vector<std::string> t = {
      "\"", "'", "<", ">", "</", "/>", "{", "}", "[", "]", ":", ",", "\\", "\\u0000", std::string(1, '\0'), "\xff",
      "-1", "0", "-0", "1e400", "-9223372036854775809", "18446744073709551616", "99999999999999999999", "NaN",
      "true", "null", "\"\"", "{}", "[]", "<a>", "<![CDATA[", "]]>", "&amp;", "&#0;", "&xxe;",
      "<!DOCTYPE a [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>", std::string(300, '['), std::string(300, '{'),
      "2026-11-24T16:00:00Z", "0000-00-00T00:00:00Z", "bytes=0-", "bytes=0-18446744073709551615", "\r\n", "%00",
  };
  return t;
}

std::string mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  std::string s = corpus[pick(corpus.size())];
  int changes = 1 + static_cast<int>(pick(4));
  for (int c = 0; c < changes; ++c) {
    size_t at = pick(s.size() + 1);
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // a random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 2:  // insert a token
        s.insert(at, tokens()[pick(tokens().size())]);
        break;
      case 3: {  // delete a range
        size_t n = pick(std::min<size_t>(s.size() - std::min(at, s.size()), 64) + 1);
        if (at < s.size()) s.erase(at, n);
        break;
      }
      case 4: {  // duplicate a range
        if (at < s.size()) s.insert(at, s.substr(at, pick(64) + 1));
        break;
      }
      case 5:  // cut off
        s.resize(at);
        break;
      case 6: {  // splice with another corpus entry
        const std::string& other = corpus[pick(corpus.size())];
        s = s.substr(0, at) + other.substr(pick(other.size() + 1));
        break;
      }
      default:  // replace a token-sized range with a token
        if (at < s.size()) s.replace(at, pick(8) + 1, tokens()[pick(tokens().size())]);
        break;
    }
  }
  return s;
}

void run(const std::string& input, const std::string& artifact) {
  // Written first: if the target crashes, the input that did it is on disk.
  if (!artifact.empty()) {
    std::ofstream(artifact, std::ios::binary | std::ios::trunc).write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <corpus dir> <mutated inputs> [seed]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> corpus = read_corpus(argv[1]);
  long mutants = std::strtol(argv[2], nullptr, 10);
  uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const char* dir = std::getenv("FUZZ_SMOKE_ARTIFACT_DIR");
  std::string artifact = std::string(dir != nullptr && *dir != '\0' ? dir : ".") + "/fuzz-smoke-last-input";
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& c : corpus) run(c, artifact);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < mutants; ++i) run(mutate(corpus, rng), artifact);
  std::remove(artifact.c_str());  // nothing failed
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu corpus inputs and %ld mutants (seed %llu) in %.1f s: no finding\n", corpus.size(), mutants,
              static_cast<unsigned long long>(seed), seconds);
  return 0;
}
