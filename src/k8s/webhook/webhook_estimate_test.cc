// The admission webhook's vgpu.io/estimate fill: annotation in, <prefix>/gpumem out (the
// estimator's request), the estimate recorded, refusals with the reason.
#include <gtest/gtest.h>

#include "estimate/estimator.h"
#include "estimate/report.h"
#include "estimate/spec.h"
#include "k8s/webhook/admission_webhook.h"

namespace vgpu::k8s {
namespace {

Json AnnotatedPod(const std::string& estimate, Json resources = nullptr) {
  Json c = {{"name", "server"}, {"image", "vllm/vllm-openai"}};
  if (!resources.is_null()) c["resources"] = resources;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "llm"}, {"annotations", {{"vgpu.io/estimate", estimate}}}}},
          {"spec",
           {{"schedulerName", "default-scheduler"},
            {"containers", Json::array({Json{{"name", "sidecar"}, {"image", "envoy"}}, c})}}}};
}

int64_t ExpectedMib(const std::string& annotation) {
  auto spec = estimate::ParseSpec(annotation);
  auto in = estimate::InputsFromSpec(*spec, false);
  return estimate::RequestMib(estimate::Place(estimate::Compute(*in)));
}

TEST(WebhookEstimate, FillsGpumemFromTheEstimate) {
  AdmissionWebhook hook(WebhookOptions{});
  const std::string a =
      "model=llama-3-8b, mode=serve, max-model-len=8192, concurrent=4, "
      "container=server";
  const Json pod = AnnotatedPod(a, Json{{"requests", {{"cpu", "4"}}}});
  const AdmissionWebhook::Mutation m = hook.MutatePod(pod);
  ASSERT_EQ(m.outcome, AdmissionWebhook::Mutation::Outcome::kPatched) << m.denial;
  const Json out = pod.patch(m.patch);
  const Json& res = out["spec"]["containers"][1]["resources"];
  const std::string mib =
      std::to_string(ExpectedMib("model=llama-3-8b,mode=serve,"
                                 "max-model-len=8192,concurrent=4"));
  EXPECT_EQ(res["limits"]["nvidia.com/gpumem"], mib);
  EXPECT_EQ(res["requests"]["nvidia.com/gpumem"], mib);
  EXPECT_EQ(res["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(out["spec"]["schedulerName"], "vgpu-scheduler");
  EXPECT_FALSE(out["spec"]["containers"][0].contains("resources"));  // the sidecar is untouched
  const Json record =
      Json::parse(out["metadata"]["annotations"]["vgpu.io/estimate-result"].get<std::string>());
  EXPECT_EQ(record["model"], "llama-3-8b");
  EXPECT_EQ(std::to_string(record["gpumem_mib"].get<int64_t>()), mib);
  EXPECT_EQ(record["kv_tokens_needed"], 4 * 8192);
  // The filled pod reads as an ordinary gpumem request.
  auto parsed = ParsePodGpuRequest(out, RequestOptions{});
  ASSERT_TRUE(parsed.has_value());
  ASSERT_EQ(parsed->containers.size(), 1u);
  EXPECT_EQ(parsed->containers[0].memory_mib, std::stoll(mib));
}

TEST(WebhookEstimate, FirstContainerByDefaultAndNoResourcesYet) {
  AdmissionWebhook hook(WebhookOptions{});
  const Json pod = AnnotatedPod("model=qwen2.5-7b,mode=lora,seq-len=2048,checkpointing=full");
  const AdmissionWebhook::Mutation m = hook.MutatePod(pod);
  ASSERT_EQ(m.outcome, AdmissionWebhook::Mutation::Outcome::kPatched) << m.denial;
  const Json out = pod.patch(m.patch);
  EXPECT_TRUE(out["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpumem"));
}

TEST(WebhookEstimate, RefusesWhatCannotFitOrCannotBeRead) {
  AdmissionWebhook hook(WebhookOptions{});
  struct Case {
    std::string annotation, reason;
  } cases[] = {
      {"model=llama-3-70b,mode=full,seq-len=4096", "more than any known GPU holds"},
      {"model=llama-3-8b,gpu=rtx-4090,max-model-len=8192,concurrent=64",
       "more than the 23.99 GiB of rtx-4090"},
      {"model=gpt-5", "unknown model"},
      {"model=llama-3-8b,tp=5", "does not divide"},
      {"model=llama-3-8b,max-model-len=100000", "beyond the maximum of 8192"},
      {"model=llama-3-8b,container=nope", "no container named 'nope'"},
      {"model=llama-3-8b,model=mistral-7b", "model is given twice"},
      {"model=/etc/passwd", "unknown model"},  // the webhook reads no files
      {"llama-3-8b", "is not key=value"},
  };
  for (const Case& c : cases) {
    const AdmissionWebhook::Mutation m = hook.MutatePod(AnnotatedPod(c.annotation));
    EXPECT_EQ(m.outcome, AdmissionWebhook::Mutation::Outcome::kDenied) << c.annotation;
    EXPECT_NE(m.denial.find(c.reason), std::string::npos) << c.annotation << ": " << m.denial;
    EXPECT_NE(m.denial.find("vgpu.io/estimate"), std::string::npos) << m.denial;
  }
}

TEST(WebhookEstimate, AGivenGpumemIsKept) {
  AdmissionWebhook hook(WebhookOptions{});
  const Json pod =
      AnnotatedPod("model=llama-3-8b", Json{{"limits", {{"nvidia.com/gpumem", "8000"}}}});
  const AdmissionWebhook::Mutation m = hook.MutatePod(pod);
  ASSERT_NE(m.outcome, AdmissionWebhook::Mutation::Outcome::kDenied);
  EXPECT_EQ(pod.patch(m.patch)["spec"]["containers"][1]["resources"]["limits"]["nvidia.com/gpumem"],
            "8000");
  ASSERT_FALSE(m.warnings.empty());
  EXPECT_NE(m.warnings.back().find("is not applied"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::k8s
