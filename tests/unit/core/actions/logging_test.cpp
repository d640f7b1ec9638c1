#include "core/actions/logging.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace kopf::runtime;

namespace {

// Captures what is written to stderr while `fn` runs.
template <class F>
std::string capture_stderr(F fn) {
    testing::internal::CaptureStderr();
    fn();
    spdlog::apply_all([](auto logger) { logger->flush(); });
    return testing::internal::GetCapturedStderr();
}

LoggingOptions options(LogFormat format) {
    LoggingOptions result;
    result.format = format;
    return result;
}

ObjectRef example_ref() {
    return ObjectRef::from_body(
        {{"apiVersion", "kopf.dev/v1"},
         {"kind", "KopfExample"},
         {"metadata", {{"name", "kex1"}, {"namespace", "ns1"}, {"uid", "u1"}}}});
}

// Standard error redirected to a file while it lives; the file can be read at any moment.
class StderrInFile {
  public:
    StderrInFile() : path_(testing::TempDir() + "kopf-stderr-" + std::to_string(::getpid())) {
        std::fflush(stderr);
        saved_ = ::dup(STDERR_FILENO);
        const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(fd, STDERR_FILENO);
        ::close(fd);
    }
    ~StderrInFile() {
        spdlog::apply_all([](auto logger) { logger->flush(); });
        ::dup2(saved_, STDERR_FILENO);
        ::close(saved_);
        std::remove(path_.c_str());
    }
    std::string text() const {
        std::ifstream in(path_);
        std::stringstream out;
        out << in.rdbuf();
        return out.str();
    }

  private:
    std::string path_;
    int saved_ = -1;
};

}  // namespace

TEST(Logging, InfoLinesReachStderrWithoutAnyFlush) {
    configure_logging(options(LogFormat::plain));
    StderrInFile stderr_file;
    log_object(spdlog::level::info, example_ref(), "Batched.");
    std::string text;
    for (int i = 0; i < 500 && text.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        text = stderr_file.text();
    }
    EXPECT_EQ(text, "[ns1/kex1] Batched.\n");
}

TEST(Logging, AWarningWritesOutTheLinesBeforeItAtOnce) {
    configure_logging(options(LogFormat::plain));
    StderrInFile stderr_file;
    log_object(spdlog::level::info, example_ref(), "First.");
    log_object(spdlog::level::warn, example_ref(), "Second.");
    EXPECT_EQ(stderr_file.text(), "[ns1/kex1] First.\n[ns1/kex1] Second.\n");
}

TEST(Logging, PlainFormatPrefixesObjectMessages) {
    configure_logging(options(LogFormat::plain));
    auto out = capture_stderr([] { log_object(spdlog::level::info, example_ref(), "Hello."); });
    EXPECT_EQ(out, "[ns1/kex1] Hello.\n");
}

TEST(Logging, PlainFormatWithoutPrefixIsFlat) {
    auto o = options(LogFormat::plain);
    o.prefix = false;
    configure_logging(o);
    auto out = capture_stderr([] { log_object(spdlog::level::info, example_ref(), "Hello."); });
    EXPECT_EQ(out, "Hello.\n");
}

TEST(Logging, FullFormatHasTimestampLoggerAndLevel) {
    configure_logging(options(LogFormat::full));
    auto out = capture_stderr([] { logger("kopf.activities")->warn("Careful."); });
    EXPECT_EQ(out.front(), '[');
    EXPECT_NE(out.find("] kopf.activities      [WARNING ] Careful.\n"), std::string::npos) << out;
}

TEST(Logging, JsonFormatCarriesTheObjectReferenceUnderTheRefkey) {
    auto o = options(LogFormat::json);
    o.refkey = "k8s-obj";
    configure_logging(o);
    auto out = capture_stderr([] { log_object(spdlog::level::info, example_ref(), "Hello."); });
    auto record = nlohmann::json::parse(out);
    EXPECT_EQ(record["message"], "Hello.");  // no prefix in JSON by default
    EXPECT_EQ(record["severity"], "info");
    EXPECT_EQ(record["k8s-obj"]["name"], "kex1");
    EXPECT_EQ(record["k8s-obj"]["namespace"], "ns1");
    EXPECT_EQ(record["k8s-obj"]["kind"], "KopfExample");
    EXPECT_TRUE(record.contains("timestamp"));
}

TEST(Logging, QuietHidesInfoMessages) {
    auto o = options(LogFormat::plain);
    o.quiet = true;
    configure_logging(o);
    auto out = capture_stderr([] {
        logger("kopf.test")->info("hidden");
        logger("kopf.test")->warn("shown");
    });
    EXPECT_EQ(out, "shown\n");
}

TEST(Logging, VerboseShowsDebugMessages) {
    auto o = options(LogFormat::plain);
    o.verbose = true;
    configure_logging(o);
    auto out = capture_stderr([] { logger("kopf.test")->debug("details"); });
    EXPECT_EQ(out, "details\n");
}

TEST(Logging, OnlyDebugShowsTheApiTrafficWhichIsLoggedAtTraceLevel) {
    auto o = options(LogFormat::plain);
    o.verbose = true;
    configure_logging(o);
    EXPECT_EQ(capture_stderr([] { spdlog::trace("API request: GET /version"); }), "");
    o.debug = true;
    configure_logging(o);
    EXPECT_EQ(capture_stderr([] { spdlog::trace("API request: GET /version"); }),
              "API request: GET /version\n");
}

TEST(Logging, UnknownFormatIsRejectedNamingIt) {
    try {
        parse_log_format("xml");
        FAIL() << "no error";
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("xml"), std::string::npos);
    }
}

TEST(Logging, ObjectMessagesReachTheEventHook) {
    configure_logging(options(LogFormat::plain));
    std::string seen;
    ObjectLogHooks hooks;
    hooks.set([&](spdlog::level::level_enum, const ObjectRef& ref, std::string_view m) {
        seen = ref.name + ":" + std::string(m);
    });
    capture_stderr([&] { log_object(spdlog::level::warn, example_ref(), "Posted.", hooks); });
    EXPECT_EQ(seen, "kex1:Posted.");
}
