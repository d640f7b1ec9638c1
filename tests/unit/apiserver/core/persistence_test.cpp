// State and the resourceVersion counter survive a restart on the same data_dir.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/harness.hpp"

using namespace kopf::apiserver;
using namespace kopf::apiserver::testing;

namespace {
std::filesystem::path fresh_dir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() /
               ("kopf-core-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}
}  // namespace

TEST(Persistence, ObjectsAndCountersSurviveRestart) {
    auto dir = fresh_dir("restart");
    std::string rv;
    {
        CoreOptions opts;
        opts.data_dir = dir;
        ApiCore core(opts);
        install_widgets(core);
        auto r = post(core, "/apis/example.com/v1/namespaces/default/widgets", widget("w1", 3));
        ASSERT_EQ(r.status, 201) << r.raw;
        rv = r.body["metadata"]["resourceVersion"];
        post(core, "/api/v1/namespaces/default/configmaps", configmap("gone"));
        del(core, "/api/v1/namespaces/default/configmaps/gone");
    }
    CoreOptions opts;
    opts.data_dir = dir;
    ApiCore core(opts);
    auto w = get(core, "/apis/example.com/v1/namespaces/default/widgets/w1");
    ASSERT_EQ(w.status, 200) << w.raw;
    EXPECT_EQ(w.body["spec"]["size"], 3);
    EXPECT_EQ(w.body["metadata"]["resourceVersion"], rv);
    EXPECT_EQ(get(core, "/api/v1/namespaces/default/configmaps/gone").status, 404);
    auto c = post(core, "/api/v1/namespaces/default/configmaps", configmap("new"));
    EXPECT_GT(std::stoull(c.body["metadata"]["resourceVersion"].get<std::string>()),
              std::stoull(rv));
    std::filesystem::remove_all(dir);
}

TEST(Persistence, ResumingFromBeforeRestartIsExpired) {
    auto dir = fresh_dir("expired");
    std::string rv;
    {
        CoreOptions opts;
        opts.data_dir = dir;
        ApiCore core(opts);
        rv = get(core, "/api/v1/namespaces/default/configmaps").body["metadata"]["resourceVersion"];
        post(core, "/api/v1/namespaces/default/configmaps", configmap("a"));
    }
    CoreOptions opts;
    opts.data_dir = dir;
    ApiCore core(opts);
    auto sink = watch(core, "/api/v1/namespaces/default/configmaps", {{"resourceVersion", rv}});
    ASSERT_TRUE(sink->wait_closed());
    EXPECT_EQ(sink->events()[0]["object"]["code"], 410);
    std::filesystem::remove_all(dir);
}
