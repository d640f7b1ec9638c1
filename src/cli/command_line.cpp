// The `kopf` command line (CLI11 lives in this translation unit only): `run`, `freeze`, `resume`
// and `version`, shared by the `kopf` binary and by operators linked as their own binaries
// (kopf::main).
#include "cli/command_line.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/peering_commands.hpp"
#include "cli/plugins.hpp"
#include "cli/rbac.hpp"
#include "core/actions/logging.hpp"
#include "core/engines/daemons.hpp"
#include "core/reactor/namespaces.hpp"
#include "kopf/main.hpp"
#include "kopf/registry.hpp"
#include "kopf/run.hpp"
#include "kopf/version.hpp"

namespace kopf::runtime {
namespace {

// The controls of the command line running in this thread, if any (the testing kit's).
thread_local const RunControls* active_controls = nullptr;

void print_error(const std::string& message) {
    if (active_controls && active_controls->print) {
        active_controls->print("Error: " + message + "\n");
        return;
    }
    std::fprintf(stderr, "Error: %s\n", message.c_str());
}

// Makes `registry` the default one until the end of the scope (then the previous one again).
class DefaultRegistryScope {
  public:
    explicit DefaultRegistryScope(Registry* registry) : previous_(&get_default_registry()) {
        if (registry) set_default_registry(*registry);
    }
    ~DefaultRegistryScope() { set_default_registry(*previous_); }
    DefaultRegistryScope(const DefaultRegistryScope&) = delete;
    DefaultRegistryScope& operator=(const DefaultRegistryScope&) = delete;

