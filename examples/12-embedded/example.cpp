// An operator embedded in an application: the operator runs in a side thread (kopf::operator_,
// no signal handling), while the main thread does the application's work — here, it creates
// and deletes the example objects with the operator's own API client — and then stops the
// operator with its stop flag. The handlers print templates kept in the operator's memo.
//
// This is a program of its own, not a file for `kopf run`: build it against the library
// (kopf::kopf in CMake; `examples_12_embedded` in this repository's build) and run it with a
// kubeconfig (the cluster needs examples/crd.yaml):
//     KUBECONFIG=/tmp/kc ./examples_12_embedded
#include <chrono>
#include <iostream>
#include <kopf/kopf.hpp>
#include <kopf/run.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

// Python's str.format(**kwargs) for the one field the templates use.
std::string format_template(std::string text, const kopf::Context& ctx) {
    const std::string field = "{name}";
    for (auto at = text.find(field); at != std::string::npos; at = text.find(field, at)) {
        text.replace(at, field.size(), ctx.name);
        at += ctx.name.size();
    }
    return text;
}

}  // namespace

void create_fn(kopf::Context& ctx) {
    std::cout << format_template(ctx.memo["create_tpl"].get<std::string>(), ctx) << std::endl;
}
KOPF_ON_CREATE(create_fn, "kopfexamples");

void delete_fn(kopf::Context& ctx) {
    std::cout << format_template(ctx.memo["delete_tpl"].get<std::string>(), ctx) << std::endl;
}
KOPF_ON_DELETE(delete_fn, "kopfexamples");

namespace {

void kopf_thread(kopf::OperatorFlag& ready_flag, kopf::OperatorFlag& stop_flag,
                 kopf::Client& client) {
    kopf::configure({.verbose = true});  // log formatting

    auto memo = std::make_shared<kopf::Memo>();
    (*memo)["create_tpl"] = "Hello, {name}!";
    (*memo)["delete_tpl"] = "Good bye, {name}!";
    kopf::operator_(
        {.stop_flag = &stop_flag, .ready_flag = &ready_flag, .client = &client, .memo = memo});
}

void create_object(const kopf::Client& client, int step) {
    try {
        client.api("kopfexamples", "default")
            .create(
                {{"apiVersion", "kopf.dev/v1"},
                 {"kind", "KopfExample"},
                 {"metadata",
                  {{"namespace", "default"}, {"name", "kopf-example-" + std::to_string(step)}}}})
            .wait();
    } catch (const kopf::ApiError& e) {
        if (e.code() != 409) throw;
    }
}

void delete_object(const kopf::Client& client, int step) {
    try {
        client.api("kopfexamples", "default")
            .delete_("kopf-example-" + std::to_string(step))
            .wait();
    } catch (const kopf::ApiError& e) {
        if (e.code() != 404) throw;
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::stoi(argv[1]) : 3;

    // Start the operator and let it initialise.
    std::cout << "Starting the main app." << std::endl;
    kopf::OperatorFlag ready_flag;
    kopf::OperatorFlag stop_flag;
    kopf::Client client;  // the operator's, once it is ready
    std::string failure;
    std::thread thread([&] {
        try {
            kopf_thread(ready_flag, stop_flag, client);
        } catch (const std::exception& e) {
            failure = e.what();  // e.g. no cluster to connect to: the app cannot go on
            ready_flag.set();
        }
    });
    ready_flag.wait();
    if (!failure.empty()) {
        thread.join();
        std::cerr << "The operator could not start: " << failure << std::endl;
        return 1;
    }

    // The operator is active: run the app's activity.
    for (int step = 0; step < steps; ++step) {
        std::cout << "Do the main app activity here. Step " << step + 1 << "/" << steps << "."
                  << std::endl;
        create_object(client, step);
        std::this_thread::sleep_for(std::chrono::seconds(1));
        delete_object(client, step);
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }

    // Ask the operator to terminate gracefully (can take a couple of seconds).
    std::cout << "Exiting the main app." << std::endl;
    stop_flag.set();
    thread.join();
    return 0;
}
