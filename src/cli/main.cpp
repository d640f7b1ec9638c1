// The `kopf` command: the operator command line that kopf::main() also gives to operators
// linked as their own binaries (`run`, `version`), plus `kopf apiserver`, the embedded API
// server, which only this binary carries.
#include "cli/command_line.hpp"
#include "kopf/apiserver/server.hpp"

int main(int argc, char** argv) {
    return kopf::runtime::main(
        argc, argv,
        {{"apiserver",
          "Run the embedded Kubernetes API server (for development and tests; see "
          "`kopf apiserver --help`).",
          &kopf::apiserver::apiserver_command}});
}
