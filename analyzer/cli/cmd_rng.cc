// spmdsim rng bits (--seed S | --key K0,K1) [--x32]
//                  (--shape D0,D1,.. [--bits 8|16|32|64] | --split N | --fold-in D)
//                  --mode partitionable|replicated [--format text|json]
// spmdsim rng sites FILE|DIR... (analyzer/cli/cmd_rng_sites.cc)
// Prints exactly what jax.random produces (bits, split, fold_in), so users can check that a
// program draws the same numbers on any mesh, and which counters each mode hashes.
#include <charconv>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "analyzer/cli/command.h"
#include "analyzer/views/rng_view.h"
#include "passes/rng/threefry.h"

namespace spmdsim::analyzer {
namespace {

// Largest number of values or keys one call prints (2^26): bounded so that a typo in --shape
// cannot ask for terabytes.
constexpr int64_t kMaxRngValues = int64_t{1} << 26;

struct RngBitsOptions {
  std::string seed;  // an int64, parsed here: CLI11 wraps values past INT64_MAX
  std::string key;   // "K0,K1"
  bool x32 = false;
  std::optional<std::string> shape;  // "D0,D1,.."; "" = a scalar
  int bits = 32;
  std::optional<int64_t> split;
  std::optional<int64_t> fold_in;
  std::string mode;
  std::string format = "text";
};

int Usage(const std::string& message) {
  std::cerr << "spmdsim rng bits: " << message << "\n";
  return kExitUsage;
}

// "D0,D1,.." of non-negative integers; empty or "()" is a scalar's shape.
std::optional<std::vector<int64_t>> ParseShape(const std::string& text, std::string& error) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "()") return dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item(text.data() + start, comma - start);
    int64_t dim = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), dim);
    if (ec != std::errc() || end != item.data() + item.size() || dim < 0) {
      error =
          "--shape: expected comma-separated non-negative integers like 4,5,67, got '" + text + "'";
      return std::nullopt;
    }
    dims.push_back(dim);
    start = comma + 1;
  }
  return dims;
}

std::optional<passes::Pair32> ParseKey(const std::string& text) {
  const size_t comma = text.find(',');
  if (comma == std::string::npos) return std::nullopt;
  uint32_t k0 = 0;
  uint32_t k1 = 0;
  const char* first_end = text.data() + comma;
  const char* last_end = text.data() + text.size();
  const auto a = std::from_chars(text.data(), first_end, k0);
  const auto b = std::from_chars(first_end + 1, last_end, k1);
  if (a.ec != std::errc() || a.ptr != first_end || b.ec != std::errc() || b.ptr != last_end) {
    return std::nullopt;
  }
  return passes::Pair32{k0, k1};
}

