#include "analyzer/model/fit_fixes.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "analyzer/emit/human_units.h"
#include "analyzer/model/random_bit_values.h"
#include "ir/checked_math.h"
#include "passes/rng/rng_mode_peak.h"

namespace spmdsim::analyzer {
namespace {

std::optional<bool> FitsIn(const FitVerdict& verdict, int64_t peak) {
  if (!verdict.fits) return std::nullopt;
  return peak <= verdict.capacity.usable_bytes;
}

// Bytes of the random bits held into the backward (the rng-key-residual findings).
int64_t HeldBytes(const passes::RngSiteResult& rng) {
  int64_t bytes = 0;
  for (const passes::RngFinding& f : rng.findings) {
    if (f.kind == passes::FindingKind::kRngKeyResidual) bytes = ir::SaturatingAdd(bytes, f.bytes);
  }
  return bytes;
}

// Whether a site hashes with XLA:GPU's threefry kernel (JAX's jax_threefry_gpu_kernel_lowering).
bool UsesThreefryKernel(const passes::RngSiteResult& rng) {
  for (const passes::RngSite& site : rng.sites) {
    if (site.kind == passes::SiteKind::kThreefryCustomCall) return true;
  }
  return false;
}

const char* ModeAction(const std::string& mode, bool threefry_kernel) {
  // With the kernel lowering on, turning it off is the user's lever: the hash is lowered to HLO,
  // which XLA:GPU fuses into the dropout where it can (the peak below assumes every site fuses).
  if (mode == "fused" && threefry_kernel) {
    return "jax_threefry_gpu_kernel_lowering=False (JAX's default: the hash in HLO, which XLA:GPU "
           "fuses into the dropout where it can; the peak assumes every site fuses)";
  }
  if (mode == "replicated") return "jax_threefry_partitionable=False (replicated threefry)";
  if (mode == "partitionable") return "jax_threefry_partitionable=True (partitionable threefry)";
  if (mode == "rbg") return "jax_default_prng_impl='rbg' (XLA's rng-bit-generator)";
  // rng_whatif.h's ideal lowering: no JAX flag makes it (jax_threefry_gpu_kernel_lowering's
  // cu_threefry2x32 call materializes its bits; cuda_validate/ runs such a kernel).
  return "a fused RNG kernel (counters, hash and dropout in one kernel, e.g. written in Pallas; "
         "no JAX flag gives it)";
}

void AddRandomBitFixes(const FitVerdict& verdict, const passes::RngSiteResult& rng,
                       std::vector<FitFix>& fixes) {
  if (!rng.remat.ran || rng.remat.saving_bytes <= 0) return;
  const int64_t held = HeldBytes(rng);
  const std::string basis = fmt::format(
      "the {} held buffers freed after their last forward read and live again from their first "
      "backward read, heap packed again (ideal: the recomputation's or the copies' own "
      "temporaries are not added)",
      rng.remat.buffers);
  FitFix remat;
  remat.fix = "remat-random-bits";
  remat.action =
      "recompute the random bits in the backward (draw them inside the jax.checkpoint'ed "
      "function, or a remat policy that does not save them)";
  remat.peak_bytes = remat.peak_high_bytes = rng.remat.peak_bytes_recomputed;
  remat.fits = FitsIn(verdict, remat.peak_bytes);
  remat.cost = fmt::format("the hash again for {} of random bits per step", HumanBytes(held));
  remat.basis = basis;
  fixes.push_back(remat);

  FitFix offload = remat;
  offload.fix = "offload-random-bits";
  offload.action =
      "offload the held random bits to host memory (a checkpoint policy that offloads them, "
      "e.g. save_and_offload_only_these_names)";
  offload.host_bytes_per_step = ir::SaturatingAdd(held, held);
  offload.cost = fmt::format(
      "{} over the host link per step (out after the forward, back "
      "before the backward)",
      HumanBytes(offload.host_bytes_per_step));
  fixes.push_back(offload);
}

void AddModeFixes(passes::ModuleAnalyses& analyses, const FitVerdict& verdict,
                  const FitFixInputs& inputs, std::vector<FitFix>& fixes) {
  for (const char* mode : {"replicated", "partitionable", "rbg", "fused"}) {
    if (std::string_view(mode) == "fused" && !inputs.gpu) continue;
    const passes::ModePeakWhatIf whatif =
        passes::EstimateModePeak(analyses, *inputs.rng, *inputs.memory, mode);
    if (!whatif.ran) continue;
    FitFix fix;
    fix.fix = mode;
    fix.action = ModeAction(mode, UsesThreefryKernel(*inputs.rng));
    fix.peak_bytes = whatif.peak_bytes;
    fix.peak_high_bytes = whatif.peak_high_bytes;
    fix.fits = FitsIn(verdict, whatif.peak_high_bytes);
    fix.wire_bytes_per_device = whatif.wire_bytes_per_device;
    fix.cost = fmt::format("{} sent per device per step by its collectives; other random bits{}",
                           HumanBytes(whatif.wire_bytes_per_device),
                           std::string_view(mode) == "rbg"
                               ? " (rng-bit-generator's are not stable across shardings)"
                               : " (the same on any mesh)");
    fix.basis = whatif.sites_resized == 0
                    ? std::string(
                          "no random-bits site's buffers change (the model of `rng "
                          "sites`): the peak as compiled")
                    : fmt::format(
                          "{} random-bits {} buffers resized from {} to {} (the "
                          "model of `rng sites`), heap packed again on the same schedule",
                          whatif.sites_resized, whatif.sites_resized == 1 ? "site's" : "sites'",
                          HumanBytes(whatif.bits_bytes_now), HumanBytes(whatif.bits_bytes_after));
    if (whatif.sites_not_sized > 0) {
      fix.basis += fmt::format(
          "; {} site{} fused here would materialize bits there, not added (a lower bound)",
          whatif.sites_not_sized, whatif.sites_not_sized == 1 ? "" : "s");
    }
    fixes.push_back(fix);
  }
}

// The random-bits sites' buffers among those live at the peak.
int64_t RandomBitsAtPeak(const passes::RngSiteResult& rng, const passes::PeakMemoryResult& peak) {
  const RandomBitValues values(rng, /*bits_only=*/true);
  int64_t bytes = 0;
  for (const passes::LiveBuffer& live : peak.live_at_peak) {
    if (values.Contains(live.instruction + live.index)) {
      bytes = ir::SaturatingAdd(bytes, live.size_bytes);
    }
  }
  return bytes;
}

}  // namespace

FitFixes RankFitFixes(passes::ModuleAnalyses& analyses, const FitVerdict& verdict,
                      const FitFixInputs& inputs) {
  FitFixes result;
  result.peak_bytes = verdict.peak_bytes;
  if (inputs.rng != nullptr && inputs.baseline != nullptr) {
    result.random_bits_at_peak_bytes = RandomBitsAtPeak(*inputs.rng, *inputs.baseline);
  }
  std::vector<FitFix>& fixes = result.ranked;
  if (inputs.rng != nullptr) {
    AddRandomBitFixes(verdict, *inputs.rng, fixes);
    if (inputs.memory != nullptr) AddModeFixes(analyses, verdict, inputs, fixes);
  }
  if (const std::optional<double> fraction = GpuFractionThatFits(verdict)) {
    FitFix fix;
    fix.fix = "mem-fraction";
    fix.action = fmt::format("XLA_PYTHON_CLIENT_MEM_FRACTION={:.2f}", *fraction);
    fix.peak_bytes = fix.peak_high_bytes = verdict.peak_bytes;
    fix.fits = true;
    fix.cost = fmt::format(
        "{} of the GPU for XLA instead of {:g}%: less for anything else in "
        "the process (NCCL, cuDNN, other clients)",
        HumanBytes(
            static_cast<int64_t>(static_cast<double>(verdict.capacity.memory_bytes) * *fraction)),
        *verdict.capacity.memory_fraction * 100);
    fix.basis = "the peak as compiled against a larger share of the device";
    fixes.push_back(fix);
  }
  std::stable_sort(fixes.begin(), fixes.end(), [](const FitFix& a, const FitFix& b) {
    return std::make_tuple(!a.fits.value_or(false), a.peak_high_bytes) <
           std::make_tuple(!b.fits.value_or(false), b.peak_high_bytes);
  });
  return result;
}

}  // namespace spmdsim::analyzer
