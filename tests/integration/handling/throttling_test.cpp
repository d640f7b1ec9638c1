// Kopf's throttling (settings.queueing.error_delays) against the embedded API server: an
// unexpected error in an object's processing (here a diff-base storage of the user's that
// throws) holds the object's next events back for the next delay, while other objects go on;
// the latest event held back is processed when the delay is over.
#include <atomic>
#include <stdexcept>
#include <string>

#include "support/cluster.hpp"

namespace kopf::testing {
namespace {

using namespace std::chrono_literals;

// The default diff-base storage, failing its first `failures` reads of the object `name`.
class FailingDiffBase : public AnnotationsDiffBaseStorage {
  public:
    FailingDiffBase(std::string name, int failures) : name_(std::move(name)), failures_(failures) {}
    std::optional<json> fetch(const json& body) const override {
        if (body.value("/metadata/name"_json_pointer, std::string()) == name_) {
            ++reads;
            if (failures_-- > 0) throw std::runtime_error("the storage is unavailable");
        }
        return AnnotationsDiffBaseStorage::fetch(body);
    }
    mutable std::atomic<int> reads{0};  // of the object `name`

  private:
    std::string name_;
    mutable std::atomic<int> failures_;
};

class Throttling : public HandlingTest {};

TEST_F(Throttling, AnUnexpectedErrorHoldsTheObjectsEventsBackForTheDelay) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::create create_fn(registry, "kopfexamples", {.id = "create_fn"},
                         [calls](Context& ctx) { calls->add(ctx.name); });
    on::update update_fn(registry, "kopfexamples", {.id = "update_fn"},
                         [calls](Context& ctx) { calls->add(ctx.name); });
    auto settings = fast_settings();
    settings.queueing.error_delays = {3600};
    auto storage = std::make_shared<FailingDiffBase>("kex-throttled", 1);
    settings.persistence.diffbase_storage = storage;
    auto operator_ = start_operator(registry, settings);

    create(example("kex-throttled", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return storage->reads == 1; }));
    patch("kex-throttled", {{"spec", {{"field", 2}}}});
    patch("kex-throttled", {{"spec", {{"field", 3}}}});
    // Another object of the same watch stream, after those changes: it is handled, so the
    // changes above have reached the operator, which holds them back.
    create(example("kex-bystander", {}));
    ASSERT_TRUE(eventually([&] { return calls->count("kex-bystander") == 1; }));
    EXPECT_EQ(operator_->stop(), "");  // not held up by the hour of throttling

    EXPECT_EQ(storage->reads, 1);  // without throttling: read again for the changes, and handled
    EXPECT_EQ(calls->count("kex-throttled"), 0);
}

TEST_F(Throttling, TheLatestEventHeldBackIsProcessedWhenTheDelayIsOver) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::create create_fn(registry, "kopfexamples", {.id = "create_fn"},
                         [calls](Context& ctx) { calls->add("create", ctx.spec); });
    auto settings = fast_settings();
    settings.queueing.error_delays = {0.5};
    auto storage = std::make_shared<FailingDiffBase>("kex-recovering", 1);
    settings.persistence.diffbase_storage = storage;
    auto operator_ = start_operator(registry, settings);

    create(example("kex-recovering", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return storage->reads == 1; }));
    patch("kex-recovering", {{"spec", {{"field", 2}}}});
    ASSERT_TRUE(eventually([&] { return calls->count("create") == 1; }));
    EXPECT_EQ(calls->details("create").at(0), (json{{"field", 2}}));
    EXPECT_EQ(operator_->stop(), "");
}

TEST_F(Throttling, NoDelaysMeanNoThrottling) {
    Registry registry;
    auto calls = std::make_shared<Calls>();
    on::create create_fn(registry, "kopfexamples", {.id = "create_fn"},
                         [calls](Context& ctx) { calls->add("create", ctx.spec); });
    auto settings = fast_settings();
    settings.queueing.error_delays = {};
    auto storage = std::make_shared<FailingDiffBase>("kex-unthrottled", 1);
    settings.persistence.diffbase_storage = storage;
    auto operator_ = start_operator(registry, settings);

    create(example("kex-unthrottled", {{"field", 1}}));
    ASSERT_TRUE(eventually([&] { return storage->reads == 1; }));
    patch("kex-unthrottled", {{"spec", {{"field", 2}}}});
    ASSERT_TRUE(eventually([&] { return calls->count("create") == 1; }));
    EXPECT_EQ(operator_->stop(), "");
}

}  // namespace
}  // namespace kopf::testing