int RunRngBits(const RngBitsOptions& options) {
  RngReport report;
  report.mode = *passes::ParseRngMode(options.mode);  // CLI11 checked the spelling
  if (!options.key.empty()) {
    const std::optional<passes::Pair32> key = ParseKey(options.key);
    if (!key)
      return Usage("--key: expected two u32 words K0,K1 (key_data of a key), got '" + options.key +
                   "'");
    report.key = *key;
  } else if (!options.seed.empty()) {
    int64_t seed = 0;
    const char* end = options.seed.data() + options.seed.size();
    const auto parsed = std::from_chars(options.seed.data(), end, seed);
    if (parsed.ec != std::errc() || parsed.ptr != end) {
      return Usage(
          "--seed: expected an integer in [-2^63, 2^63 - 1] (JAX converts seeds to int64), "
          "got '" +
          options.seed + "'");
    }
    report.key =
        passes::KeyFromSeed(seed, options.x32 ? passes::SeedWidth::k32 : passes::SeedWidth::k64);
  } else {
    return Usage("give --seed S (as jax.random.key(S)) or --key K0,K1");
  }
  const int forms = (options.shape ? 1 : 0) + (options.split ? 1 : 0) + (options.fold_in ? 1 : 0);
  if (forms != 1) return Usage("give exactly one of --shape, --split or --fold-in");

  if (options.shape) {
    std::string error;
    const std::optional<std::vector<int64_t>> shape = ParseShape(*options.shape, error);
    if (!shape) return Usage(error);
    const std::optional<int64_t> count = passes::ElementCount(*shape);
    if (!count || *count > kMaxRngValues) {
      return Usage("--shape " + *options.shape + " has " +
                   (count ? std::to_string(*count) : std::string("too many")) +
                   " elements; at most " + std::to_string(kMaxRngValues) +
                   " (2^26) are printed: ask for a smaller shape");
    }
    passes::BitsResult bits = passes::RandomBits(report.key, *shape, options.bits, report.mode);
    if (!bits.error.empty()) return Usage(bits.error);
    report.command = "bits";
    report.shape = *shape;
    report.bit_width = options.bits;
    report.values = std::move(bits.values);
  } else if (options.split) {
    if (*options.split < 0 || *options.split > kMaxRngValues) {
      return Usage("--split: expected a count in [0, 2^26], got " + std::to_string(*options.split));
    }
    passes::KeysResult keys = passes::Split(report.key, *options.split, report.mode);
    if (!keys.error.empty()) return Usage(keys.error);
    report.command = "split";
    report.num = *options.split;
    report.keys = std::move(keys.keys);
  } else {
    if (*options.fold_in < 0 || *options.fold_in > int64_t{0xFFFFFFFF}) {
      return Usage("--fold-in: JAX converts the data to uint32; expected [0, 4294967295], got " +
                   std::to_string(*options.fold_in));
    }
    report.command = "fold_in";
    report.data = static_cast<uint32_t>(*options.fold_in);
    report.keys.push_back(passes::FoldIn(report.key, report.data));
  }
  if (options.format == "json") {
    PrintRngJson(report, std::cout);
  } else {
    PrintRngText(report, std::cout);
  }
  std::cout.flush();
  return std::cout.good() ? kExitOk : kExitUsage;
}

}  // namespace

void RegisterRngCommand(CLI::App& app, RunFn& run) {
  CLI::App* rng = app.add_subcommand(
      "rng",
      "Random numbers: `rng sites DUMP` finds every RNG site of a dump (mode, buffers, "
      "collectives, what-if per mode, key residuals); `rng bits` prints JAX's threefry bits "
      "exactly");
  rng->footer(
      "Start with: spmdsim rng sites DIR   (a --xla_dump_to directory or an HLO text file)");
  rng->require_subcommand(1);
  auto options = std::make_shared<RngBitsOptions>();
  CLI::App* bits = rng->add_subcommand(
      "bits", "Print what jax.random.bits / split / fold_in return for a key, in either mode");
  bits->add_option("--seed", options->seed,
                   "Integer seed, read as jax.random.key(S) under jax_enable_x64: key = "
                   "[S >> 32, S & 0xFFFFFFFF] of the int64 S");
  bits->add_flag("--x32", options->x32,
                 "Read --seed as JAX does without jax_enable_x64 (its default): key = "
                 "[0, S mod 2^32]; the two agree for 0 <= S < 2^31");
  bits->add_option("--key", options->key,
                   "Raw key data K0,K1 (jax.random.key_data) instead of --seed");
  bits->add_option("--shape", options->shape,
                   "Shape of jax.random.bits, e.g. 8,1024 (\"\" for a scalar)");
  bits->add_option("--bits", options->bits, "Bit width of the values (dtype uint8..uint64)")
      ->check(CLI::IsMember({8, 16, 32, 64}))
      ->capture_default_str();
  bits->add_option("--split", options->split, "Print jax.random.split(key, N)");
  bits->add_option("--fold-in", options->fold_in, "Print jax.random.fold_in(key, D)");
  bits->add_option("--mode", options->mode,
                   "Counter scheme: partitionable (jax_threefry_partitionable=True, JAX's default "
                   "since 0.5.0) or replicated (False)")
      ->required()
      ->check(CLI::IsMember({"partitionable", "replicated"}));
  bits->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  bits->callback([options, &run] { run = [options] { return RunRngBits(*options); }; });
  RegisterRngSitesSubcommand(*rng, run);
}

}  // namespace spmdsim::analyzer
