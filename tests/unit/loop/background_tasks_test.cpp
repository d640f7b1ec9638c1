// Background tasks (kopf::spawn) on a virtual-clock loop: they run beside their spawner, are
// cancelled by their handle or all at once (their sleeps wake at once and throw
// kopf::CancelledError), report failures with their names, and refuse to start outside an
// operator's loop.
#include "loop/background_tasks.hpp"

#include <gtest/gtest.h>

#include <kopf/task.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "loop/virtual_executor.hpp"

namespace kopf::loop {
namespace {

// The operator's loop: the virtual executor with the operator's background tasks.
class OperatorLoop final : public Executor {
  public:
    // As the operator's exit does: what still runs is cancelled and finishes.
    ~OperatorLoop() override {
        tasks->cancel_all();
        virtual_.run();
    }
    void post(std::function<void()> fn) override { virtual_.post(std::move(fn)); }
    void post_after(double seconds, std::function<void()> fn) override {
        virtual_.post_after(seconds, std::move(fn));
    }
    void run_blocking(std::function<void()> work, std::function<void()> done) override {
        virtual_.run_blocking(std::move(work), std::move(done));
    }
    double now() const override { return virtual_.now(); }
    detail::BackgroundTasks* background_tasks() const override { return tasks.get(); }

    void run_until(double deadline) { virtual_.run_until(deadline); }

    std::vector<std::string> failures;  // "name: what"
    std::shared_ptr<detail::BackgroundTasks> tasks = std::make_shared<detail::BackgroundTasks>(
        *this, [this](const std::string& name, std::exception_ptr error) {
            try {
                std::rethrow_exception(error);
            } catch (const std::exception& e) {
                failures.push_back(name + ": " + e.what());
            }
        });

  private:
    VirtualExecutor virtual_;
};

// What the tasks did, on the heap as users' captured state is.
struct Journal {
    std::vector<std::string> lines;
};

Task<void> sleeper(std::shared_ptr<Journal> journal, std::string name, double seconds) {
    try {
        journal->lines.push_back(name + " sleeps");
        co_await kopf::sleep(seconds);
        journal->lines.push_back(name + " woke");
    } catch (const CancelledError&) {
        journal->lines.push_back(name + " cancelled");
        throw;
    }
}

Task<void> spawner(std::shared_ptr<Journal> journal, std::vector<BackgroundTask>* started) {
    started->push_back(co_await kopf::spawn(sleeper(journal, "short", 1), "short"));
    started->push_back(co_await kopf::spawn(sleeper(journal, "long", 3600), "long"));
    journal->lines.push_back("spawner done");
}

TEST(BackgroundTasks, RunBesideTheirSpawnerUntilDone) {
    OperatorLoop loop;
    auto journal = std::make_shared<Journal>();
    std::vector<BackgroundTask> started;
    start_detached(loop, spawner(journal, &started), [](std::exception_ptr) {});
    loop.run_until(0.5);
    ASSERT_EQ(started.size(), 2u);
    // The spawner went on at once; the tasks run beside it.
    EXPECT_EQ(journal->lines.front(), "spawner done");
    EXPECT_FALSE(started[0].done());
    EXPECT_EQ(loop.tasks->running(), 2u);
    loop.run_until(2);
    EXPECT_TRUE(started[0].done());
    EXPECT_FALSE(started[0].cancelled());
    EXPECT_EQ(started[0].name(), "short");
    EXPECT_FALSE(started[1].done());
    EXPECT_EQ(loop.tasks->running(), 1u);
    EXPECT_TRUE(loop.failures.empty());
}

TEST(BackgroundTasks, CancellationWakesASleepingTaskAtOnce) {
    OperatorLoop loop;
    auto journal = std::make_shared<Journal>();
    std::vector<BackgroundTask> started;
    start_detached(loop, spawner(journal, &started), [](std::exception_ptr) {});
    loop.run_until(0.5);
    started[1].cancel();
    EXPECT_TRUE(started[1].cancelled());
    loop.run_until(0.6);  // long before its 3600 s
    EXPECT_TRUE(started[1].done());
    EXPECT_EQ(journal->lines.back(), "long cancelled");
    EXPECT_TRUE(loop.failures.empty());  // a cancellation is no failure
    started[1].cancel();                 // no effect once done
}

TEST(BackgroundTasks, AllAreCancelledAtOnceAtTheExit) {
    OperatorLoop loop;
    auto journal = std::make_shared<Journal>();
    std::vector<BackgroundTask> started;
    start_detached(loop, spawner(journal, &started), [](std::exception_ptr) {});
    loop.run_until(0.5);
    EXPECT_EQ(loop.tasks->cancel_all(), 2u);
    loop.run_until(0.6);
    EXPECT_EQ(loop.tasks->running(), 0u);
    EXPECT_TRUE(started[0].done() && started[1].done());
}

Task<void> failing() {
    co_await kopf::sleep(1);
    throw std::runtime_error("the external system is down");
}

Task<void> spawn_failing() {
    co_await kopf::spawn(failing(), "poller");
}

TEST(BackgroundTasks, AFailureIsReportedWithTheTasksName) {
    OperatorLoop loop;
    std::exception_ptr spawner_error;
    start_detached(loop, spawn_failing(), [&](std::exception_ptr e) { spawner_error = e; });
    loop.run_until(2);
    EXPECT_FALSE(spawner_error);  // the spawner is not affected
    ASSERT_EQ(loop.failures.size(), 1u);
    EXPECT_EQ(loop.failures[0], "poller: the external system is down");
}

TEST(BackgroundTasks, SpawningOutsideAnOperatorsLoopIsRefused) {
    VirtualExecutor plain;  // no background tasks: not an operator's loop
    std::exception_ptr error;
    start_detached(plain, spawn_failing(), [&](std::exception_ptr e) { error = e; });
    plain.run();
    ASSERT_TRUE(error);
    try {
        std::rethrow_exception(error);
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("kopf::spawn(poller)"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace kopf::loop
