// What a `vgpu run` slice enforces end to end, on the simulated GPU: a nested `vgpu run` never
// gives its command more than the outer slice (memory, compute and copy caps), and memory freed
// with cuMemFreeAsync is usable again after a synchronization, as the driver releases it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "vgpu_cli_fixture.h"

namespace vgpu {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

std::string Bytes(uint64_t mib) { return std::to_string(mib * kMiB); }

class RunLimitsTest : public testing::VgpuCliTest {
 protected:
  // `vgpu run --sim OUTER... -- sh -c SCRIPT` with $V (vgpu) and $W (the worker) set.
  std::string RunScript(const std::vector<std::string>& outer, const std::string& script,
                        int* code) {
    std::vector<std::string> args = {"run", "--sim"};
    args.insert(args.end(), outer.begin(), outer.end());
    for (const char* a : {"--", "sh", "-c"}) args.push_back(a);
    args.push_back("V=" + Quote(VGPU_BIN) + "; W=" + Quote(WORKER_PATH) + "; " + script);
    return Vgpu(args, code);
  }
};

TEST_F(RunLimitsTest, NestedRunNeverGetsMoreThanTheOuterLimit) {
  int code = -1;
  std::string out = RunScript({"--memory", "1GiB"},
                              "$V run --sim --memory 4GiB -- $W fill alloc " + Bytes(1024), &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("first CUDA_SUCCESS\nextra CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << out;
  EXPECT_NE(Err().find("--memory 4GiB is more than the slice sh-"), std::string::npos) << Err();
  EXPECT_NE(Err().find("the nested slice gets 1.00 GiB"), std::string::npos) << Err();
  EXPECT_EQ(SliceCount(), 0u);
}

TEST_F(RunLimitsTest, NestedRunNeverGetsAHigherCopyCap) {
  int code = -1;
  std::string out = RunScript({"--copy-bandwidth", "100MB/s,unlimited", "--copy-borrow"},
                              "$V run --sim --copy-bandwidth 1GB/s,50MB/s -- sh -c "
                              "'grep copy_ \"$VGPU_LIMITS_FILE\"'",
                              &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("copy_h2d=100000000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("copy_d2h=50000000\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("copy_borrow"), std::string::npos) << out;  // the inner did not ask
  EXPECT_NE(Err().find("the H2D copy cap is more than the slice sh-"), std::string::npos) << Err();
}

TEST_F(RunLimitsTest, OuterAndInnerProcessesTogetherStayWithinTheOuterLimit) {
  // An outer process holds 600 MiB of 1 GiB; a nested slice without a limit of its own gets the
  // remaining 424 MiB and not one byte more, and sees exactly that as free.
  int code = -1;
  std::string out = RunScript(
      {"--memory", "1GiB"},
      "$W park " + Bytes(600) + " & H=$!; sleep 0.5; " +
          "$V run --sim -- $W info | grep cuMemGetInfo; " + "$V run --sim -- $W fill alloc " +
          Bytes(424) + "; " + "$V run --sim --memory 2GiB -- $W fill alloc " + Bytes(424) + " " +
          Bytes(10) + "; " + "$V run --sim --memory 300MiB -- $W fill alloc " + Bytes(300) +
          "; kill $H",
      &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("cuMemGetInfo " + Bytes(424) + " " + Bytes(1024)), std::string::npos) << out;
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\n', pos);
    std::string l = out.substr(pos, end - pos);
    if (l.rfind("first ", 0) == 0 || l.rfind("extra ", 0) == 0) lines.push_back(l);
    pos = end == std::string::npos ? out.size() : end + 1;
  }
  std::vector<std::string> want = {
      "first CUDA_SUCCESS", "extra CUDA_ERROR_OUT_OF_MEMORY",  // 424 MiB, then 1 byte
      "first CUDA_SUCCESS", "extra CUDA_ERROR_OUT_OF_MEMORY",  // 424 MiB, then 10 MiB
      "first CUDA_SUCCESS", "extra CUDA_ERROR_OUT_OF_MEMORY",  // its own 300 MiB limit holds
  };
  EXPECT_EQ(lines, want) << out;
}

TEST_F(RunLimitsTest, SlicesNestSeveralLevelsDeep) {
  int code = -1;
  std::string out = RunScript({"--memory", "1GiB"},
                              "$V run --sim --memory 512MiB -- $V run --sim --memory 4GiB -- "
                              "$W fill alloc " +
                                  Bytes(512),
                              &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("first CUDA_SUCCESS\nextra CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << out;
}

TEST_F(RunLimitsTest, NestedComputeSettingsAreRefusedWhereTheOuterSliceHasAShare) {
  int code = -1;
  RunScript({"--cores", "30"}, "$V run --sim --cores 50 -- true", &code);
  EXPECT_EQ(code, 2) << Err();
  EXPECT_NE(Err().find("--cores: this runs inside the slice sh-"), std::string::npos) << Err();
  // Without an outer share, a nested slice may have one.
  RunScript({"--memory", "1GiB"}, "$V run --sim --cores 50 -- true", &code);
  EXPECT_EQ(code, 0) << Err();
}

TEST_F(RunLimitsTest, AnOuterSliceWhoseLimitsCannotBeReadRefusesTheNestedRun) {
  std::vector<std::string> saved = env_;
  env_.push_back("VGPU_LIMITS_FILE=" + dir_ + "/missing-limits");
  int code = -1;
  Vgpu({"run", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("inside a slice whose limits cannot be read"), std::string::npos) << Err();
  env_ = saved;
}

// Kernel time of a `vgpu bench tenant --out` file: sum of end - start, and the span covered.
struct Busy {
  uint64_t busy_ns = 0, first_ns = UINT64_MAX, last_ns = 0;
};
Busy ReadKernels(const std::string& path) {
  Busy b;
  std::ifstream in(path);
  uint64_t call = 0, start = 0, end = 0;
  while (in >> call >> start >> end) {
    b.busy_ns += end - start;
    b.first_ns = std::min(b.first_ns, start);
    b.last_ns = std::max(b.last_ns, end);
  }
  return b;
}

TEST_F(RunLimitsTest, NestedSliceComputesWithinTheOuterShare) {
  // Two saturating tenants, one in the outer slice (30%) and one in a nested slice: together
  // they get the outer slice's 30%, not 30% each (or the whole GPU for the nested one).
  int code = -1;
  std::string tenant = "$V bench tenant --start-now --stop-ns 1500000000 --out ";
  RunScript({"--cores", "30"},
            tenant + Quote(dir_ + "/outer.kernels") + " & " + "$V run --sim -- " + tenant +
                Quote(dir_ + "/inner.kernels") + "; wait",
            &code);
  ASSERT_EQ(code, 0) << Err();
  Busy outer = ReadKernels(dir_ + "/outer.kernels"), inner = ReadKernels(dir_ + "/inner.kernels");
  ASSERT_GT(outer.busy_ns, 0u);
  ASSERT_GT(inner.busy_ns, 0u) << "the nested tenant must run too";
  uint64_t first = std::min(outer.first_ns, inner.first_ns);
  uint64_t last = std::max(outer.last_ns, inner.last_ns);
  double share = 100.0 * static_cast<double>(outer.busy_ns + inner.busy_ns) /
                 static_cast<double>(last - first);
  EXPECT_LE(share, 34.0) << "outer " << outer.busy_ns << " ns, inner " << inner.busy_ns << " ns";
  EXPECT_GE(share, 15.0);
}

TEST_F(RunLimitsTest, AsyncFreesAreUsableAgainAfterASynchronization) {
  // 512 MiB slice: 256 MiB from a pool, freed asynchronously, then cuStreamSynchronize.
  const std::string bytes = Bytes(256), whole = Bytes(512);
  struct Case {
    const char* pool;
    const char* whole_rc;  // cuMemAlloc of the whole slice
    const char* rest_rc;   // cuMemAlloc of what the pool does not keep
  } cases[] = {
      {"default", "CUDA_SUCCESS", "CUDA_SUCCESS"},
      {"pool", "CUDA_SUCCESS", "CUDA_SUCCESS"},
      {"reserve", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_SUCCESS"},  // threshold: keeps its reserve
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pool);
    int code = -1;
    std::string out = Vgpu({"run", "--sim", "--memory", "512MiB", "--", WORKER_PATH, "asyncfree",
                            c.pool, bytes, whole},
                           &code);
    EXPECT_EQ(code, 0) << Err();
    EXPECT_NE(out.find(std::string("whole ") + c.whole_rc + "\nrest " + c.rest_rc),
              std::string::npos)
        << out << Err();
  }
}

TEST_F(RunLimitsTest, MemoryAnotherProcessFreedAsynchronouslyIsUsableByTheOthers) {
  // The first process frees 256 MiB of a 512 MiB slice asynchronously, synchronizes and stays;
  // a second process of the slice then gets the whole 512 MiB (or, beside a pool with a raised
  // threshold, only what that pool does not keep). One ready file per pool: the shell truncates
  // it in the background child, so a file of the previous pool could be read as ready.
  for (const char* pool : {"default", "pool", "reserve"}) {
    SCOPED_TRACE(pool);
    bool keeps = std::string(pool) == "reserve";
    int code = -1;
    std::string out = RunScript({"--memory", "512MiB"},
                                "R=" + Quote(dir_ + "/ready-" + pool) + "; $W asyncpark " +
                                    std::string(pool) + " " + Bytes(256) +
                                    " > $R & A=$!; while ! grep -q ready $R; do sleep 0.05; "
                                    "done; $W fill alloc " +
                                    Bytes(keeps ? 256 : 512) + "; kill $A",
                                &code);
    EXPECT_EQ(code, 0) << Err();
    EXPECT_NE(out.find("first CUDA_SUCCESS\nextra CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
        << out << Err();
  }
}

// Live resize (vgpu resize, shm/region_resize.h): a process holds 600 MiB of a 1 GiB slice while
// the limit is lowered below its usage (refused with the usage, nothing changes), lowered to
// 700 MiB (another process of the slice then gets 100 MiB and not one byte more), then raised
// past the limits file's 1 GiB to 2 GiB, which the slice's processes see at once.
TEST_F(RunLimitsTest, VgpuResizeChangesTheMemoryLimitOfARunningSlice) {
  int code = -1;
  std::string out = RunScript({"--memory", "1GiB", "--name", "live"},
                              "$W park " + Bytes(600) + " & H=$!; sleep 0.5; " +
                                  "$V resize --slice live --memory 512MiB; echo refused=$?; " +
                                  "$W fill alloc " + Bytes(424) + "; " +
                                  "$V resize --slice live --memory 700MiB; echo lowered=$?; " +
                                  "$W fill alloc " + Bytes(100) + "; " +
                                  "$V resize --slice live --memory 2GiB --json; echo raised=$?; " +
                                  "$W info | grep cuMemGetInfo; $W fill alloc " + Bytes(1448) +
                                  "; " + "$V top --once | grep 'device 0  memory'; kill $H",
                              &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("refused=1"), std::string::npos) << out;
  EXPECT_NE(
      Err().find("device 0 has 600.00 MiB in use, more than the asked memory limit 512.00 MiB"),
      std::string::npos)
      << Err();
  EXPECT_NE(out.find("lowered=0"), std::string::npos) << out;
  EXPECT_NE(out.find("raised=0"), std::string::npos) << out;
  EXPECT_NE(out.find("\"ok\":true"), std::string::npos) << out;
  EXPECT_NE(out.find("cuMemGetInfo " + Bytes(1448) + " " + Bytes(2048)), std::string::npos) << out;
  // vgpu top shows the limit in force.
  EXPECT_NE(out.find("memory 600.00 MiB / 2.00 GiB"), std::string::npos) << out;
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\n', pos);
    std::string l = out.substr(pos, end - pos);
    if (l.rfind("first ", 0) == 0 || l.rfind("extra ", 0) == 0) lines.push_back(l);
    pos = end == std::string::npos ? out.size() : end + 1;
  }
  std::vector<std::string> want = {
      "first CUDA_SUCCESS", "extra CUDA_ERROR_OUT_OF_MEMORY",  // 1 GiB: 424 MiB, then 1 byte
      "first CUDA_SUCCESS", "extra CUDA_ERROR_OUT_OF_MEMORY",  // 700 MiB: 100 MiB, then 1 byte
      "first CUDA_SUCCESS", "extra CUDA_ERROR_OUT_OF_MEMORY",  // 2 GiB: 1448 MiB, then 1 byte
  };
  EXPECT_EQ(lines, want) << out;
}

TEST_F(RunLimitsTest, VgpuResizeNamesTheBadFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--slice", "nosuch", "--cores", "50"}, "--slice: \"nosuch\": no such slice"},
      {{"--region", dir_ + "/none", "--memory", "4XB"}, "--memory: \"4XB\""},
      {{"--region", dir_ + "/none", "--cores", "130"}, "--cores"},
      {{"--region", dir_ + "/none", "--cores", "0"}, "--cores: \"0\": must be 1-100"},
      {{"--region", dir_ + "/none", "--priority", "urgent"}, "--priority: \"urgent\""},
      {{"--region", dir_ + "/none"}, "nothing to change"},
      {{"--cores", "50"}, "give --slice NAME or --region PATH"},
      {{"--region", dir_ + "/none", "--cores", "50"}, "no slice region"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"resize"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    int code = -1;
    Vgpu(args, &code);
    EXPECT_EQ(code, 2) << c.message << "\n" << Err();
    EXPECT_NE(Err().find(c.message), std::string::npos) << Err();
  }
}

}  // namespace
}  // namespace vgpu
