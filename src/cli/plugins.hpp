// Loading operator code for `kopf run FILE.cpp | LIB.so ...`: a C++ source file is compiled
// with the system compiler against the Kopf++ headers into a shared object (cached by content
// hash under ~/.cache/kopf/plugins/), then loaded; its namespace-scope registrations run on
// loading and land in the default registry.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace kopf::runtime {

// A one-paragraph explanation of why operator code could not be compiled or loaded.
class PluginError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct PluginCompiler {
    std::string compiler;             // "" : $CXX, else "c++"
    std::vector<std::string> flags;   // "" : -std=c++20 -O0 -g (plus $KOPF_PLUGIN_CXXFLAGS)
    std::filesystem::path cache_dir;  // "" : $KOPF_CACHE_DIR, $XDG_CACHE_HOME/kopf or ~/.cache/kopf
    bool quiet = false;               // do not log "Compiling ..." lines
};

// The directory holding kopf/kopf.hpp that operator code is compiled against: $KOPF_INCLUDE_DIR,
// else the installed headers next to the loaded libkopf, else the source tree of the build tree
// that libkopf was built in. Throws PluginError when none is found.
std::filesystem::path kopf_include_dir();

// Compiles `source` unless an up-to-date cached object exists; returns the shared object's path.
// The compiler's messages go to stderr as it prints them; failure throws PluginError.
std::filesystem::path compile_plugin(const std::filesystem::path& source,
                                     const PluginCompiler& options = {});

// dlopen()s a shared object (RTLD_NOW | RTLD_GLOBAL); throws PluginError with dlerror()'s text.
// Loaded objects stay loaded for the life of the process (their handlers are registered).
void load_shared_object(const std::filesystem::path& path);

// Loads each path: `.cpp`/`.cc`/`.cxx` files are compiled first, `.so` files loaded as is.
void load_operator_files(const std::vector<std::string>& paths, const PluginCompiler& options = {});

}  // namespace kopf::runtime
