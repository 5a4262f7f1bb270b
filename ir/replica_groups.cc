#include "ir/replica_groups.h"

#include <fmt/format.h>

#include <algorithm>

namespace spmdsim::ir {

namespace {

// Groups of a mesh-axes list: devices sharing their coordinates outside the group axes, ordered
// by those outside coordinates (row-major), and within a group by the group axes as listed.
std::vector<std::vector<int64_t>> ExpandMesh(const MeshAxesGroups& mesh) {
  int64_t total = 1;
  for (const auto& [name, size] : mesh.axes) total *= size;
  std::vector<int64_t> device_ids = mesh.device_ids;
  if (!mesh.device_iota.reshape_dims.empty()) {
    auto ids = ExpandIota(mesh.device_iota);
    if (!ids) return {};
    device_ids = std::move(*ids);
  }
  if (!device_ids.empty() && static_cast<int64_t>(device_ids.size()) != total) return {};
  // For every group axis ref: mesh axis index, stride of its part inside the axis, part size.
  struct Part {
    size_t axis;
    int64_t inner;  // product of the axis' dims more minor than the part
    int64_t size;
  };
  std::vector<Part> parts;
  for (const MeshAxisRef& ref : mesh.group_axes) {
    for (size_t a = 0; a < mesh.axes.size(); ++a) {
      if (mesh.axes[a].first != ref.name) continue;
      const int64_t n = mesh.axes[a].second;
      if (ref.pre_size == 0) {
        parts.push_back({a, 1, n});
      } else {
        parts.push_back({a, n / (ref.pre_size * ref.size), ref.size});
      }
    }
  }
  int64_t group_size = 1;
  for (const Part& p : parts) group_size *= p.size;
  // Parts are taken out of an axis coordinate from the most major down, so that taking one out
  // leaves the strides of the ones below it unchanged.
  std::vector<Part> removal = parts;
  std::stable_sort(removal.begin(), removal.end(),
                   [](const Part& a, const Part& b) { return a.inner > b.inner; });
  if (group_size <= 0 || total % group_size != 0) return {};
  const int64_t num_groups = total / group_size;
  std::vector<std::vector<int64_t>> groups(static_cast<size_t>(num_groups));
  std::vector<std::pair<int64_t, int64_t>> keyed;  // (group index, position) per device
  std::vector<int64_t> coords(mesh.axes.size());
  for (int64_t index = 0; index < total; ++index) {
    int64_t rest = index;
    for (size_t a = mesh.axes.size(); a-- > 0;) {
      coords[a] = rest % mesh.axes[a].second;
      rest /= mesh.axes[a].second;
    }
    // Position inside the group: mixed radix over the parts, first part most significant.
    int64_t position = 0;
    std::vector<int64_t> outside = coords;
    for (const Part& p : parts) {
      const int64_t digit = (coords[p.axis] / p.inner) % p.size;
      position = position * p.size + digit;
    }
    for (const Part& p : removal) {
      // Remove the part from the axis coordinate: keep the digits above and below it.
      const int64_t c = outside[p.axis];
      outside[p.axis] = (c / (p.inner * p.size)) * p.inner + c % p.inner;
    }
    // Group index: row-major over the remaining extent of every axis.
    int64_t group = 0;
    for (size_t a = 0; a < mesh.axes.size(); ++a) {
      int64_t extent = mesh.axes[a].second;
      for (const Part& p : parts) {
        if (p.axis == a) extent /= p.size;
      }
      group = group * extent + outside[a];
    }
    const int64_t device = device_ids.empty() ? index : device_ids[static_cast<size_t>(index)];
    if (group < 0 || group >= num_groups) return {};  // refs overlap: not a partition
    auto& g = groups[static_cast<size_t>(group)];
    if (g.size() <= static_cast<size_t>(position)) g.resize(static_cast<size_t>(position) + 1, -1);
    g[static_cast<size_t>(position)] = device;
  }
  return groups;
}

// An axis name in quotes that give it back unchanged when lexed: the text of a quoted token keeps
// its escapes, so it needs a quote character that does not occur in it unescaped.
std::string QuoteAxis(std::string_view name) {
  bool has_single = false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '\\') {
      ++i;
    } else if (name[i] == '\'') {
      has_single = true;
    }
  }
  const char quote = has_single ? '"' : '\'';
  return quote + std::string(name) + quote;
}

}  // namespace

std::vector<std::vector<int64_t>> ReplicaGroups::Expand() const {
  if (uses_mesh) return ExpandMesh(mesh);
  if (!uses_iota) return groups;
  auto ids = ExpandIota(iota);
  std::vector<std::vector<int64_t>> out;
  if (!ids || iota_group_size <= 0 ||
      static_cast<int64_t>(ids->size()) != iota_num_groups * iota_group_size) {
    return out;
  }
  for (int64_t g = 0; g < iota_num_groups; ++g) {
    out.emplace_back(ids->begin() + g * iota_group_size, ids->begin() + (g + 1) * iota_group_size);
  }
  return out;
}

int64_t ReplicaGroups::GroupSize() const {
  if (uses_mesh) {
    int64_t size = 1;
    for (const MeshAxisRef& ref : mesh.group_axes) {
      if (ref.pre_size != 0) {
        size *= ref.size;
        continue;
      }
      for (const auto& [name, axis_size] : mesh.axes) {
        if (name == ref.name) size *= axis_size;
      }
    }
    return size;
  }
  if (uses_iota) return iota_group_size;
  return groups.empty() ? 0 : static_cast<int64_t>(groups.front().size());
}

int64_t ReplicaGroups::NumGroups() const {
  if (uses_mesh) {
    int64_t total = 1;
    for (const auto& axis : mesh.axes) total *= axis.second;
    const int64_t size = GroupSize();
    return size > 0 ? total / size : 0;
  }
  if (uses_iota) return iota_num_groups;
  return static_cast<int64_t>(groups.size());
}

std::string ReplicaGroups::ToString() const {
  if (uses_mesh) {
    std::string out = "mesh[";
    for (size_t i = 0; i < mesh.axes.size(); ++i) {
      if (i) out += ",";
      out += QuoteAxis(mesh.axes[i].first) + "=" + std::to_string(mesh.axes[i].second);
    }
    out += "]";
    if (!mesh.device_ids_text.empty()) out += ", device_ids=(" + mesh.device_ids_text + ")";
    out += " {";
    for (size_t i = 0; i < mesh.group_axes.size(); ++i) {
      if (i) out += ",";
      const MeshAxisRef& ref = mesh.group_axes[i];
      out += QuoteAxis(ref.name);
      if (ref.pre_size != 0) out += fmt::format(":({}){}", ref.pre_size, ref.size);
    }
    return out + "}";
  }
  if (uses_iota) {
    std::string out = fmt::format("[{},{}]<=[{}]", iota_num_groups, iota_group_size,
                                  fmt::join(iota.reshape_dims, ","));
    if (!iota.transpose_perm.empty()) {
      out += fmt::format("T({})", fmt::join(iota.transpose_perm, ","));
    }
    return out;
  }
  std::string out = "{";
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i) out += ",";
    out += fmt::format("{{{}}}", fmt::join(groups[i], ","));
  }
  return out + "}";
}

}  // namespace spmdsim::ir
