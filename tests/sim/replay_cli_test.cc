// End-to-end tests of `vgpu sim --mode replay`: help, bad flags and malformed time columns exit 2
// with a message naming the flag or the file, line and column; a small run prints the table and
// writes the CSV time series, the chart and the JSON; the snapshot mode's contract is unchanged.
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
constexpr const char* kHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

class ReplayCli : public SimCliFixture {
 protected:
  ReplayCli() : SimCliFixture("replay-cli") {}
  void SetUp() override {
    SimCliFixture::SetUp();
    nodes_ = Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,1,T4\n");
    // p0 (600) 0..100 s, p1 (500) from 10 for 50 s, p2 (300) from 20 for 10 s: see replay_test.
    pods_ = Write("pods.csv", std::string(kHeader) +
                                  "p0,1000,1024,1,600,,LS,Running,0,100,0\n"
                                  "p1,1000,1024,1,500,,LS,Running,10,60,10\n"
                                  "p2,1000,1024,1,300,,LS,Running,20,30,20\n"
                                  "p3,1000,1024,1,300,,LS,Pending,25,40,\n"
                                  "p4,1000,1024,0,0,,LS,Running,130,200,130\n");
  }
  std::string Io() const { return "--mode replay --nodes " + nodes_ + " --pods " + pods_; }
};

