// What spmdsim makes of the out-of-memory message XLA printed (read by dump/oom_log.h): the peak
// buffers with exact sizes, by category, which hold random bits and what each fix would save.
//
// Sizes: XLA prints them rounded ("4.89GiB"). Where the buffer has a shape, its exact bytes come
// from the shape (ir/shape.h: a tiled TPU layout padded to whole tiles, a tuple its table of
// 8-byte pointers), provided they agree with the printed size within its rounding; otherwise, and
// when there is no shape, the printed figure is kept. `size_from` says which.
//
// Categories (largest first in `categories`): "parameter" (Entry Parameter Subshape, or a TPU
// allocation type naming an argument), "output" (live-out: the buffers whose sizes add up to the
// stats' maybe_live_out allocation; XLA does not mark them), "temporary", "random bits"
// (temporaries holding random bits, analyzer/model/oom_rng.h), "temporary or output" (no stats to
// tell).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dump/oom_log.h"
#include "passes/memory/memory_analysis.h"
#include "passes/rng/rng_site_kinds.h"
#include "passes/rng/rng_whatif.h"

namespace spmdsim::analyzer {

// A listed buffer (its fields as XLA printed them) and what spmdsim makes of it.
struct OomBuffer : dump::OomLogBuffer {
  // The size spmdsim uses: the shape's exact bytes or the listed figure, as `size_from` says.
  int64_t size_bytes = 0;
  std::string size_from;               // "shape" | "listed size"
  int64_t listed_size_bytes = 0;       // read from size_text
  std::optional<int64_t> shape_bytes;  // from the shape, when it parses
  std::string category;                // see the header comment
  // Random bits (analyzer/model/oom_rng.h).
  bool random = false;
  std::string role;  // "hash output (threefry2x32)", "counters (iota_2x32_shape)", ...
  std::string site;  // op_name scope
  passes::SitePhase phase = passes::SitePhase::kOther;
};

struct OomCategory {
  std::string category;
  int64_t buffers = 0;
  int64_t bytes = 0;
  std::vector<int64_t> numbers;  // buffer numbers, largest first
};

struct OomSite {
  std::string site;
  passes::SitePhase phase = passes::SitePhase::kOther;
  int64_t buffers = 0;
  int64_t bytes = 0;    // listed at the peak
  int64_t largest = 0;  // its largest listed buffer
  std::string shape;    // of that buffer: the random tensor on one device
  int64_t local_elements = 0;
  int64_t global_elements = 0;  // local x devices; 0 when the device count is unknown
  // What each lowering would materialize for this site per device (passes/rng/rng_whatif.h, the
  // model `rng sites` uses); only when the device count is known.
  std::optional<passes::RngWhatIf> whatif;
};

struct OomSaving {
  std::string fix;  // "fused", "rbg", "remat", "replicated"
  // Of the listed random buffers at the peak: their bytes minus what the fix materializes for
  // their sites; negative when the fix costs more. nullopt when it needs the device count.
  std::optional<int64_t> saving_bytes;
  std::optional<int64_t> materialized_bytes;  // what the fix materializes for these sites
  bool recommended = false;
  std::string explanation;
};

struct OomOptions {
  // Devices each random array is split over (--devices, or the dump's partitions); 0 = unknown.
  int64_t devices = 0;
  std::string devices_from;  // "--devices" | "dump"
  // The dump shows rematerialized computations (passes/memory/remat_detection.h).
  bool dump_rematerialized = false;
  std::string dump_remat_evidence;  // "jax.checkpoint: instruction ... (op_name ...)"
  // How the compiling XLA concatenates replicated threefry's halves (--jax-version).
  passes::ConcatLowering concat = passes::ConcatLowering::kAllGather;
  // A message that lists no buffers (libtpu's E1000) is read with these in its place: the
  // buffers live at spmdsim's peak of the --dump module (PeakBuffersAsListed).
  std::vector<dump::OomLogBuffer> peak_buffers;
};

// The buffers live at a module's peak as XLA's listing would give them: numbered largest first,
// exact sizes, op_name and source, the opcode as label, the kind as allocation type.
std::vector<dump::OomLogBuffer> PeakBuffersAsListed(const std::vector<passes::LiveBuffer>& live);

// The message as read (dump::OomMessage) and what spmdsim makes of its listing.
struct OomReport : dump::OomMessage {
  std::vector<OomBuffer> buffers;       // as listed, once
  int64_t total_bytes = 0;              // sum of size_bytes
  std::vector<OomCategory> categories;  // largest first
  int64_t random_buffers = 0;
  int64_t random_bytes = 0;
  std::vector<OomSite> sites;  // random sites, in order of first appearance
  std::vector<OomSaving> savings;
  int64_t devices = 0;  // as in OomOptions
  std::string devices_from;
  bool rematerialized = false;  // the listing's names or the dump show remat
  std::string remat_evidence;
};

// Reads a pasted log (dump::ReadOomLog) and interprets it. nullopt with `error` set when no
// "Buffer N:" / "N. Size:" entry with a size is found.
std::optional<OomReport> ParseOomLog(std::string_view text, std::string& error,
                                     const OomOptions& options = {});

}  // namespace spmdsim::analyzer
