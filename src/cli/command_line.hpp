// The options of `kopf run`, parsed by kopf::main (command_line.cpp), and the command itself.
#pragma once

#include <cstddef>
#include <functional>
#include <kopf/run.hpp>
#include <memory>
#include <string>
#include <vector>

namespace kopf::runtime {

struct RunCommandOptions {
    std::vector<std::string> paths;
    std::vector<std::string> modules;
    std::vector<std::string> namespaces;
    bool all_namespaces = false;
    bool standalone = false;
    std::string peering;
    int priority = 0;
    bool dev = false;
    std::string lease;
    std::string lease_namespace;
    std::string liveness;
    std::string metrics;
    std::string context;
    std::string log_format = "full";
    int log_prefix = 0;  // +1 --log-prefix, -1 --no-log-prefix, 0 the format's default
    std::string log_refkey;
    bool verbose = false;
    bool debug = false;
    bool quiet = false;
    bool compile_only = false;  // compile and load the files, check they register handlers, exit
};

// The operator's run options for the parsed command line (Kopf's rules: --dev means priority
// 666 whatever --priority says).
RunOptions run_options_of(const RunCommandOptions& options);

// What a program running the command line in one of its threads gives it (Kopf's CLIControls;
// the testing kit, kopf/testing.hpp): the operator then runs with kopf::operator_() (no signal
// handling) with these, and a failure to start is thrown after it is logged.
struct RunControls {
    Registry* registry = nullptr;  // also the default registry while the files are loaded
    const OperatorSettings* settings = nullptr;
    OperatorFlag* stop_flag = nullptr;
    OperatorFlag* ready_flag = nullptr;
    std::optional<Lifecycle> lifecycle{};
    std::shared_ptr<Vault> vault;  // the operator's credentials, shared with the program
    // Receives the command line's error messages and help (printed on stderr/stdout otherwise).
    std::function<void(const std::string&)> print;
};

// Runs `kopf run` with parsed options: logging, scope checks, loading the operator files,
// then kopf::run(). Returns the exit code; errors are printed as one paragraph on stderr.
int run_command(const RunCommandOptions& options, const RunControls* controls = nullptr);

// A command served outside the operator command line, e.g. `kopf apiserver` in the kopf binary
// (operators linked with kopf::main do not carry the API server). It is listed in --help and
// called with argv starting at its own name.
struct ExtraCommand {
    std::string name;
    std::string description;
    int (*run)(int argc, char** argv) = nullptr;
};

// The kopf command line (kopf::main forwards here without extra commands).
int main(int argc, char** argv, const std::vector<ExtraCommand>& extra_commands = {},
         const RunControls* controls = nullptr);

// How many handlers of any kind the default registry holds (to detect files that register none).
std::size_t count_registered_handlers();

}  // namespace kopf::runtime