TEST_F(ReplayCli, HelpDescribesTheMode) {
  auto r = RunCommand(kVgpu + " sim --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s :
       {"--mode", "replay", "--time-compress", "--cluster-scale", "--queue", "backfill", "--alloc",
        "whole", "--horizon", "--step", "--run-time-from", "--include-pending", "--mig"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

TEST_F(ReplayCli, BadFlagsAndValues) {
  ExpectBadInput(Io() + " --mode sideways", "--mode");
  ExpectBadInput(Io() + " --time-compress 0", "--time-compress");
  ExpectBadInput(Io() + " --time-compress fast", "\"fast\" is not a number");
  ExpectBadInput(Io() + " --cluster-scale 2", "--cluster-scale: \"2\": 2 is outside");
  ExpectBadInput(Io() + " --cluster-scale 0.5,", "--cluster-scale");
  ExpectBadInput(Io() + " --queue lifo", "--queue: unknown queue discipline 'lifo'");
  ExpectBadInput(Io() + " --alloc half", "--alloc: unknown allocation mode 'half'");
  ExpectBadInput(Io() + " --horizon 5x", "--horizon: time span \"5x\": unknown unit");
  ExpectBadInput(Io() + " --horizon -3d", "--horizon");
  ExpectBadInput(Io() + " --horizon 30d --step 1s", "million samples");
  ExpectBadInput(Io() + " --run-time-from deletion", "--run-time-from");
  ExpectBadInput(Io() + " --policy tetris", "unknown policy 'tetris'");
  ExpectBadInput(Io() + " --seeds 9-1", "--seeds");
  ExpectBadInput(Io() + " --inflate 1.2", "--inflate applies only to --mode snapshot");
  ExpectBadInput(Io() + " --option bestfit:x=1", "not being run");
  ExpectBadInput("--nodes " + nodes_ + " --pods " + pods_ + " --time-compress 5",
                 "--time-compress applies only to --mode replay");
  ExpectBadInput("--nodes " + nodes_ + " --pods " + pods_ + " --queue backfill",
                 "--queue applies only to --mode replay");
}

// --topology (docs/topology.md §7): a 4-GPU node shaped as rtx8000x4 (NV2 bridges 0-3 and 1-2,
// 0-1 over PCIe Gen3); a 2-GPU pod of 100 s. lowest-index gives it GPUs 0-1 (7.5 of 43.5 GB/s):
// 100 x (0.7 + 0.3 x 43.5 / 7.5) = 244 s, 0.0678 h; vgpu and besteffort the bridge: 100 s.
TEST_F(ReplayCli, TopologyComparesGpuChoices) {
  const std::string nodes =
      Write("nodes4.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,4,T4\n");
  const std::string pods =
      Write("pods2.csv", std::string(kHeader) + "p0,1000,1024,2,1000,,LS,Running,0,100,0\n");
  const std::string io = "--mode replay --nodes " + nodes + " --pods " + pods + " --alloc whole";
  auto r = Sim(io + " --topology rtx8000x4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("shapes rtx8000x4; communication share 0.30"), std::string::npos) << r.out;
  std::string squeezed;  // the table with runs of spaces as one
  for (char c : r.out) {
    if (c != ' ' || squeezed.empty() || squeezed.back() != ' ') squeezed += c;
  }
  for (const char* row :
       {"vgpu default fifo x1/s1 whole 1.0 1.000 1.000 1.000 0.03 0.03 0.03 1.000",
        "lowest-index default fifo x1/s1 whole 1.0 0.172 2.440 0.000 0.07 0.07 "
        "0.07 2.440",
        "besteffort default fifo x1/s1 whole 1.0 1.000 1.000 1.000 0.03 0.03 "
        "0.03 1.000"}) {
    EXPECT_NE(squeezed.find(row), std::string::npos) << row << "\n" << r.out;
  }
  ExpectBadInput(io + " --topology dgx-9000", "--topology: unknown server shape 'dgx-9000'");
  ExpectBadInput(io + " --topology rtx8000x4 --comm-share 1",
                 "--comm-share: the communication share must be in [0, 1)");
  ExpectBadInput(io + " --topology rtx8000x4 --gpu-choice best",
                 "--gpu-choice: unknown GPU choice 'best'");
  ExpectBadInput(io + " --comm-share 0.5", "--gpu-choice and --comm-share need --topology");
  ExpectBadInput(io + " --topology rtx8000x4 --csv " + dir_ + "/t.csv",
                 "--csv and --svg do not apply with --topology");
}

TEST_F(ReplayCli, MalformedTimeColumnsNameFileLineAndColumn) {
  const std::string five =
      Write("five.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,500\n");
  ExpectBadInput("--mode replay --nodes " + nodes_ + " --pods " + five,
                 five + ": the replay needs the columns creation_time and deletion_time");
  const std::string order =
      Write("order.csv", std::string(kHeader) + "p,1000,1024,1,500,,LS,Running,50,10,50\n");
  ExpectBadInput("--mode replay --nodes " + nodes_ + " --pods " + order,
                 order + ":2: column 'deletion_time' (10): \"10\" is before");
  const std::string text =
      Write("text.csv", std::string(kHeader) + "p,1000,1024,1,500,,LS,Running,5,1O,5\n");
  ExpectBadInput("--mode replay --nodes " + nodes_ + " --pods " + text,
                 text + ":2: column 'deletion_time' (10): \"1O\" is not an integer");
  // The bundled multigpu20 list has no time columns.
  ExpectBadInput("--mode replay --pods " + kData + "openb_pod_list_multigpu20.csv",
                 "needs the columns creation_time and deletion_time");
}

TEST_F(ReplayCli, SmallRunPrintsTheTableAndWritesCsvChartAndJson) {
  const std::string csv = dir_ + "/ts.csv", svg = dir_ + "/ts.svg";
  auto r = Sim(Io() + " --policy bestfit --queue fifo,backfill --horizon 120s --step 10s --csv " +
               csv + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Hand-computed in replay_test: FIFO shared waits 0/90/80 s, whole 0/90/130 s (p4 arrives
  // after the horizon and the Pending pod is skipped).
  EXPECT_NE(r.out.find("1 never-scheduled (Pending) skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queue fifo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queue backfill"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("57 s"), std::string::npos) << r.out;   // (0 + 90 + 80) / 3
  EXPECT_NE(r.out.find("1.2 m"), std::string::npos) << r.out;  // (0 + 90 + 130) / 3 s
  EXPECT_NE(r.out.find("shared/whole: completed x2.00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Sweep"), std::string::npos) << r.out;

  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "policy,queue,allocation,time_compress,cluster_scale,seed,time_s,allocated_gpu_pct,"
            "requested_gpu_pct,demand_gpu_pct,running_pods,queued_pods,completed_pods");
  int rows = 0;
  bool saw_t20 = false;
  for (std::string line; std::getline(in, line);) {
    ++rows;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 12) << line;
    if (line.rfind("bestfit,fifo,shared,1,1,42,20.000,", 0) == 0) {
      saw_t20 = true;
      EXPECT_EQ(line, "bestfit,fifo,shared,1,1,42,20.000,60.00,60.00,140.00,1,2,0");
    }
  }
  EXPECT_TRUE(saw_t20);
  EXPECT_EQ(rows, 4 * 13);  // 2 queues x 2 modes x samples at 0, 10, ..., 120 s
  std::ifstream chart(svg);
  std::stringstream ss;
  ss << chart.rdbuf();
  EXPECT_EQ(ss.str().rfind("<?xml", 0), 0u);
  EXPECT_NE(ss.str().find("allocated, whole GPUs"), std::string::npos);
  EXPECT_NE(ss.str().find("</svg>"), std::string::npos);

  auto j = Sim(Io() + " --policy bestfit --horizon 120s --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"shared_over_whole\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"wait_mean_s\": 56.667"), std::string::npos) << j.out;
}

TEST_F(ReplayCli, RunsTheBundledTraceWithDefaults) {
  auto r = Sim("--mode replay --time-compress 10 --cluster-scale 0.03");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("openb_pod_list_default"), std::string::npos);
  EXPECT_NE(r.out.find("policy default, queue fifo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("897 never-scheduled (Pending) skipped"), std::string::npos) << r.out;
}

// --mig: every GPU a mig-dynamic H200. p0 (600 milli -> 7g.141gb) runs 0..100 s; p1 (500 -> the
// 7g: 69.5 GiB is under half) and p2 (300 -> 3g.71gb) arrive while it runs and are refused, by
// every rule. Bad MIG input exits 2.
TEST_F(ReplayCli, MigRunComparesThePlacementRules) {
  auto r = Sim(Io() + " --mig H200 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* rule : {"\"rule\": \"ours\"", "\"rule\": \"first-fit\"", "\"rule\": \"hami\""}) {
    EXPECT_NE(r.out.find(rule), std::string::npos) << r.out;
  }
  size_t rows = 0;
  for (size_t at = 0; (at = r.out.find("\"accepted_pct\": 33.33", at)) != std::string::npos; ++at) {
    ++rows;
  }
  EXPECT_EQ(rows, 3u) << r.out;
  EXPECT_NE(r.out.find("\"arrivals\": 3.0"), std::string::npos) << r.out;
  auto t = Sim(Io() + " --mig H100-80GB --policy first-fit");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("first-fit"), std::string::npos);
  EXPECT_EQ(t.out.find("hami"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("requests: 3g.40gb 33.3%, 7g.80gb 66.7%"), std::string::npos) << t.out;
  ExpectBadInput(Io() + " --mig T4", "--mig: unknown model 'T4'");
  ExpectBadInput(Io() + " --mig H200 --policy bestfit", "MIG placement rules");
  ExpectBadInput(Io() + " --mig H200 --queue backfill", "do not apply");
  ExpectBadInput("--nodes " + nodes_ + " --pods " + pods_ + " --mig H200",
                 "--mig applies only to --mode replay");
}

// Pods that require NVLink: the topology column or --require-nvlink, with server shapes only.
TEST_F(ReplayCli, RequireNvlinkNeedsShapesAndPlacesOnConnectedSets) {
  const std::string nodes =
      Write("nodes4.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,4,T4\n");
  const std::string pods =
      Write("nvlink.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,topology,creation_time,deletion_time,"
            "scheduled_time\n"
            "a,1000,1024,2,1000,require-nvlink,0,100,0\n"
            "b,1000,1024,2,1000,require-nvlink,1,101,1\n"
            "c,1000,1024,4,1000,require-nvlink,2,102,2\n");
  const std::string io = "--mode replay --nodes " + nodes + " --pods " + pods;
  ExpectBadInput(io,
                 "3 pod(s) require NVLink (vgpu.io/topology: require-nvlink); the replay "
                 "knows the links only with server shapes (--topology)");
  ExpectBadInput(Io() + " --require-nvlink", "--require-nvlink: needs --topology");
  ExpectBadInput("--nodes " + nodes + " --pods " + pods,
                 "--pods: 3 pod(s) require NVLink (topology column); the snapshot experiment "
                 "models no links");
  auto r = Sim(io + " --topology rtx8000x4 --gpu-choice lowest-index --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"best_share\": 1.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"unplaceable\": 1.0"), std::string::npos) << r.out;  // no NVLink ring of 4
}

}  // namespace
}  // namespace vgpu
