// -d/--debug: the API traffic (requests with their bodies, answers with their status and
// bodies, watch streams) is logged at spdlog's trace level, which only --debug enables; -v
// (debug level) does not show it.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

#include "support/fixture.hpp"

namespace kopf::testing {
namespace {

using namespace clients;

// The default logger's lines at `level` while it lives, then the previous logger back.
class LogCapture {
  public:
    explicit LogCapture(spdlog::level::level_enum level) : previous_(spdlog::default_logger()) {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_);
        auto logger = std::make_shared<spdlog::logger>("capture", sink);
        logger->set_level(level);
        spdlog::set_default_logger(logger);
    }
    ~LogCapture() { spdlog::set_default_logger(previous_); }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;
    std::string text() {
        spdlog::default_logger()->flush();
        return lines_.str();
    }

  private:
    std::shared_ptr<spdlog::logger> previous_;
    std::ostringstream lines_;
};

class DebugLogging : public ClientTest {};

TEST_F(DebugLogging, TraceLevelLogsTheRequestsAndTheAnswers) {
    LogCapture capture(spdlog::level::trace);
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-traced", {{"key", "value"}})));
    EXPECT_THROW(run(api->request("GET", "/api/v1/namespaces/default/configmaps/cm-absent")),
                 NotFoundError);
    const std::string text = capture.text();
    EXPECT_NE(text.find("API request: POST /api/v1/namespaces/default/configmaps"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("\"cm-traced\""), std::string::npos) << text;  // the body sent
    EXPECT_NE(text.find("API response: POST /api/v1/namespaces/default/configmaps"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("-> 201"), std::string::npos) << text;
    EXPECT_NE(text.find("-> 404"), std::string::npos) << text;  // failures too
}

// A Secret's values stay out of the trace, sent or answered, one Secret or a list of them.
TEST_F(DebugLogging, SecretsAreTracedWithTheirValuesRedacted) {
    LogCapture capture(spdlog::level::trace);
    auto api = make_client(admin());
    structs::Resource secrets = configmaps();
    secrets.plural = "secrets";
    secrets.kind = "Secret";
    secrets.singular = "secret";
    const json secret = {{"apiVersion", "v1"},
                         {"kind", "Secret"},
                         {"metadata", {{"name", "db"}, {"labels", {{"app", "db"}}}}},
                         {"data", {{"password", "aHVudGVyMi1wYXNzd29yZA=="}}},
                         {"stringData", {{"token", "plain-text-token-value"}}}};
    run(api->create(secrets, "default", secret));
    run(api->request("GET", "/api/v1/namespaces/default/secrets"));
    run(api->request("GET", "/api/v1/namespaces/default/secrets/db"));
    const std::string text = capture.text();
    EXPECT_NE(text.find("API response: GET /api/v1/namespaces/default/secrets -> 200"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("\"password\":\"<redacted>\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"app\":\"db\""), std::string::npos) << text;  // the rest is shown
    for (const char* value :
         {"aHVudGVyMi1wYXNzd29yZA==", "plain-text-token-value", "cGxhaW4tdGV4dC10b2tlbi12YWx1ZQ=="})
        EXPECT_EQ(text.find(value), std::string::npos) << value << " in the trace:\n" << text;
}

TEST_F(DebugLogging, DebugLevelDoesNotLogTheTraffic) {
    LogCapture capture(spdlog::level::debug);
    auto api = make_client(admin());
    run(api->create(configmaps(), "default", configmap("cm-untraced")));
    EXPECT_EQ(capture.text().find("API re"), std::string::npos) << capture.text();
}

}  // namespace
}  // namespace kopf::testing