  private:
    Registry* previous_;
};

}  // namespace

RunOptions run_options_of(const RunCommandOptions& command) {
    RunOptions options;
    options.namespaces = command.namespaces;
    options.clusterwide = command.all_namespaces;
    options.standalone = command.standalone;
    if (!command.peering.empty()) options.peering_name = command.peering;
    if (command.priority) options.priority = command.priority;
    if (command.dev) options.priority = 666;  // as Kopf: --dev wins over --priority
    if (!command.lease.empty()) options.lease = command.lease;
    if (!command.lease_namespace.empty()) options.lease_namespace = command.lease_namespace;
    if (!command.liveness.empty()) options.liveness_endpoint = command.liveness;
    if (!command.metrics.empty()) options.metrics_endpoint = command.metrics;
    if (!command.context.empty()) options.context = command.context;
    return options;
}

int run_command(const RunCommandOptions& command, const RunControls* controls) {
    LoggingOptions logging;
    try {
        logging.format = parse_log_format(command.log_format);
    } catch (const std::invalid_argument& error) {
        print_error(error.what());
        return 2;
    }
    if (command.log_prefix != 0) logging.prefix = command.log_prefix > 0;
    if (!command.log_refkey.empty()) logging.refkey = command.log_refkey;
    logging.verbose = command.verbose;
    logging.debug = command.debug;
    logging.quiet = command.quiet;
    configure_logging(logging);

    if (!command.modules.empty()) {
        print_error(fmt::format(
            "-m/--module '{}' imports Python modules in Kopf; Kopf++ has no modules to import. "
            "Pass the operator's C++ files (compiled on the fly) or shared objects as arguments "
            "instead: kopf run operator.cpp, kopf run liboperator.so.",
            command.modules.front()));
        return 2;
    }
    try {
        // Compiling only: no scope is served, so none is needed (nor warned about).
        if (!command.compile_only) {
            NamespaceScope::from_options(command.all_namespaces, command.namespaces);
        }
    } catch (const std::invalid_argument& error) {
        print_error(error.what());
        return 2;
    }

    const DefaultRegistryScope registry_scope(controls ? controls->registry : nullptr);
    const std::size_t handlers_before = count_registered_handlers();
    for (const auto& path : command.paths) {
        const std::size_t before = count_registered_handlers();
        try {
            load_operator_files({path});
        } catch (const PluginError& error) {
            print_error(error.what());
            return 1;
        }
        if (count_registered_handlers() == before) {
            print_error(fmt::format(
                "'{}' registers no handlers: nothing would be served. Declare handlers at "
                "namespace scope in it (e.g. KOPF_ON_CREATE(create_fn, \"kopfexamples\")) so that "
                "they register when it is loaded.",
                path));
            return 1;
        }
        if (command.compile_only) {
            std::printf("%s: compiled and loaded; it registers %zu handler(s).\n", path.c_str(),
                        count_registered_handlers() - before);
        }
    }
    if (command.compile_only) {
        if (command.paths.empty()) {
            print_error(
                "--compile-only needs the operator's C++ files (or shared objects) to check.");
            return 2;
        }
        return 0;
    }
    if (count_registered_handlers() == 0 && handlers_before == 0) {
        print_error(
            "No handlers are registered: nothing would be served. Pass the operator's code: "
            "kopf run operator.cpp (compiled on the fly) or kopf run liboperator.so.");
        return 1;
    }

    if (controls) {
        RunOptions options = run_options_of(command);
        options.registry = &get_default_registry();
        options.settings = controls->settings;
        options.stop_flag = controls->stop_flag;
        options.ready_flag = controls->ready_flag;
        options.lifecycle = controls->lifecycle;
        options.vault = controls->vault;
        try {
            kopf::operator_(options);
        } catch (const std::exception& error) {
            logger("kopf.reactor.running")->critical("{}", error.what());
            throw;
        }
        return 0;
    }
    const int code = kopf::run(run_options_of(command));
    // Daemons abandoned on their threads ("Leaving it orphaned") must not run into the static
    // destructors of the process: end it without them, the logs flushed.
    if (engines::daemon_threads_running() > 0) {
        spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
        std::fflush(nullptr);
        std::_Exit(code);
    }
    return code;
}

int main(int argc, char** argv, const std::vector<ExtraCommand>& extra_commands,
         const RunControls* controls) {
    const RunControls* outer_controls = active_controls;
    active_controls = controls;
    struct Restore {
        const RunControls* previous;
        ~Restore() { active_controls = previous; }
    } restore{outer_controls};
    if (argc >= 2) {
        for (const auto& command : extra_commands) {
            if (command.name == argv[1]) return command.run(argc - 1, argv + 1);
        }
    }

    // An operator linked with kopf::main shows its own name ("Usage: my-operator ...").
    std::string program = "kopf";
    if (argc >= 1 && argv[0] && *argv[0]) {
        program = std::filesystem::path(argv[0]).filename().string();
    }
    CLI::App app{"Kopf++: Kubernetes operators in C++.", program};
    app.require_subcommand(0, 1);
    app.set_version_flag("--version", std::string("kopf++ ") + kopf::version());

    RunCommandOptions run;
    auto* run_app = app.add_subcommand("run", "Run the operator(s) in FILE.cpp or LIB.so.");
    run_app->add_option("paths", run.paths, "C++ files to compile and load, or shared objects")
        ->type_name("FILE.cpp|LIB.so");
    run_app
        ->add_option("-m,--module", run.modules,
                     "Not applicable in Kopf++ (Python modules); pass files instead")
        ->allow_extra_args(false);
    run_app
        ->add_option("-n,--namespace", run.namespaces,
                     "Serve namespaces matching this pattern (repeatable; globs, !exclusions)")
        ->allow_extra_args(false);
    run_app->add_flag("-A,--all-namespaces", run.all_namespaces, "Serve the whole cluster");
    run_app->add_flag("--standalone", run.standalone,
                      "No peering: do not pause for other operators");
    run_app
        ->add_option("-P,--peering", run.peering,
                     "The name of the peering object to use (makes the peering mandatory)")
        ->envname("KOPF_RUN_PEERING");
    run_app->add_option("-p,--priority", run.priority, "The priority in the peering (default 0)");
    run_app->add_flag("--dev", run.dev, "Development mode: --priority=666, whatever -p says");
    run_app->add_option("--lease", run.lease,
                        "Active/standby: compete for this Lease; only its holder handles objects");
    run_app->add_option("--lease-namespace", run.lease_namespace,
                        "The namespace of the --lease Lease (default: default)");
    run_app->add_option("-L,--liveness", run.liveness,
                        "Serve health probes at this endpoint, e.g. http://0.0.0.0:8080/healthz");
    run_app->add_option("--metrics", run.metrics,
                        "Serve Prometheus metrics at this endpoint, e.g. "
                        "http://0.0.0.0:9090/metrics, or at this path of the --liveness server, "
                        "e.g. /metrics");
    run_app->add_option("--context", run.context, "The kubeconfig context to use");
    run_app->add_option("--log-format", run.log_format, "full (default), plain or json")
        ->type_name("full|plain|json");
    run_app->add_flag("--log-prefix,!--no-log-prefix", run.log_prefix,
                      "Prefix object messages with [namespace/name]");
    run_app->add_option("--log-refkey", run.log_refkey,
                        "The JSON key of the object reference in JSON logs (default: object)");
    run_app->add_flag("-v,--verbose", run.verbose, "Show what Kopf++ is doing (debug messages)");
    run_app->add_flag("-d,--debug", run.debug, "Extremely verbose: also the API traffic");
    run_app->add_flag("-q,--quiet", run.quiet, "Only warnings and errors");
    run_app->add_flag("--compile-only", run.compile_only,
                      "Compile and load FILE.cpp / LIB.so, check they register handlers, and exit "
                      "(for CI and editors)");

    // Kopf's freeze/resume: an entry of a higher priority in the peering pauses its operators.
    PeeringCommandOptions freeze;
    auto* freeze_app =
        app.add_subcommand("freeze", "Pause the resource handling in the operator(s).");
    PeeringCommandOptions resume;
    resume.freeze = false;
    auto* resume_app =
        app.add_subcommand("resume", "Resume the resource handling in the operator(s).");
    for (auto [sub, opts] : {std::pair{freeze_app, &freeze}, std::pair{resume_app, &resume}}) {
        sub->add_option("-n,--namespace", opts->namespaces,
                        "The peerings in the namespaces matching this pattern (repeatable)")
            ->allow_extra_args(false);
        sub->add_flag("-A,--all-namespaces", opts->all_namespaces,
                      "The cluster-wide peering (the default without -n)");
        sub->add_option("-i,--id", opts->id, "The identity in the peering (default: user@host)");
        sub->add_option("-P,--peering", opts->peering, "The name of the peering object")
            ->required()
            ->envname(opts->freeze ? "KOPF_FREEZE_PEERING" : "KOPF_RESUME_PEERING");
        sub->add_flag("-v,--verbose", opts->verbose, "Show what Kopf++ is doing");
        sub->add_flag("-d,--debug", opts->debug, "Extremely verbose: also the API traffic");
        sub->add_flag("-q,--quiet", opts->quiet, "Only warnings and errors");
    }
    freeze_app->add_flag("--dev", freeze.dev, "Priority 666, whatever -p says");
    freeze_app->add_option("-p,--priority", freeze.priority, "The priority (default 100)");
    freeze_app->add_option("-t,--lifetime", freeze.lifetime, "For how many seconds to freeze")
        ->required();
    freeze_app->add_option("-m,--message", freeze.message, "Why (shown in the log line)");

    // Least-privilege RBAC for an operator, derived from its handlers and run options.
    RbacOptions rbac;
    std::vector<std::string> rbac_paths;
    auto* rbac_app = app.add_subcommand(
        "rbac", "Print the ServiceAccount, roles and bindings the operator(s) in FILE need.");
    rbac_app->add_option("paths", rbac_paths, "C++ files to compile and load, or shared objects")
        ->type_name("FILE.cpp|LIB.so");
    rbac_app
        ->add_option("-n,--namespace", rbac.namespaces,
                     "As for kopf run: the namespaces served (repeatable; globs, !exclusions)")
        ->allow_extra_args(false);
    rbac_app->add_flag("-A,--all-namespaces", rbac.all_namespaces,
                       "As for kopf run: the whole cluster");
    rbac_app
        ->add_option("--crd", rbac.crd_files,
                     "A YAML file with the operator's CustomResourceDefinitions, to resolve "
                     "the handlers' resources (repeatable)")
        ->allow_extra_args(false);
    rbac_app->add_flag("--standalone", rbac.standalone,
                       "As for kopf run: no peering, so no peering resources");
    rbac_app->add_option("--lease", rbac.lease, "As for kopf run: the Lease competed for");
    rbac_app->add_option("--lease-namespace", rbac.lease_namespace,
                         "The namespace of the --lease Lease (default: default)");
    rbac_app->add_option("--name", rbac.name, "The name of the ServiceAccount, roles and bindings")
        ->capture_default_str();
    rbac_app->add_option("--service-account-namespace", rbac.service_account_namespace,
                         "The ServiceAccount's namespace (default: the first -n, else default)");
    rbac_app
        ->add_option("--rule", rbac.extra_rules,
                     "A rule for the handlers' own API calls: GROUP/RESOURCE=VERB,VERB "
                     "(repeatable; core group: /configmaps=get)")
        ->allow_extra_args(false);

    app.add_subcommand("version", "Print the Kopf++ version.");
    // Listed for --help only: they are dispatched above, before parsing.
    for (const auto& command : extra_commands) {
        app.add_subcommand(command.name, command.description)->prefix_command();
    }

    // `./my-operator -A ...` is short for `./my-operator run -A ...`.
    std::vector<std::string> args;
    for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
    if (!args.empty()) {
        const std::string& first = args.back();
        const bool is_option = !first.empty() && first[0] == '-';
        if (is_option && first != "--help" && first != "-h" && first != "--version") {
            args.push_back("run");
        }
    }
    try {
        app.parse(std::move(args));
    } catch (const CLI::ParseError& error) {
        if (controls && controls->print) {
            std::ostringstream out;
            const int code = app.exit(error, out, out);
            controls->print(out.str());
            return code;
        }
        return app.exit(error);
    }
    if (app.got_subcommand("version")) {
        std::printf("kopf++ %s\n", kopf::version());
        return 0;
    }
    if (app.got_subcommand(run_app)) return run_command(run, controls);
    if (app.got_subcommand(freeze_app)) return peering_command(freeze);
    if (app.got_subcommand(rbac_app)) return rbac_command(rbac_paths, rbac);
    if (app.got_subcommand(resume_app)) return peering_command(resume);
    std::fputs(app.help().c_str(), stderr);
    return 2;
}

std::size_t count_registered_handlers() {
    const Registry& registry = Registry::default_registry();
    return registry.changing.size() + registry.watching.size() + registry.spawning.size() +
           registry.activities.size();
}

}  // namespace kopf::runtime

namespace kopf {

int main(int argc, char** argv) {
    return runtime::main(argc, argv);
}

}  // namespace kopf
