#include "k8s/webhook/admission_webhook.h"

#include <gtest/gtest.h>

#include "k8s/api/encoding.h"

namespace vgpu::k8s {
namespace {

Json Container(const std::string& name, const Json& limits) {
  return {{"name", name}, {"image", "cuda:12"}, {"resources", {{"limits", limits}}}};
}

// A pod as the API server sends it to a mutating webhook: defaulted, so schedulerName is
// "default-scheduler" unless `scheduler` says otherwise ("" = the field is absent).
Json Pod(const std::vector<Json>& containers, const std::vector<Json>& init = {},
         const std::string& scheduler = "default-scheduler") {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
              {"spec", {{"containers", Json(containers)}}}};
  if (!init.empty()) pod["spec"]["initContainers"] = Json(init);
  if (!scheduler.empty()) pod["spec"]["schedulerName"] = scheduler;
  return pod;
}

std::string ReviewBody(const Json& pod, const std::string& uid = "705ab4f5-6393-11e8-b7cc",
                       const std::string& operation = "CREATE",
                       const std::string& api_version = "admission.k8s.io/v1") {
  const Json review = {
      {"apiVersion", api_version},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", uid},
        {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
        {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
        {"requestKind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
        {"requestResource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
        {"name", "train"},
        {"namespace", "ml"},
        {"operation", operation},
        {"userInfo", {{"username", "alice"}}},
        {"object", pod},
        {"oldObject", nullptr},
        {"dryRun", false},
        {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", "CreateOptions"}}}}}};
  return review.dump();
}

struct Answer {
  int http_status = 0;
  Json review;    // the whole response body
  Json response;  // review["response"]
  Json patch;     // decoded JSON patch, null when none
};

Answer Ask(AdmissionWebhook& hook, const std::string& body) {
  Answer a;
  const AdmissionWebhook::Reply r = hook.Review(body);
  a.http_status = r.http_status;
  a.review = Json::parse(r.body);
  a.response = a.review["response"];
  if (a.response.contains("patch")) {
    EXPECT_EQ(a.response["patchType"], "JSONPatch");
    auto text = Base64Decode(a.response["patch"].get<std::string>());
    EXPECT_TRUE(text.has_value());
    a.patch = Json::parse(*text);
  }
  return a;
}

// A HAMi example pod, unchanged: one GPU, 3000 MiB, 30% of the compute, in limits.
Json HamiPod(const std::string& scheduler = "default-scheduler") {
  return Pod({Container("cuda", {{"nvidia.com/gpu", 1},
                                 {"nvidia.com/gpumem", 3000},
                                 {"nvidia.com/gpucores", 30}})},
             {}, scheduler);
}

TEST(AdmissionWebhook, SendsAHamiPodToTheVgpuScheduler) {
  AdmissionWebhook hook({});
  const Json pod = HamiPod();
  const Answer a = Ask(hook, ReviewBody(pod));
  EXPECT_EQ(a.http_status, 200);
  EXPECT_EQ(a.review["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(a.review["kind"], "AdmissionReview");
  EXPECT_EQ(a.response["uid"], "705ab4f5-6393-11e8-b7cc");
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_EQ(a.patch, Json::parse(R"([{"op":"replace","path":"/spec/schedulerName",
                                      "value":"vgpu-scheduler"}])"));
  const Json patched = pod.patch(a.patch);
  EXPECT_EQ(patched["spec"]["schedulerName"], "vgpu-scheduler");
  EXPECT_EQ(patched["spec"]["containers"], pod["spec"]["containers"]);  // limits untouched
  EXPECT_EQ(hook.count(AdmissionWebhook::Mutation::Outcome::kPatched), 1u);
}

TEST(AdmissionWebhook, AddsTheSchedulerNameWhenTheFieldIsAbsent) {
  WebhookOptions o;
  o.scheduler_name = "gpu-sched";
  AdmissionWebhook hook(o);
  const Json pod = HamiPod("");
  const Answer a = Ask(hook, ReviewBody(pod));
  ASSERT_TRUE(a.patch.is_array());
  EXPECT_EQ(pod.patch(a.patch)["spec"]["schedulerName"], "gpu-sched");
  EXPECT_EQ(a.patch[0]["op"], "add");
}

TEST(AdmissionWebhook, ReadsRequestsAndPriorityAlone) {
  AdmissionWebhook hook({});
  Json c = {{"name", "c"}, {"resources", {{"requests", {{"nvidia.com/gpu", "2"}}}}}};
  EXPECT_EQ(Ask(hook, ReviewBody(Pod({c}))).patch.size(), 1u);
  const Json prio = Container("p", {{"nvidia.com/priority", "1"}});
  const Answer a = Ask(hook, ReviewBody(Pod({prio})));
  ASSERT_TRUE(a.patch.is_array());
  EXPECT_EQ(a.patch[0]["value"], "vgpu-scheduler");
}

TEST(AdmissionWebhook, SendsAMigProfilePodToVgpuWithoutAddingAGpuCount) {
  AdmissionWebhook hook({});
  const Json pod =
      Pod({Container("cuda", {{"nvidia.com/mig-1g.18gb", 1}, {"nvidia.com/gpumem", 8000}})});
  const Answer a = Ask(hook, ReviewBody(pod));
  EXPECT_EQ(a.response["allowed"], true);
  // Only the scheduler name: nvidia.com/gpu beside a MIG profile would make the pod invalid.
  EXPECT_EQ(a.patch, Json::parse(R"([{"op":"replace","path":"/spec/schedulerName",
                                      "value":"vgpu-scheduler"}])"));
}

TEST(AdmissionWebhook, LeavesAPodWithoutGpuResourcesAlone) {
  AdmissionWebhook hook({});
  const Json pod = Pod({Container("web", {{"cpu", "500m"}, {"memory", "1Gi"}})});
  const Answer a = Ask(hook, ReviewBody(pod, "uid-cpu"));
  EXPECT_EQ(a.http_status, 200);
  EXPECT_EQ(a.response["uid"], "uid-cpu");
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_FALSE(a.response.contains("patch"));
  EXPECT_FALSE(a.response.contains("patchType"));
  EXPECT_FALSE(a.response.contains("warnings"));
  EXPECT_EQ(hook.count(AdmissionWebhook::Mutation::Outcome::kUnchanged), 1u);
}

TEST(AdmissionWebhook, LeavesAnExplicitlyChosenSchedulerAlone) {
  AdmissionWebhook hook({});
  const Answer a = Ask(hook, ReviewBody(HamiPod("volcano")));
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_FALSE(a.response.contains("patch"));
  ASSERT_TRUE(a.response.contains("warnings"));
  EXPECT_NE(a.response["warnings"][0].get<std::string>().find("names scheduler 'volcano'"),
            std::string::npos);
  EXPECT_EQ(hook.count(AdmissionWebhook::Mutation::Outcome::kSkipped), 1u);
  // Already ours: nothing to change.
  const Answer ours = Ask(hook, ReviewBody(HamiPod("vgpu-scheduler")));
  EXPECT_EQ(ours.response["allowed"], true);
  EXPECT_FALSE(ours.response.contains("patch"));
}

TEST(AdmissionWebhook, ReplacesHamisSchedulerNameAndWhatIsConfigured) {
  AdmissionWebhook hook({});
  const Answer hami = Ask(hook, ReviewBody(HamiPod("hami-scheduler")));
  ASSERT_TRUE(hami.patch.is_array());
  EXPECT_EQ(HamiPod("hami-scheduler").patch(hami.patch)["spec"]["schedulerName"], "vgpu-scheduler");
  WebhookOptions o;
  o.replace_schedulers = {"default-scheduler"};  // HAMi still runs beside vgpu
  AdmissionWebhook side_by_side(o);
  EXPECT_FALSE(Ask(side_by_side, ReviewBody(HamiPod("hami-scheduler"))).response.contains("patch"));
  o.replace_schedulers = {"*"};
  AdmissionWebhook any(o);
  EXPECT_TRUE(Ask(any, ReviewBody(HamiPod("volcano"))).response.contains("patch"));
}

TEST(AdmissionWebhook, SeesResourcesOfInitContainers) {
  AdmissionWebhook hook({});
  const Json pod = Pod({Container("app", {{"cpu", "1"}})},
                       {Container("warmup", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 1024}})});
  const Answer a = Ask(hook, ReviewBody(pod));
  ASSERT_TRUE(a.patch.is_array());
  EXPECT_EQ(pod.patch(a.patch)["spec"]["schedulerName"], "vgpu-scheduler");
}

TEST(AdmissionWebhook, FollowsTheResourcePrefix) {
  WebhookOptions o;
  o.names.prefix = "example.com";
  AdmissionWebhook hook(o);
  const Json custom = Pod({Container("c", {{"example.com/gpu", 1}, {"example.com/gpucores", 50}})});
  EXPECT_TRUE(Ask(hook, ReviewBody(custom)).patch.is_array());
  // nvidia.com is not managed under this prefix (it may be the stock NVIDIA device plugin's).
  const Answer stock = Ask(hook, ReviewBody(HamiPod()));
  EXPECT_EQ(stock.response["allowed"], true);
  EXPECT_FALSE(stock.response.contains("patch"));
}

TEST(AdmissionWebhook, GivesAShareWithoutACountOneGpu) {
  AdmissionWebhook hook({});
  // HAMi reads gpumem without nvidia.com/gpu as one GPU; kubelet needs the count to call the
  // device plugin.
  const Json pod = Pod({Container("a", {{"nvidia.com/gpumem", "2048"}}),
                        {{"name", "b"},
                         {"resources",
                          {{"limits", {{"nvidia.com/gpucores", "20"}}},
                           {"requests", {{"nvidia.com/gpucores", "20"}}}}}},
                        {{"name", "c"}}});
  const Answer a = Ask(hook, ReviewBody(pod));
  ASSERT_TRUE(a.patch.is_array());
  const Json p = pod.patch(a.patch);
  EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"], "2048");
  EXPECT_EQ(p["spec"]["containers"][1]["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(p["spec"]["containers"][1]["resources"]["requests"]["nvidia.com/gpu"], "1");
  EXPECT_FALSE(p["spec"]["containers"][2].contains("resources"));
  // gpumem 0 counts as not given: no GPU, and no count added.
  const Json zero = Pod({Container("z", {{"nvidia.com/gpumem", "0"}})});
  const Answer z = Ask(hook, ReviewBody(zero));
  ASSERT_TRUE(z.patch.is_array());
  EXPECT_EQ(z.patch.size(), 1u);  // the scheduler name only
}

TEST(AdmissionWebhook, RefusesRequestsThatCanNeverFit) {
  AdmissionWebhook hook({});
  const struct {
    Json limits;
    std::string message;
  } cases[] = {
      {{{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 101}},
       "container 'c': nvidia.com/gpucores=101 is outside 1..100"},
      {{{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 0}}, "nvidia.com/gpucores=0 is outside"},
      {{{"nvidia.com/gpumem-percentage", "150"}}, "nvidia.com/gpumem-percentage=150 is outside"},
      {{{"nvidia.com/gpu", "-1"}}, "nvidia.com/gpu=-1 is outside"},
      {{{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", "-2048"}}, "nvidia.com/gpumem=-2048"},
      {{{"nvidia.com/gpu", 0}, {"nvidia.com/gpumem", 1024}}, "nvidia.com/gpu=0 but it asks"},
      {{{"nvidia.com/gpu", "500m"}}, "nvidia.com/gpu"},
      {{{"nvidia.com/gpu", 1}, {"nvidia.com/gpu-memory", 1}}, "unknown resource"},
  };
  for (const auto& c : cases) {
    const Answer a = Ask(hook, ReviewBody(Pod({Container("c", c.limits)}), "uid-bad"));
    EXPECT_EQ(a.http_status, 200) << c.limits;
    EXPECT_EQ(a.response["uid"], "uid-bad");
    EXPECT_EQ(a.response["allowed"], false) << c.limits;
    EXPECT_FALSE(a.response.contains("patch"));
    EXPECT_EQ(a.response["status"]["code"], 422);
    const std::string message = a.response["status"]["message"].get<std::string>();
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_EQ(message.rfind("vgpu: ", 0), 0u) << message;
  }
  // In an init container too.
  const Json init = Pod({Container("a", {{"cpu", "1"}})},
                        {Container("i", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 200}})});
  EXPECT_EQ(Ask(hook, ReviewBody(init)).response["allowed"], false);
  // Another scheduler's pod is not vgpu's to judge.
  const Json other = Pod({Container("c", {{"nvidia.com/gpucores", 101}})}, {}, "volcano");
  EXPECT_EQ(Ask(hook, ReviewBody(other)).response["allowed"], true);
}

TEST(AdmissionWebhook, AnswersMalformedBodiesWith400) {
  AdmissionWebhook hook({});
  const struct {
    std::string body, message, uid;
  } cases[] = {
      {"{not json", "not JSON", ""},
      {"", "not JSON", ""},
      {"[1,2]", "not a JSON object", ""},
      {R"({"apiVersion":"v1","kind":"Pod"})", "expected an admission.k8s.io/v1 AdmissionReview",
       ""},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "no request object", ""},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}})",
       "request has no uid", ""},
      {R"({"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"u-2"}})",
       "apiVersion 'admission.k8s.io/v2'", "u-2"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-3",
          "resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE",
          "object":"oops"}})",
       "request.object of a pod CREATE is not a Pod", "u-3"},
  };
  for (const auto& c : cases) {
    const AdmissionWebhook::Reply r = hook.Review(c.body);
    EXPECT_EQ(r.http_status, 400) << c.body;
    const Json out = Json::parse(r.body);
    EXPECT_EQ(out["response"]["uid"], c.uid) << c.body;
    EXPECT_EQ(out["response"]["allowed"], false);
    const std::string message = out["response"]["status"]["message"].get<std::string>();
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
  EXPECT_EQ(hook.errors(), std::size(cases));
  // Deep nesting is refused before it is parsed or copied (both recurse per level).
  Json review = Json::parse(ReviewBody(HamiPod(), "u-deep"));
  review["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] =
      "DEEP";
  std::string body = review.dump();
  body.replace(body.find("\"DEEP\""), 6, std::string(100000, '[') + std::string(100000, ']'));
  const AdmissionWebhook::Reply deep = hook.Review(body);
  EXPECT_EQ(deep.http_status, 400);
  EXPECT_NE(deep.body.find("nests deeper than 256 levels"), std::string::npos);
  // Brackets inside strings do not count.
  review["request"]["object"]["metadata"]["annotations"] = {{"a", std::string(1000, '[')}};
  review["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1;
  EXPECT_EQ(hook.Review(review.dump()).http_status, 200);
}

TEST(AdmissionWebhook, LeavesOtherOperationsAndResourcesUnchanged) {
  AdmissionWebhook hook({});
  const Answer update = Ask(hook, ReviewBody(HamiPod(), "u-up", "UPDATE"));
  EXPECT_EQ(update.response["uid"], "u-up");
  EXPECT_EQ(update.response["allowed"], true);
  EXPECT_FALSE(update.response.contains("patch"));

  Json review = Json::parse(ReviewBody(HamiPod(), "u-dep"));
  review["request"]["resource"] = {
      {"group", "apps"}, {"version", "v1"}, {"resource", "deployments"}};
  const Answer dep = Ask(hook, review.dump());
  EXPECT_EQ(dep.http_status, 200);
  EXPECT_EQ(dep.response["allowed"], true);
  EXPECT_NE(dep.response["warnings"][0].get<std::string>().find("apps/deployments"),
            std::string::npos);

  // v1beta1 is answered in v1beta1.
  const Answer beta = Ask(hook, ReviewBody(HamiPod(), "u-b", "CREATE", "admission.k8s.io/v1beta1"));
  EXPECT_EQ(beta.review["apiVersion"], "admission.k8s.io/v1beta1");
  EXPECT_TRUE(beta.patch.is_array());
}

TEST(AdmissionWebhook, LeavesAPodBoundToANodeAlone) {
  AdmissionWebhook hook({});
  Json pod = HamiPod();
  pod["spec"]["nodeName"] = "gpu-1";
  const Answer a = Ask(hook, ReviewBody(pod));
  EXPECT_EQ(a.response["allowed"], true);
  EXPECT_FALSE(a.response.contains("patch"));
  EXPECT_NE(a.response["warnings"][0].get<std::string>().find("names node 'gpu-1'"),
            std::string::npos);
}

TEST(AdmissionWebhook, HidesGpusFromContainersWithoutASlice) {
  WebhookOptions o;
  o.hide_gpus = true;
  AdmissionWebhook hook(o);
  Json sidecar = Container("log", {{"cpu", "100m"}});
  sidecar["env"] = {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}};
  const Json pod =
      Pod({Container("cuda", {{"nvidia.com/gpu", 1}}), sidecar, Container("web", {{"cpu", "1"}})});
  const Answer a = Ask(hook, ReviewBody(pod));
  ASSERT_TRUE(a.patch.is_array());
  const Json p = pod.patch(a.patch);
  EXPECT_FALSE(p["spec"]["containers"][0].contains("env"));
  const Json none = Json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "none"}}});
  EXPECT_EQ(p["spec"]["containers"][1]["env"], none);
  EXPECT_EQ(p["spec"]["containers"][2]["env"], none);
}

