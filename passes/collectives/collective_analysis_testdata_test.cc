// The collective table of every partitioned dump in testdata/ against
// testdata/expected_collectives.json, which tools/count_collectives.py computes independently
// (regular expressions over the raw HLO text: result shapes, replica_groups text, the
// known_trip_count of enclosing loops). Regenerate it with
//   python3 tools/count_collectives.py > testdata/expected_collectives.json
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "passes/collectives/collective_analysis.h"
#include "testing/corpus_files.h"
#include "testing/corpus_test.h"

namespace spmdsim::passes {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

SPMDSIM_CORPUS_TEST("collectives of every partitioned dump equal the independent count", program) {
  const std::string name = program.at("name");
  static const nlohmann::json expected =
      ReadJson(SPMDSIM_TESTDATA_DIR "/expected_collectives.json");
  const std::string file = program.at("files").at("after");
  DYNAMIC_SECTION(name) {
    const nlohmann::json& want = expected.at("programs").at(name);
    const std::unique_ptr<ir::HloModule> module = testing::LoadCorpusModule(file);
    const CollectiveResult result = AnalyzeCollectives(*module);

    CHECK(result.num_devices == want.at("num_devices").get<int64_t>());
    CHECK(result.ops.size() == want.at("ops").size());
    for (const auto& [kind, count] : want.at("counts").items()) {
      REQUIRE(result.by_kind.count(kind) == 1);
      CHECK(result.by_kind.at(kind).count == count.get<int64_t>());
      CHECK(result.by_kind.at(kind).executions == want.at("executions").at(kind).get<int64_t>());
    }
    CHECK(result.by_kind.size() == want.at("counts").size());
    for (const CollectiveOp& op : result.ops) {
      INFO(op.instruction);
      REQUIRE(want.at("ops").contains(op.instruction));
      const nlohmann::json& w = want.at("ops").at(op.instruction);
      CHECK(ir::CollectiveKindName(op.kind) == w.at("kind").get<std::string>());
      CHECK(op.group_size == w.at("group_size").get<int64_t>());
      CHECK(op.bytes == w.at("bytes").get<int64_t>());
      CHECK(op.wire_bytes_per_device == w.at("wire_bytes_per_device").get<int64_t>());
      CHECK(op.loop_multiplier == w.at("loop_multiplier").get<int64_t>());
      CHECK(op.trip_count_known);
      CHECK_FALSE(op.op_name.empty());
      // file:line of the code that caused it, where XLA's metadata gives one (a parameter's
      // all-gather carries only the parameter's op_name)
      const ir::HloInstruction* instr = nullptr;
      for (const ir::HloComputation* c : module->computations) {
        for (const ir::HloInstruction* i : c->instructions) {
          if (i->name == op.instruction) instr = i;
        }
      }
      REQUIRE(instr != nullptr);
      // A combined collective without metadata of its own takes its operands' (never empty).
      if (instr->metadata().op_name.empty()) {
        CHECK_FALSE(op.source.empty());
      } else {
        CHECK(op.source.empty() == instr->metadata().source_file.empty());
      }
    }
    CHECK(result.total_wire_bytes_per_device ==
          want.at("total_wire_bytes_per_device").get<int64_t>());
  }
}

TEST_CASE("group resolution and mesh axes on the 4x2 mesh dump") {
  const std::unique_ptr<ir::HloModule> module = testing::LoadCorpusModule(
      "dumps/mesh4x2_partitionable_remat/"
      "module_0000.jit_train_step.cpu_after_optimizations.txt.gz");
  const CollectiveResult result = AnalyzeCollectives(*module);
  int model_axis = 0;
  int data_axis = 0;
  for (const CollectiveOp& op : result.ops) {
    CHECK(op.id_kind == DeviceIdKind::kGlobalDeviceId);
    // 'model' (size 2): [4,2]<=[8] = {0,1},{2,3},...; 'data' (size 4): {0,2,4,6},{1,3,5,7}.
    if (op.mesh_axes == "axis 1 of mesh [4,2]") {
      ++model_axis;
      CHECK(op.groups().front() == std::vector<int64_t>{0, 1});
    } else if (op.mesh_axes == "axis 0 of mesh [4,2]") {
      ++data_axis;
      CHECK(op.groups().front() == std::vector<int64_t>{0, 2, 4, 6});
      CHECK(op.operand_count == 31);  // the combined gradient all-reduce: 31 parameters
    }
  }
  CHECK(model_axis == 8);  // Megatron: 2 per block forward + 2 per block backward
  CHECK(data_axis == 1);
}

}  // namespace
}  // namespace spmdsim::passes
