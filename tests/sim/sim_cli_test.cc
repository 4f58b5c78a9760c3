// End-to-end tests of `vgpu sim`: bad flags and malformed traces exit 2 with a message that names
// the flag or the file, line and column; a small run writes the CSV, chart and JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim_cli_fixture.h"
#include "support/run_command.h"

namespace vgpu {
namespace {

using testing::RunCommand;

const std::string kVgpu = VGPU_BIN;
const std::string kData = std::string(VGPU_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";

class SimCli : public SimCliFixture {
 protected:
  SimCli() : SimCliFixture("sim-cli") {}
  void SetUp() override {
    SimCliFixture::SetUp();
    nodes_ = Write("nodes.csv",
                   "sn,cpu_milli,memory_mib,gpu,model\n"
                   "n0,32000,131072,4,T4\nn1,32000,131072,2,T4\nn2,64000,262144,8,G2\n");
    pods_ = Write("pods.csv",
                  "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                  "p0,4000,8192,1,500,\np1,2000,4096,1,300,T4\np2,8000,16384,2,1000,G2\n"
                  "p3,1000,1024,0,0,\np4,4000,8192,1,1000,\n");
  }
};

TEST_F(SimCli, HelpListsFlagsAndPolicies) {
  auto r = RunCommand(kVgpu + " sim --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--nodes", "--pods", "--policy", "--seeds", "--inflate", "--csv", "--svg",
                        "--published", "--json", "fgd-online", "hami-binpack", "default"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

TEST_F(SimCli, BadFlagsAndValues) {
  const std::string io = "--nodes " + nodes_ + " --pods " + pods_;
  ExpectBadInput(io + " --bogus", "--bogus");
  ExpectBadInput(io + " --policy tetris", "unknown policy 'tetris'");
  ExpectBadInput(io + " --policy fgd,", "empty name");
  ExpectBadInput(io + " --seeds 5-3", "--seeds");
  ExpectBadInput(io + " --seeds x", "--seeds");
  ExpectBadInput(io + " --inflate -1", "--inflate");
  ExpectBadInput(io + " --inflate abc", "--inflate");
  ExpectBadInput(io + " --threads -2", "--threads");
  ExpectBadInput(io + " --option bestfit:colour=red", "no option 'colour'");
  ExpectBadInput(io + " --option nonsense", "policy:key=value");
  ExpectBadInput(io + " --option hami-spread:split=1 --policy bestfit", "not being run");
  ExpectBadInput("--nodes " + dir_ + "/missing.csv --pods " + pods_, "no such file");
  ExpectBadInput(io + " --published " + dir_ + "/missing.csv", "--published");
}

TEST_F(SimCli, MalformedTracesNameFileLineAndColumn) {
  const std::string h = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
  struct Case {
    const char* file;
    std::string text;
    std::string message;
  } cases[] = {
      {"missing.csv", "name,cpu_milli,num_gpu,gpu_milli\np,1,1,1\n",
       ":1: missing column 'memory_mib'"},
      {"text.csv", h + "p,1,2,1,1000,\nq,12x,2,1,1000,\n",
       ":3: column 'cpu_milli' (2): \"12x\" is not an integer"},
      {"negative.csv", h + "p,1,2,-1,1000,\n", ":2: column 'num_gpu' (4): \"-1\" is negative"},
      {"empty.csv", "", ": empty file"},
      {"model.csv", h + "p,1,2,1,500,T4|X9\n", ":2: column 'gpu_spec' (6): unknown GPU model 'X9'"},
  };
  for (const Case& c : cases) {
    const std::string path = Write(c.file, c.text);
    ExpectBadInput("--nodes " + nodes_ + " --pods " + path, path + c.message);
  }
  const std::string bad_nodes =
      Write("badnodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,abc,1,1,T4\n");
  ExpectBadInput("--nodes " + bad_nodes + " --pods " + pods_,
                 bad_nodes + ":2: column 'cpu_milli' (2): \"abc\" is not an integer");
  const std::string bad_pub = Write("badpub.csv", "workload,policy\n");
  ExpectBadInput("--nodes " + nodes_ + " --pods " + pods_ + " --published " + bad_pub,
                 "missing column 'stat_over_10_seeds'");
}

TEST_F(SimCli, SmallRunWritesCsvChartAndJson) {
  const std::string csv = dir_ + "/out.csv", svg = dir_ + "/out.svg";
  auto r = Sim("--nodes " + nodes_ + " --pods " + pods_ +
               " --policy bestfit,fgd --seeds 1-2 --csv " + csv + " --svg " + svg + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"policies\""), std::string::npos);
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "policy,seed,arrived_pct,allocated_pct,unallocated_pct,frag_rate_pct");
  int rows = 0, fgd_rows = 0;
  for (std::string line; std::getline(in, line);) {
    ++rows;
    fgd_rows += line.rfind("fgd,", 0) == 0 ? 1 : 0;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 5) << line;
  }
  EXPECT_GT(rows, 4 * 40);  // small pods-to-capacity ratio: some levels have no row
  EXPECT_EQ(fgd_rows * 2, rows);
  std::ifstream chart(svg);
  std::stringstream ss;
  ss << chart.rdbuf();
  EXPECT_EQ(ss.str().rfind("<?xml", 0), 0u);
  EXPECT_NE(ss.str().find("</svg>"), std::string::npos);
}

// Outputs are checked before the run: a bad --csv or --svg fails at once (no table printed, no
// file created), in both modes.
TEST_F(SimCli, UnwritableOutputsFailBeforeTheRun) {
  const std::string io = "--nodes " + nodes_ + " --pods " + pods_;
  const std::string missing_dir = dir_ + "/no-such-dir/x.csv";
  for (const std::string mode : {"", " --mode replay"}) {
    for (const std::string flag : {"--csv", "--svg"}) {
      auto r = Sim(io + mode + " " + flag + " " + missing_dir + " --json");
      EXPECT_EQ(r.exit_code, 2) << mode << flag << ": " << r.err;
      EXPECT_NE(r.err.find(flag + ": cannot write " + missing_dir), std::string::npos) << r.err;
      EXPECT_EQ(r.out, "") << "the run went ahead";
      auto d = Sim(io + mode + " " + flag + " " + dir_ + " --json");
      EXPECT_EQ(d.exit_code, 2);
      EXPECT_NE(d.err.find(flag + ": is a directory"), std::string::npos) << d.err;
      EXPECT_EQ(d.out, "");
    }
  }
  // Only the asked-for file appears after a good run; nothing was created by the checks.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/no-such-dir"));
}

TEST_F(SimCli, DevicesAndHugeFieldsAreBadInput) {
  ExpectBadInput("--nodes " + nodes_ + " --pods /dev/zero", "--pods: is a device, not a file");
  ExpectBadInput("--nodes /dev/zero --pods " + pods_, "--nodes: is a device");
  ExpectBadInput("--nodes " + nodes_ + " --pods /dev/zero --mode replay", "--pods: is a device");
  const std::string huge = Write("huge.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x" +
                                                 std::string(100000, '1') + ",1,1,1000\n");
  auto r = Sim("--nodes " + nodes_ + " --pods " + huge);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(huge + ":2: column 'cpu_milli' (2): \"x111"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(100001 bytes) is not an integer"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 400u);
}

// Spreadsheet exports start with a UTF-8 byte-order mark; the first column is still found.
TEST_F(SimCli, ByteOrderMarkIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  std::ifstream n(nodes_), p(pods_);
  std::stringstream nodes, pods;
  nodes << n.rdbuf();
  pods << p.rdbuf();
  const std::string bom_nodes = Write("bom_nodes.csv", bom + nodes.str());
  const std::string bom_pods = Write("bom_pods.csv", bom + pods.str());
  auto with = Sim("--nodes " + bom_nodes + " --pods " + bom_pods + " --policy bestfit --seeds 1");
  ASSERT_EQ(with.exit_code, 0) << with.err;
  auto without = Sim("--nodes " + nodes_ + " --pods " + pods_ + " --policy bestfit --seeds 1");
  // The same result; only the trace name in the header differs.
  EXPECT_EQ(with.out.substr(with.out.find("\npolicy")),
            without.out.substr(without.out.find("\npolicy")));
}

TEST_F(SimCli, ComparesWithPublishedResultsNextToThePodList) {
  auto r = Sim("--nodes " + kData + "openb_node_list_gpu_node.csv --pods " + kData +
               "openb_pod_list_default.csv --policy bestfit --seeds 42");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pub@100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("7.14"), std::string::npos) << r.out;  // published BestFit mean
  auto own = Sim("--nodes " + nodes_ + " --pods " + pods_ + " --policy bestfit --seeds 1");
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out.find("pub@100"), std::string::npos);
}

}  // namespace
}  // namespace vgpu
