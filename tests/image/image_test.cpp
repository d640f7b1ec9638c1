// deploy/Dockerfile built for real with buildah (Debian's package; chroot isolation, no
// daemon): the image's operator runs as its non-root user and handles an object created with
// kubectl. No registry is reachable here, so the base image is made from Debian's packages
// with mmdebstrap (once; kept in $KOPF_IMAGE_CACHE, default /var/cache/kopf-image-base).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "e2e/support/e2e.hpp"

using namespace kopf::e2e;
namespace fs = std::filesystem;

namespace {

const char* kBase = "localhost/kopf-test-base:bookworm";

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

class Image : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* program : {"buildah", "mmdebstrap", "kubectl"})
            if (!have_program(program))
                GTEST_SKIP() << program << " is not installed (scripts/setup.sh installs it)";
        auto package =
            run({"sh", "-c", "ls " + (source_dir() / "build").string() + "/kopfpp_*.deb"});
        if (package.exit_code != 0)
            GTEST_SKIP() << "no Kopf++ package in build/ (scripts/install-package.sh makes it)";
    }

    // The base image: a Debian bookworm root file system from Debian's own mirror.
    static void ensure_base() {
        if (run({"buildah", "inspect", "--type", "image", kBase}).exit_code == 0) return;
        const char* cache = std::getenv("KOPF_IMAGE_CACHE");
        const fs::path dir = cache && *cache ? cache : "/var/cache/kopf-image-base";
        fs::create_directories(dir);
        const fs::path tarball = dir / "bookworm.tar";
        if (!fs::exists(tarball)) {
            auto made = run({"mmdebstrap", "--variant=minbase", "--include=ca-certificates",
                             "bookworm", (dir / "bookworm.tar.part").string()});
            ASSERT_EQ(made.exit_code, 0) << made.output;
            fs::rename(dir / "bookworm.tar.part", tarball);
        }
        auto container = run({"buildah", "from", "scratch"});
        ASSERT_EQ(container.exit_code, 0) << container.output;
        const std::string name = first_line(container.output);
        auto added = run({"buildah", "add", name, tarball.string(), "/"});
        ASSERT_EQ(added.exit_code, 0) << added.output;
        auto committed = run({"buildah", "commit", "--rm", name, kBase});
        ASSERT_EQ(committed.exit_code, 0) << committed.output;
    }
};

TEST_F(Image, TheDockerfileBuildsAnImageWhoseOperatorHandlesObjectsAsANonRootUser) {
    ensure_base();
    if (HasFatalFailure()) return;
    const std::vector<std::pair<std::string, std::string>> env = {
        {"BUILDER", "buildah"}, {"BASE", kBase}, {"BUILDAH_ISOLATION", "chroot"}};
    auto built = run({(source_dir() / "deploy/build-image.sh").string(),
                      (source_dir() / "examples/01-minimal/example.cpp").string(),
                      "localhost/kopf-operator-test:latest"},
                     env);
    ASSERT_EQ(built.exit_code, 0) << built.output;

    // The final stage holds no compiler and no headers: only what runs.
    auto container = run({"buildah", "from", "localhost/kopf-operator-test:latest"});
    ASSERT_EQ(container.exit_code, 0) << container.output;
    const std::string name = first_line(container.output);
    auto user = run({"buildah", "inspect", "--format", "{{.OCIv1.Config.User}}", name});
    EXPECT_EQ(first_line(user.output), "65532:65532");
    auto contents = run({"buildah", "run", "--isolation", "chroot", name, "--", "sh", "-c",
                         "command -v c++ g++ cmake; ls /usr/include/kopf 2>&1; id -u"});
    EXPECT_NE(contents.output.find("No such file or directory"), std::string::npos)
        << contents.output;
    EXPECT_EQ(contents.output.find("/usr/bin/g++"), std::string::npos) << contents.output;
    EXPECT_NE(contents.output.find("65532"), std::string::npos) << contents.output;

    // Run it against a cluster (the host's network: chroot isolation shares it).
    Cluster cluster;
    auto crd = cluster.kubectl({"apply", "-f", (source_dir() / "examples/crd.yaml").string()});
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    fs::permissions(cluster.kubeconfig(), fs::perms::others_read, fs::perm_options::add);
    fs::permissions(cluster.workdir(), fs::perms::others_exec | fs::perms::others_read,
                    fs::perm_options::add);
    OperatorProcess op(cluster, Program{"buildah", {{"BUILDAH_ISOLATION", "chroot"}}},
                       {"run", "-v", cluster.workdir().string() + ":/kube", "--env",
                        "KUBECONFIG=/kube/" + cluster.kubeconfig().filename().string(), name, "--",
                        "/usr/local/bin/operator", "run", "-n", "default", "--standalone"});
    ASSERT_TRUE(
        op.wait_for_log("Serving resource kopfexamples.v1.kopf.dev", std::chrono::seconds(60)))
        << op.log();
    auto created = cluster.kubectl({"apply", "-f", (source_dir() / "examples/obj.yaml").string()});
    ASSERT_EQ(created.exit_code, 0) << created.output;
    EXPECT_TRUE(op.wait_for_log("Handler 'create_fn' succeeded.", std::chrono::seconds(60)))
        << op.log();
    auto object = cluster.get_json({"kex", "kopf-example-1", "-n", "default"});
    EXPECT_EQ(object["status"]["create_fn"]["message"], "hello world");
    op.stop(SIGTERM, std::chrono::seconds(20));
    run({"buildah", "rm", name});
}

}  // namespace
