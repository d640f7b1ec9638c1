// The `kopf` command line for operators linked as their own binaries:
//
//     #include <kopf/kopf.hpp>
//     #include <kopf/main.hpp>
//     ... handlers ...
//     int main(int argc, char** argv) { return kopf::main(argc, argv); }
//
// `./my-operator run -n default -v` then behaves as `kopf run -n default -v` with this
// binary's handlers (plus any FILE.cpp / LIB.so given as arguments); `./my-operator -A` is
// short for `./my-operator run -A`; `./my-operator version` prints the Kopf++ version.
#pragma once

namespace kopf {

/// Parses the command line, runs the command, and returns the process exit code.
int main(int argc, char** argv);

}  // namespace kopf