TEST(AdmissionWebhook, SendsPodsWithoutGpusToVgpuOnlyWhenAsked) {
  const Json web = Pod({Container("web", {{"cpu", "2"}, {"memory", "4Gi"}})});
  AdmissionWebhook gpu_only({});
  const Answer plain = Ask(gpu_only, ReviewBody(web));
  EXPECT_FALSE(plain.response.contains("patch"));
  WebhookOptions o;
  o.cpu_pods = true;
  AdmissionWebhook hook(o);
  const Answer a = Ask(hook, ReviewBody(web));
  ASSERT_TRUE(a.patch.is_array());
  EXPECT_EQ(web.patch(a.patch)["spec"]["schedulerName"], "vgpu-scheduler");
  // Still not a pod that names another scheduler, nor one bound to a node.
  Json other = web;
  other["spec"]["schedulerName"] = "volcano";
  EXPECT_FALSE(Ask(hook, ReviewBody(other)).response.contains("patch"));
  Json pinned = web;
  pinned["spec"]["nodeName"] = "cpu-1";
  EXPECT_FALSE(Ask(hook, ReviewBody(pinned)).response.contains("patch"));
}

TEST(AdmissionWebhook, CountsAnswersInMetrics) {
  AdmissionWebhook hook({});
  Ask(hook, ReviewBody(HamiPod()));
  Ask(hook, ReviewBody(Pod({Container("c", {{"nvidia.com/gpucores", 101}})})));
  hook.Review("nope");
  std::string out;
  hook.RenderMetrics(&out);
  EXPECT_NE(out.find("# TYPE vgpu_scheduler_webhook_requests_total counter"), std::string::npos);
  EXPECT_NE(out.find("vgpu_scheduler_webhook_requests_total{result=\"patched\"} 1"),
            std::string::npos);
  EXPECT_NE(out.find("vgpu_scheduler_webhook_requests_total{result=\"denied\"} 1"),
            std::string::npos);
  EXPECT_NE(out.find("vgpu_scheduler_webhook_requests_total{result=\"error\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace vgpu::k8s
