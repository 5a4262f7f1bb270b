// The random bits of an OOM listing (analyzer/model/oom_report.h): which peak buffers hold them,
// grouped by the site that drew them, what each RNG lowering would materialize for those sites, and
// what each fix would save of the listed buffers.
//
// A buffer is random when its op_name names a threefry hash (threefry2x32), its counters
// (iota_2x32_shape), rng_bit_generator or random_bits, and its shape is unsigned-integer. Its
// site is the op_name without that last component (e.g. ".../block_0/mlp_dropout"); its phase is
// forward under jvp(...) only and backward under transpose(jvp(...)).
//
// What each lowering materializes is passes/rng/rng_whatif.h, the model `spmdsim rng sites` uses,
// on the site's geometry: the listed shape is the random tensor on one device (nl elements) and the
// device count P (--devices, or the dump's partitions) makes the global tensor nl x P. rbg and
// replicated threefry materialize global bits on every device, so without P they are not
// figured. Savings are of the listed buffers only (the listing shows the peak, not every buffer):
//   fused       a lowering that fuses counters, hash and consumer: every random buffer.
//   rbg         the listed random bytes minus the global bits rng-bit-generator makes per device.
//   remat       recomputing the bits in the backward: every forward random buffer held at the
//               peak; nothing when the program is already rematerialized (the listing's op_names
//               or instruction names, or the dump: passes/memory/remat_detection.h).
//   replicated  the listed random bytes minus what replicated threefry materializes.
#pragma once

#include "analyzer/model/oom_report.h"

namespace spmdsim::analyzer {

// Sets random, role, site and phase of each buffer.
void ClassifyOomRandomBuffers(OomReport& report);

// Sets random_buffers/bytes, sites (with their what-if), savings, devices and the remat verdict.
void AddOomRngWhatIf(OomReport& report, const OomOptions& options);

}  // namespace spmdsim::analyzer
