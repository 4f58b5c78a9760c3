#include "sim/replay_trace.h"

#include <gtest/gtest.h>

#include <fstream>

namespace vgpu::sim {
namespace {

constexpr const char* kHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

class ReplayTrace : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(models_.Intern("T4").has_value()); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "replay_trace_" + name;
    std::ofstream(path) << text;
    return path;
  }
  Result<std::vector<TimedPod>> Load(const std::string& name, const std::string& rows) {
    return LoadTimedPodList(Write(name, kHeader + rows), models_);
  }
  sched::ModelRegistry models_;
};

TEST_F(ReplayTrace, LoadsTimesAndPhases) {
  auto pods = Load("ok.csv",
                   "a,1000,1024,1,500,,LS,Running,100,400,110\n"
                   "b,1000,1024,0,0,,BE,Pending,150,160,\n"
                   "c,1000,1024,1,1000,T4,LS,Running,120,,130\n");
  ASSERT_TRUE(pods.has_value()) << pods.error().message();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].times.creation_s, 100);
  EXPECT_EQ((*pods)[0].times.deletion_s, 400);
  EXPECT_EQ((*pods)[0].times.scheduled_s, 110);
  EXPECT_EQ((*pods)[0].times.phase, "Running");
  EXPECT_EQ((*pods)[1].times.scheduled_s, -1);
  EXPECT_EQ((*pods)[2].times.deletion_s, -1);
  EXPECT_EQ((*pods)[2].pod.request.gpu_milli, 1000);
}

TEST_F(ReplayTrace, ErrorsNameFileLineAndColumn) {
  struct Case {
    const char* file;
    std::string text;
    std::string message;
  } cases[] = {
      {"notimes.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,500\n",
       "needs the columns creation_time and deletion_time"},
      {"text.csv", std::string(kHeader) + "p,1,1,1,500,,LS,Running,1x,5,1\n",
       ":2: column 'creation_time' (9): \"1x\" is not an integer"},
      {"negative.csv", std::string(kHeader) + "p,1,1,1,500,,LS,Running,-4,5,1\n",
       ":2: column 'creation_time' (9): \"-4\" is negative"},
      {"order.csv", std::string(kHeader) + "p,1,1,1,500,,LS,Running,10,5,10\n",
       ":2: column 'deletion_time' (10): \"5\" is before the pod's creation_time 10"},
      {"sched.csv", std::string(kHeader) + "p,1,1,1,500,,LS,Running,10,50,60\n",
       ":2: column 'scheduled_time' (11): \"60\" is outside the pod's lifetime"},
  };
  for (const Case& c : cases) {
    const std::string path = Write(c.file, c.text);
    auto r = LoadTimedPodList(path, models_);
    ASSERT_FALSE(r.has_value()) << c.file;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(path), std::string::npos) << r.error().message();
  }
}

TEST_F(ReplayTrace, JobsCompressArrivalsNotRunTimes) {
  auto pods = Load("jobs.csv",
                   "late,1000,1024,1,500,,LS,Running,1100,1300,1200\n"  // runs 100 (from sched)
                   "early,1000,1024,1,500,,LS,Failed,100,400,100\n"     // runs 300
                   "pend,1000,1024,1,500,,BE,Pending,150,160,\n"        // never scheduled
                   "zero,1000,1024,0,0,,BE,Succeeded,500,500,500\n"     // zero run time
                   "cut,1000,1024,1,1000,,LS,Running,600,1300,600\n");  // still running at end
  ASSERT_TRUE(pods.has_value()) << pods.error().message();
  JobOptions opt;
  opt.time_compress = 10;
  auto list = MakeJobs(*pods, opt);
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->jobs.size(), 4u);
  EXPECT_EQ(list->skipped_pending, 1);
  EXPECT_EQ(list->zero_run_time, 1);
  EXPECT_EQ(list->cpu_only, 1);
  // By arrival; time 0 = the first creation (100); arrivals / 10, run times unchanged.
  EXPECT_EQ(list->jobs[0].name, "early");
  EXPECT_EQ(list->jobs[0].arrival_us, 0);
  EXPECT_EQ(list->jobs[0].run_us, 300'000'000);
  EXPECT_EQ(list->jobs[1].name, "zero");
  EXPECT_EQ(list->jobs[1].arrival_us, 40'000'000);
  EXPECT_EQ(list->jobs[1].run_us, 0);
  EXPECT_EQ(list->jobs[2].name, "cut");
  EXPECT_TRUE(list->jobs[2].censored);  // deleted at the last deletion time of the file
  EXPECT_FALSE(list->jobs[0].censored);
  EXPECT_EQ(list->jobs[3].name, "late");
  EXPECT_EQ(list->jobs[3].arrival_us, 100'000'000);
  EXPECT_EQ(list->jobs[3].run_us, 100'000'000);  // 1300 - scheduled 1200
  EXPECT_TRUE(list->jobs[3].censored);
  EXPECT_EQ(list->span_us, 100'000'000);

  opt.run_time_from = RunTimeFrom::kCreation;
  opt.include_pending = true;
  opt.time_compress = 1;
  auto all = MakeJobs(*pods, opt);
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->jobs.size(), 5u);
  EXPECT_EQ(all->skipped_pending, 0);
  EXPECT_EQ(all->jobs[1].name, "pend");
  EXPECT_EQ(all->jobs[1].run_us, 10'000'000);   // time it waited before being deleted
  EXPECT_EQ(all->jobs[4].run_us, 200'000'000);  // 1300 - creation 1100
  EXPECT_EQ(all->jobs[4].arrival_us, 1000'000'000);

  opt.time_compress = 0;
  EXPECT_FALSE(MakeJobs(*pods, opt).has_value());
}

TEST_F(ReplayTrace, EmptyDeletionMeansRunningAtTheEnd) {
  auto pods = Load("open.csv",
                   "a,1000,1024,1,500,,LS,Running,0,50,0\n"
                   "b,1000,1024,1,500,,LS,Running,10,,20\n");
  ASSERT_TRUE(pods.has_value()) << pods.error().message();
  auto list = MakeJobs(*pods, JobOptions{});
  ASSERT_TRUE(list.has_value());
  EXPECT_TRUE(list->jobs[1].censored);
  EXPECT_EQ(list->jobs[1].run_us, 30'000'000);  // until 50, the end of the trace
  EXPECT_EQ(list->censored, 2);                 // a was deleted at the end too
}

}  // namespace
}  // namespace vgpu::sim
