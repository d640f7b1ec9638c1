// The `kopf` command: dispatches to its subcommands.
#include <cstdio>
#include <cstring>
#include <string>

#include "kopf/apiserver/server.hpp"
#include "kopf/version.hpp"

namespace {

int usage(std::FILE* out) {
    std::fputs(
        "Usage: kopf COMMAND [ARGS]...\n\n"
        "Commands:\n"
        "  apiserver  Run the embedded Kubernetes-compatible API server.\n"
        "  version    Print the Kopf++ version.\n",
        out);
    return out == stdout ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage(stderr);
    const std::string command = argv[1];
    if (command == "--help" || command == "-h") return usage(stdout);
    if (command == "version" || command == "--version") {
        std::printf("kopf++ %s\n", kopf::version());
        return 0;
    }
    if (command == "apiserver") return kopf::apiserver::apiserver_command(argc - 1, argv + 1);
    std::fprintf(stderr, "kopf: unknown command '%s'.\n\n", command.c_str());
    return usage(stderr);
}
