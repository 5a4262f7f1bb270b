#include "ir/device_list.h"

#include "ir/checked_math.h"

namespace spmdsim::ir {

std::optional<int64_t> IotaSize(const IotaList& iota) {
  const size_t rank = iota.reshape_dims.size();
  if (rank > kMaxIotaRank) return std::nullopt;
  int64_t total = 1;
  for (int64_t d : iota.reshape_dims) {
    auto product = CheckedMul(total, d);
    if (d < 0 || !product || *product > kMaxDevices) return std::nullopt;
    total = *product;
  }
  if (iota.transpose_perm.empty()) return total;
  if (iota.transpose_perm.size() != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (int64_t p : iota.transpose_perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
      return std::nullopt;
    }
    seen[static_cast<size_t>(p)] = true;
  }
  return total;
}

std::optional<std::vector<int64_t>> ExpandIota(const IotaList& iota) {
  const auto size = IotaSize(iota);
  if (!size) return std::nullopt;
  const int64_t total = *size;
  const size_t rank = iota.reshape_dims.size();
  std::vector<int64_t> perm = iota.transpose_perm;
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  }
  // Strides of the source (row-major over reshape_dims), read in transposed order.
  std::vector<int64_t> src_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) src_stride[i - 1] = src_stride[i] * iota.reshape_dims[i];
  std::vector<int64_t> out_dims(rank);
  std::vector<int64_t> out_stride(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = iota.reshape_dims[static_cast<size_t>(perm[i])];
    out_stride[i] = src_stride[static_cast<size_t>(perm[i])];
  }
  std::vector<int64_t> result;
  result.reserve(static_cast<size_t>(total));
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t value = 0;
    for (size_t i = 0; i < rank; ++i) value += index[i] * out_stride[i];
    result.push_back(value);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out_dims[i]) break;
      index[i] = 0;
    }
  }
  return result;
}

}  // namespace spmdsim::ir
