// A subset of the Common Expression Language (CEL) for the `x-kubernetes-validations` rules of
// CRDs: what rules seen in practice use, evaluated over JSON values.
//
// Supported: literals (int, double, string with escapes and r"raw" strings, true, false,
// null), lists [a, b] and maps {k: v}; `self` and `oldSelf`; field selection a.b, indexing
// a[i] / m['k']; ! - * / % + - < <= > >= == != in && || ?:; has(a.b); size(); the string
// methods startsWith, endsWith, contains, matches (ECMAScript regular expressions standing
// in for RE2's), lowerAscii, upperAscii; the macros all, exists, exists_one, map (two
// arguments) and filter; the conversions int(), double(), string().
//
// Anything else — other functions and Kubernetes' CEL libraries (quantity, url, format,
// isSorted, ...), uint and bytes literals, optional syntax (a.?b) — is refused when the rule is
// compiled, naming the construct, so a CRD is refused instead of having its rules silently
// ignored.
//
// Values are JSON: integers are CEL ints, other numbers doubles. Unlike CEL, int and double
// operands may be mixed in arithmetic (JSON does not keep a number's type), and comparisons
// across them are numeric, as Kubernetes' CEL allows.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace kopf::apiserver::cel {

// A rule that cannot be compiled: a syntax error, an undeclared identifier, or a construct
// outside the subset. The message names the construct and its position.
struct CompileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An evaluation that fails (no such key, no such overload, division by zero, ...).
struct EvalError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Node;

class Program {
  public:
    explicit Program(const std::string& expression);  // throws CompileError
    ~Program();
    Program(Program&&) noexcept;
    Program& operator=(Program&&) noexcept;

    bool uses_old_self() const { return uses_old_self_; }
    // `old_self` may be null when the rule does not use oldSelf. Throws EvalError.
    nlohmann::json evaluate(const nlohmann::json& self, const nlohmann::json* old_self) const;

  private:
    std::unique_ptr<Node> root_;
    bool uses_old_self_ = false;
};

}  // namespace kopf::apiserver::cel
