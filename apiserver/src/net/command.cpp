// `kopf apiserver`: runs the embedded API server until SIGINT/SIGTERM.
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "kopf/apiserver/server.hpp"

namespace kopf::apiserver {

int apiserver_command(int argc, char** argv) {
    ServerOptions options;
    long long bookmark_seconds = options.bookmark_interval.count() / 1000;
    CLI::App app{"Run the embedded Kubernetes-compatible API server.", "kopf apiserver"};
    app.add_option("--bind-address", options.bind_address, "Address to listen on")
        ->capture_default_str();
    app.add_option("--port", options.port, "Port to listen on; 0 picks a free port")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    app.add_flag("--tls", options.tls,
                 "Serve HTTPS with a generated CA and serving certificate (unless "
                 "--tls-cert-file is given)");
    app.add_option("--tls-cert-file", options.tls_cert_file,
                   "PEM serving certificate (chain); implies --tls")
        ->check(CLI::ExistingFile);
    app.add_option("--tls-private-key-file", options.tls_private_key_file,
                   "PEM private key of --tls-cert-file")
        ->check(CLI::ExistingFile);
    app.add_option("--client-ca-file", options.client_ca_file,
                   "Accept client certificates signed by this PEM CA (TLS mode)")
        ->check(CLI::ExistingFile);
    app.add_option("--token-auth-file", options.token_auth_file,
                   "Static bearer tokens, CSV: token,user,uid,\"group1,group2\"")
        ->check(CLI::ExistingFile);
    app.add_option("--authorization-mode", options.authorization_mode,
                   "AlwaysAllow, or RBAC: Roles, ClusterRoles and their bindings decide what "
                   "each user may do (the admin token may do everything)")
        ->check(CLI::IsMember({"AlwaysAllow", "RBAC"}))
        ->capture_default_str();
    app.add_option("--kubeconfig-out", options.kubeconfig_out,
                   "Write a kubeconfig for this server to this path");
    app.add_option("--data-dir", options.data_dir,
                   "Persist objects here (SQLite); without it, state is in memory");
    app.add_option("--max-requests-inflight", options.max_requests_inflight,
                   "Concurrent non-watch requests beyond which clients get 429")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--bookmark-interval", bookmark_seconds,
                   "Seconds between BOOKMARK events on watches that allow them")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (!options.tls_cert_file.empty()) options.tls = true;
    options.bookmark_interval = std::chrono::seconds(bookmark_seconds);
    options.admin_endpoint = true;

    // Block the stop signals before any server thread starts so that only sigwait() sees them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    Server server(options);
    try {
        server.start();
    } catch (const std::exception& e) {
        std::cerr << "kopf apiserver: " << e.what() << std::endl;
        return 1;
    }
    std::cout << "kopf apiserver: serving on " << server.url();
    if (!options.kubeconfig_out.empty()) {
        std::cout << " (kubeconfig: " << options.kubeconfig_out.string() << ")";
    }
    if (!options.data_dir.empty()) std::cout << " (data: " << options.data_dir.string() << ")";
    std::cout << std::endl;

    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    std::cout << "kopf apiserver: stopping (" << (signal_number == SIGINT ? "SIGINT" : "SIGTERM")
              << ")" << std::endl;
    server.stop();
    return 0;
}

}  // namespace kopf::apiserver
