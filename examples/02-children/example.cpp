// Children: the creation handler renders a Pod from the spec, adopts it (owner reference,
// namespace, name prefix and labels of the parent), creates it, and stores the child's uid in
// the parent's status. Deleting the parent lets Kubernetes' garbage collector delete the Pod.
// Run it with: kopf run examples/02-children/example.cpp --verbose -A --standalone
//
// The Pod is created with kubectl (found on PATH, using $KUBECONFIG as the operator does), the
// way Kopf's own example uses a third-party client (pykube).
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <kopf/kopf.hpp>
#include <stdexcept>
#include <string>

namespace {

// `kubectl create -f FILE -o json` with the object in a temporary file; the created object.
kopf::json kubectl_create(const kopf::json& object) {
    char path[] = "/tmp/kopf-example-child-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw std::runtime_error("Cannot create a temporary file for the child.");
    const std::string text = object.dump();
    const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!written) {
        unlink(path);
        throw std::runtime_error("Cannot write the child to a temporary file.");
    }

    const std::string command = std::string("kubectl create -o json -f ") + path + " 2>&1";
    std::string output;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        unlink(path);
        throw std::runtime_error("Cannot run kubectl.");
    }
    std::array<char, 4096> buffer{};
    while (const std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) {
        output.append(buffer.data(), n);
    }
    const int status = pclose(pipe);
    unlink(path);
    if (status != 0) throw std::runtime_error("kubectl create failed: " + output);
    return kopf::json::parse(output);
}

}  // namespace

kopf::json create_fn(kopf::Context& ctx) {
    // Render the pod with some spec fields used in the template.
    std::string duration = "0";
    if (ctx.spec.contains("duration")) {
        const auto& value = ctx.spec["duration"];
        duration = value.is_string() ? value.get<std::string>() : value.dump();
    }
    std::string field = "default-value";
    if (ctx.spec.contains("field") && ctx.spec["field"].is_string()) {
        field = ctx.spec["field"].get<std::string>();
    }
    kopf::json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"spec",
         {{"containers",
           {{{"name", "the-only-one"},
             {"image", "busybox"},
             {"command", {"sh", "-x", "-c"}},
             {"args", {"echo \"FIELD=$FIELD\"\nsleep " + duration + "\n"}},
             {"env", {{{"name", "FIELD"}, {"value", field}}}}}}}}},
    };

    // Make it our child: the owner reference, the name prefix, the namespace and the labels.
    kopf::adopt(pod, ctx.body);

    // Actually create the object by requesting the Kubernetes API.
    const kopf::json created = kubectl_create(pod);
    const std::string uid = created.at("metadata").value("uid", "");
    ctx.logger.info("Pod child is created: {}", created.at("metadata").value("name", ""));

    // Update the parent's status.
    return {{"children", kopf::json::array({uid})}};
}
KOPF_ON_CREATE(create_fn, "kopfexamples");
