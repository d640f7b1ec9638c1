#include "util/cel.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <regex>
#include <set>
#include <utility>
#include <vector>

namespace kopf::apiserver::cel {

using json = nlohmann::json;

enum class Kind {
    Literal,
    Ident,
    Select,
    Index,
    Call,
    List,
    Map,
    Unary,
    Binary,
    Ternary,
    Has,
    Comprehension
};

struct Node {
    Kind kind = Kind::Literal;
    json value;               // Literal
    std::string name;         // Ident, Select field, Call function, operator, macro, iteration var
    bool has_target = false;  // Call: args[0] is the receiver
    std::vector<std::unique_ptr<Node>> args;
};

namespace {

// ------------------------------------------------------------------ lexer

enum class Tok { End, Ident, Int, Double, String, Punct };

struct Token {
    Tok type = Tok::End;
    std::string text;  // identifier, punctuation, or decoded string
    json value;        // numbers
    std::size_t pos = 0;
};

bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class Lexer {
  public:
    explicit Lexer(const std::string& text) : s_(text) {}

    std::vector<Token> run() {
        std::vector<Token> out;
        while (true) {
            skip_space();
            Token t;
            t.pos = i_;
            if (i_ >= s_.size()) {
                out.push_back(t);
                return out;
            }
            char c = s_[i_];
            if ((c == 'r' || c == 'R') && i_ + 1 < s_.size() &&
                (s_[i_ + 1] == '"' || s_[i_ + 1] == '\'')) {
                ++i_;
                t.type = Tok::String;
                t.text = string_literal(true);
            } else if ((c == 'b' || c == 'B') && i_ + 1 < s_.size() &&
                       (s_[i_ + 1] == '"' || s_[i_ + 1] == '\'')) {
                fail("bytes literals are outside the supported CEL subset", i_);
            } else if (ident_start(c)) {
                std::size_t start = i_;
                while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
                t.type = Tok::Ident;
                t.text = s_.substr(start, i_ - start);
            } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                       (c == '.' && i_ + 1 < s_.size() &&
                        std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
                number(t);
            } else if (c == '"' || c == '\'') {
                t.type = Tok::String;
                t.text = string_literal(false);
            } else {
                static const char* two[] = {"<=", ">=", "==", "!=", "&&", "||", ".?"};
                t.type = Tok::Punct;
                for (const char* p : two)
                    if (s_.compare(i_, 2, p) == 0) t.text = p;
                if (t.text == ".?")
                    fail("optional field selection (.?) is outside the supported CEL subset", i_);
                if (t.text.empty()) {
                    if (std::string("()[]{}.,:?!-+*/%<>").find(c) == std::string::npos)
                        fail(std::string("unexpected character '") + c + "'", i_);
                    t.text = std::string(1, c);
                }
                i_ += t.text.size();
            }
            out.push_back(std::move(t));
        }
    }

    [[noreturn]] static void fail(const std::string& what, std::size_t pos) {
        throw CompileError(what + " at column " + std::to_string(pos + 1));
    }

  private:
    void skip_space() {
        while (i_ < s_.size()) {
            if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
                ++i_;
            } else if (s_.compare(i_, 2, "//") == 0) {
                while (i_ < s_.size() && s_[i_] != '\n') ++i_;
            } else {
                break;
            }
        }
    }

    void number(Token& t) {
        std::size_t start = i_;
        if (s_.compare(i_, 2, "0x") == 0 || s_.compare(i_, 2, "0X") == 0) {
            i_ += 2;
            while (i_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
            if (i_ < s_.size() && (s_[i_] == 'u' || s_[i_] == 'U'))
                fail("uint literals are outside the supported CEL subset", start);
            t.type = Tok::Int;
            t.value = static_cast<int64_t>(
                std::stoull(s_.substr(start + 2, i_ - start - 2), nullptr, 16));
            return;
        }
        bool is_double = false;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ + 1 < s_.size() && s_[i_] == '.' &&
            std::isdigit(static_cast<unsigned char>(s_[i_ + 1]))) {
            is_double = true;
            ++i_;
            while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            is_double = true;
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        }
        if (i_ < s_.size() && (s_[i_] == 'u' || s_[i_] == 'U'))
            fail("uint literals are outside the supported CEL subset", start);
        const std::string text = s_.substr(start, i_ - start);
        try {
            if (is_double) {
                t.type = Tok::Double;
                t.value = std::stod(text);
            } else {
                t.type = Tok::Int;
                t.value = static_cast<int64_t>(std::stoll(text));
            }
        } catch (const std::exception&) {
            fail("number literal out of range: " + text, start);
        }
    }

    std::string string_literal(bool raw) {
        const char quote = s_[i_];
        const std::size_t start = i_;
        if (s_.compare(i_, 3, std::string(3, quote)) == 0)
            fail("triple-quoted strings are outside the supported CEL subset", start);
        ++i_;
        std::string out;
        while (true) {
            if (i_ >= s_.size() || s_[i_] == '\n') fail("unterminated string", start);
            char c = s_[i_++];
            if (c == quote) return out;
            if (c != '\\' || raw) {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) fail("unterminated string", start);
            char e = s_[i_++];
            switch (e) {
                case 'n':
                    out += '\n';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '\'':
                    out += '\'';
                    break;
                case '"':
                    out += '"';
                    break;
                case '`':
                    out += '`';
                    break;
                case '?':
                    out += '?';
                    break;
                default:
                    fail(std::string("unsupported escape \\") + e, i_ - 2);
            }
        }
    }

    const std::string& s_;
    std::size_t i_ = 0;
};

// ------------------------------------------------------------------ parser

const std::set<std::string> kGlobalFunctions = {"size", "int", "double", "string"};
const std::set<std::string> kMethods = {"size",    "startsWith", "endsWith",  "contains",
                                        "matches", "lowerAscii", "upperAscii"};
const std::set<std::string> kMacros = {"all", "exists", "exists_one", "map", "filter"};

std::unique_ptr<Node> make(Kind kind, std::string name = "") {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->name = std::move(name);
    return n;
}

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    std::unique_ptr<Node> parse() {
        auto e = expr(0);
        if (peek().type != Tok::End) fail("unexpected '" + peek().text + "'");
        return e;
    }

  private:
    static constexpr int kMaxDepth = 100;

    const Token& peek() const { return t_[i_]; }
    bool is(const char* punct) const { return peek().type == Tok::Punct && peek().text == punct; }
    bool accept(const char* punct) {
        if (!is(punct)) return false;
        ++i_;
        return true;
    }
    void expect(const char* punct) {
        if (!accept(punct))
            fail(std::string("expected '") + punct + "'" +
                 (peek().type == Tok::End ? " at the end" : ", found '" + peek().text + "'"));
    }
    [[noreturn]] void fail(const std::string& what) const { Lexer::fail(what, peek().pos); }

    std::unique_ptr<Node> binary(std::string op, std::unique_ptr<Node> l, std::unique_ptr<Node> r) {
        auto n = make(Kind::Binary, std::move(op));
        n->args.push_back(std::move(l));
        n->args.push_back(std::move(r));
        return n;
    }

    std::unique_ptr<Node> expr(int depth) {
        if (depth > kMaxDepth) fail("the expression nests too deeply");
        auto cond = logical_or(depth);
        if (!accept("?")) return cond;
        auto n = make(Kind::Ternary);
        n->args.push_back(std::move(cond));
        n->args.push_back(logical_or(depth));
        expect(":");
        n->args.push_back(expr(depth + 1));
        return n;
    }
    std::unique_ptr<Node> logical_or(int depth) {
        auto l = logical_and(depth);
        while (accept("||")) l = binary("||", std::move(l), logical_and(depth));
        return l;
    }
    std::unique_ptr<Node> logical_and(int depth) {
        auto l = relation(depth);
        while (accept("&&")) l = binary("&&", std::move(l), relation(depth));
        return l;
    }
    std::unique_ptr<Node> relation(int depth) {
        auto l = addition(depth);
        while (true) {
            std::string op;
            for (const char* o : {"<=", ">=", "==", "!=", "<", ">"})
                if (is(o)) op = o;
            if (op.empty() && peek().type == Tok::Ident && peek().text == "in") op = "in";
            if (op.empty()) return l;
            ++i_;
            l = binary(op, std::move(l), addition(depth));
        }
    }
    std::unique_ptr<Node> addition(int depth) {
        auto l = multiplication(depth);
        while (is("+") || is("-")) {
            std::string op = t_[i_++].text;
            l = binary(op, std::move(l), multiplication(depth));
        }
        return l;
    }
    std::unique_ptr<Node> multiplication(int depth) {
        auto l = unary(depth);
        while (is("*") || is("/") || is("%")) {
            std::string op = t_[i_++].text;
            l = binary(op, std::move(l), unary(depth));
        }
        return l;
    }
    std::unique_ptr<Node> unary(int depth) {
        if (is("!") || is("-")) {
            if (depth > kMaxDepth) fail("the expression nests too deeply");
            std::string op = t_[i_++].text;
            // A negative literal is a literal (so -9223372036854775808 is not an overflow).
            if (op == "-" && peek().type == Tok::Int) {
                const Token& t = t_[i_++];
                auto n = make(Kind::Literal);
                n->value = -t.value.get<int64_t>();
                return member(std::move(n), depth);
            }
            auto n = make(Kind::Unary, op);
            n->args.push_back(unary(depth + 1));
            return n;
        }
        return member(primary(depth), depth);
    }

    std::vector<std::unique_ptr<Node>> arguments(int depth, const char* close) {
        std::vector<std::unique_ptr<Node>> out;
        if (accept(close)) return out;
        do {
            out.push_back(expr(depth + 1));
        } while (accept(","));
        expect(close);
        return out;
    }

    std::unique_ptr<Node> member(std::unique_ptr<Node> n, int depth) {
        while (true) {
            if (accept(".")) {
                if (peek().type != Tok::Ident) fail("expected a field name after '.'");
                const std::size_t at = peek().pos;
                std::string name = t_[i_++].text;
                if (accept("(")) {
                    auto args = arguments(depth, ")");
                    n = method(std::move(n), name, std::move(args), at);
                } else {
                    auto s = make(Kind::Select, name);
                    s->args.push_back(std::move(n));
                    n = std::move(s);
                }
            } else if (accept("[")) {
                auto idx = make(Kind::Index);
                idx->args.push_back(std::move(n));
                idx->args.push_back(expr(depth + 1));
                expect("]");
                n = std::move(idx);
            } else {
                return n;
            }
        }
    }

    std::unique_ptr<Node> method(std::unique_ptr<Node> target, const std::string& name,
                                 std::vector<std::unique_ptr<Node>> args, std::size_t at) {
        if (kMacros.contains(name)) {
            if (args.size() != 2)
                fail("the macro " + name + "() takes two arguments (a variable and an expression)" +
                     (name == "map" ? "; map() with a filter is outside the supported CEL subset"
                                    : ""));
            if (args[0]->kind != Kind::Ident)
                fail("the first argument of " + name + "() must be a variable name");
            auto n = make(Kind::Comprehension, name);
            n->value = args[0]->name;
            n->args.push_back(std::move(target));
            n->args.push_back(std::move(args[1]));
            return n;
        }
        if (!kMethods.contains(name)) unsupported_function(name, at);
        auto n = make(Kind::Call, name);
        n->has_target = true;
        n->args.push_back(std::move(target));
        for (auto& a : args) n->args.push_back(std::move(a));
        return n;
    }

    [[noreturn]] static void unsupported_function(const std::string& name, std::size_t at) {
        Lexer::fail("the function " + name + "() is outside the supported CEL subset", at);
    }

    std::unique_ptr<Node> primary(int depth) {
        if (depth > kMaxDepth) fail("the expression nests too deeply");
        const Token& t = peek();
        switch (t.type) {
            case Tok::Int:
            case Tok::Double: {
                auto n = make(Kind::Literal);
                n->value = t_[i_++].value;
                return n;
            }
            case Tok::String: {
                auto n = make(Kind::Literal);
                n->value = t_[i_++].text;
                return n;
            }
            case Tok::Ident: {
                const std::size_t at = t.pos;
                std::string name = t_[i_++].text;
                if (name == "true" || name == "false" || name == "null") {
                    auto n = make(Kind::Literal);
                    n->value = name == "null" ? json() : json(name == "true");
                    return n;
                }
                if (!accept("(")) return make(Kind::Ident, name);
                auto args = arguments(depth, ")");
                if (name == "has") {
                    if (args.size() != 1 || args[0]->kind != Kind::Select)
                        fail("has() takes one field selection, as in has(self.field)");
                    auto n = make(Kind::Has);
                    n->args.push_back(std::move(args[0]));
                    return n;
                }
                if (!kGlobalFunctions.contains(name)) unsupported_function(name, at);
                if (args.size() != 1) fail(name + "() takes one argument");
                auto n = make(Kind::Call, name);
                n->args = std::move(args);
                return n;
            }
            case Tok::Punct:
                if (accept("(")) {
                    auto e = expr(depth + 1);
                    expect(")");
                    return e;
                }
                if (accept("[")) {
                    auto n = make(Kind::List);
                    n->args = arguments(depth, "]");
                    return n;
                }
                if (accept("{")) {
                    auto n = make(Kind::Map);
                    if (!accept("}")) {
                        do {
                            n->args.push_back(expr(depth + 1));
                            expect(":");
                            n->args.push_back(expr(depth + 1));
                        } while (accept(","));
                        expect("}");
                    }
                    return n;
                }
                if (is("."))
                    fail(
                        "leading-dot (qualified) identifiers are outside the supported CEL subset");
                fail("unexpected '" + t.text + "'");
            case Tok::End:
                fail("unexpected end of the expression");
        }
        fail("unexpected token");
    }

    std::vector<Token> t_;
    std::size_t i_ = 0;
};

// Identifiers must be self, oldSelf or a macro's variable in scope.
void check_names(const Node& n, std::vector<std::string>& scope, bool& uses_old_self) {
    if (n.kind == Kind::Ident) {
        if (n.name == "oldSelf") uses_old_self = true;
        if (n.name != "self" && n.name != "oldSelf" &&
            std::find(scope.begin(), scope.end(), n.name) == scope.end())
            throw CompileError("undeclared reference to '" + n.name + "'");
        return;
    }
    if (n.kind == Kind::Comprehension) {
        check_names(*n.args[0], scope, uses_old_self);
        scope.push_back(n.value.get<std::string>());
        check_names(*n.args[1], scope, uses_old_self);
        scope.pop_back();
        return;
    }
    for (const auto& a : n.args) check_names(*a, scope, uses_old_self);
}

// ------------------------------------------------------------------ evaluation

std::string type_name(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null_type";
        case json::value_t::boolean:
            return "bool";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "int";
        case json::value_t::number_float:
            return "double";
        case json::value_t::string:
            return "string";
        case json::value_t::array:
            return "list";
        case json::value_t::object:
            return "map";
        default:
            return "unknown";
    }
}

[[noreturn]] void no_overload(const std::string& op, const json& a) {
    throw EvalError("no such overload: " + op + "(" + type_name(a) + ")");
}
[[noreturn]] void no_overload(const std::string& op, const json& a, const json& b) {
    throw EvalError("no such overload: " + type_name(a) + " " + op + " " + type_name(b));
}

bool is_int(const json& v) {
    return v.is_number_integer();  // nlohmann: includes unsigned
}

int64_t as_int(const json& v) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw EvalError("integer overflow");
        return static_cast<int64_t>(u);
    }
    return v.get<int64_t>();
}

bool equal(const json& a, const json& b) {
    if (a.is_number() && b.is_number()) {
        if (is_int(a) && is_int(b)) return as_int(a) == as_int(b);
        return a.get<double>() == b.get<double>();
    }
    if (a.type() != b.type()) return false;
    if (a.is_array()) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!equal(a[i], b[i])) return false;
        return true;
    }
    if (a.is_object()) {
        if (a.size() != b.size()) return false;
        for (const auto& [k, v] : a.items()) {
            auto it = b.find(k);
            if (it == b.end() || !equal(v, *it)) return false;
        }
        return true;
    }
    return a == b;
}

// -1, 0, 1; throws for values without an order.
int compare(const json& a, const json& b, const std::string& op) {
    if (a.is_number() && b.is_number()) {
        if (is_int(a) && is_int(b)) {
            const int64_t x = as_int(a), y = as_int(b);
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        const double x = a.get<double>(), y = b.get<double>();
        if (std::isnan(x) || std::isnan(y)) throw EvalError("NaN is not comparable");
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_boolean() && b.is_boolean())
        return static_cast<int>(a.get<bool>()) - static_cast<int>(b.get<bool>());
    no_overload(op, a, b);
}

json arithmetic(const std::string& op, const json& a, const json& b) {
    if (op == "+" && a.is_string() && b.is_string())
        return a.get<std::string>() + b.get<std::string>();
    if (op == "+" && a.is_array() && b.is_array()) {
        json out = a;
        for (const auto& v : b) out.push_back(v);
        return out;
    }
    if (!a.is_number() || !b.is_number()) no_overload(op, a, b);
    if (is_int(a) && is_int(b)) {
        const int64_t x = as_int(a), y = as_int(b);
        int64_t r = 0;
        bool overflow = false;
        if (op == "+" || op == "-" || op == "*") {
            overflow = op == "+"   ? __builtin_add_overflow(x, y, &r)
                       : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                   : __builtin_mul_overflow(x, y, &r);
            if (overflow) throw EvalError("integer overflow");
            return r;
        }
        if (y == 0) throw EvalError(op == "/" ? "division by zero" : "modulus by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1)
            throw EvalError("integer overflow");
        return op == "/" ? x / y : x % y;
    }
    if (op == "%") no_overload(op, a, b);
    const double x = a.get<double>(), y = b.get<double>();
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    return x / y;
}

std::size_t code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

struct Scope {
    const json* self = nullptr;
    const json* old_self = nullptr;
    std::vector<std::pair<std::string, const json*>> vars;

    const json& lookup(const std::string& name) const {
        for (auto it = vars.rbegin(); it != vars.rend(); ++it)
            if (it->first == name) return *it->second;
        if (name == "self") return *self;
        if (name == "oldSelf" && old_self) return *old_self;
        throw EvalError("no such attribute: " + name);
    }
};

json eval(const Node& n, Scope& scope);

const json& select(const json& target, const std::string& field) {
    if (!target.is_object())
        throw EvalError("no such overload: " + type_name(target) + "." + field);
    auto it = target.find(field);
    if (it == target.end()) throw EvalError("no such key: " + field);
    return *it;
}

bool truth(const json& v, const std::string& op) {
    if (!v.is_boolean()) no_overload(op, v);
    return v.get<bool>();
}

json call(const Node& n, Scope& scope) {
    std::vector<json> args;
    for (const auto& a : n.args) args.push_back(eval(*a, scope));
    const json& x = args[0];
    const std::string& f = n.name;
    if (f == "size") {
        if (args.size() != 1) throw EvalError("size() takes no arguments");
        if (x.is_string()) return static_cast<int64_t>(code_points(x.get<std::string>()));
        if (x.is_array() || x.is_object()) return static_cast<int64_t>(x.size());
        no_overload(f, x);
    }
    if (f == "int") {
        if (is_int(x)) return as_int(x);
        if (x.is_number_float()) {
            const double d = x.get<double>();
            if (!(d > -9.3e18 && d < 9.3e18)) throw EvalError("int() range error");
            return static_cast<int64_t>(d);
        }
        if (x.is_string()) {
            try {
                std::size_t used = 0;
                const std::string s = x.get<std::string>();
                const long long v = std::stoll(s, &used);
                if (used == s.size()) return static_cast<int64_t>(v);
            } catch (const std::exception&) {
            }
            throw EvalError("cannot convert " + x.dump() + " to int");
        }
        no_overload(f, x);
    }
    if (f == "double") {
        if (x.is_number()) return x.get<double>();
        if (x.is_string()) {
            try {
                std::size_t used = 0;
                const std::string s = x.get<std::string>();
                const double v = std::stod(s, &used);
                if (used == s.size()) return v;
            } catch (const std::exception&) {
            }
            throw EvalError("cannot convert " + x.dump() + " to double");
        }
        no_overload(f, x);
    }
    if (f == "string") {
        if (x.is_string()) return x;
        if (x.is_number() || x.is_boolean()) return x.dump();
        no_overload(f, x);
    }
    // String methods.
    if (!x.is_string()) no_overload(f, x);
    const std::string& s = x.get_ref<const std::string&>();
    if (f == "lowerAscii" || f == "upperAscii") {
        if (args.size() != 1) throw EvalError(f + "() takes no arguments");
        std::string out = s;
        for (char& c : out)
            c = static_cast<char>(f == "lowerAscii" ? std::tolower(static_cast<unsigned char>(c))
                                                    : std::toupper(static_cast<unsigned char>(c)));
        return out;
    }
    if (args.size() != 2 || !args[1].is_string())
        throw EvalError(f + "() takes one string argument");
    const std::string& a = args[1].get_ref<const std::string&>();
    if (f == "startsWith") return s.rfind(a, 0) == 0;
    if (f == "endsWith")
        return s.size() >= a.size() && s.compare(s.size() - a.size(), a.size(), a) == 0;
    if (f == "contains") return s.find(a) != std::string::npos;
    // matches: RE2 semantics approximated by ECMAScript; a match anywhere counts, as in CEL.
    try {
        return std::regex_search(s, std::regex(a, std::regex::ECMAScript));
    } catch (const std::regex_error& e) {
        throw EvalError("invalid regular expression " + json(a).dump() + ": " + e.what());
    }
}

json comprehension(const Node& n, Scope& scope) {
    const json range = eval(*n.args[0], scope);
    if (!range.is_array() && !range.is_object()) no_overload(n.name, range);
    std::vector<json> items;
    if (range.is_array())
        items.assign(range.begin(), range.end());
    else
        for (const auto& [k, v] : range.items()) items.emplace_back(k);
    const std::string var = n.value.get<std::string>();
    const std::string& macro = n.name;
    json out = json::array();
    int64_t count = 0;
    std::optional<EvalError> error;
    for (const auto& item : items) {
        scope.vars.emplace_back(var, &item);
        json result;
        try {
            result = eval(*n.args[1], scope);
        } catch (const EvalError& e) {
            scope.vars.pop_back();
            if (macro == "all" || macro == "exists") {
                if (!error) error = e;
                continue;
            }
            throw;
        }
        scope.vars.pop_back();
        if (macro == "map") {
            out.push_back(std::move(result));
            continue;
        }
        const bool b = truth(result, macro);
        if (macro == "all" && !b) return false;
        if (macro == "exists" && b) return true;
        if (macro == "exists_one" && b) ++count;
        if (macro == "filter" && b) out.push_back(item);
    }
    if (error) throw *error;
    if (macro == "all") return true;
    if (macro == "exists") return false;
    if (macro == "exists_one") return count == 1;
    return out;
}

json eval(const Node& n, Scope& scope) {
    switch (n.kind) {
        case Kind::Literal:
            return n.value;
        case Kind::Ident:
            return scope.lookup(n.name);
        case Kind::Select:
            return select(eval(*n.args[0], scope), n.name);
        case Kind::Has: {
            const Node& sel = *n.args[0];
            const json target = eval(*sel.args[0], scope);
            if (!target.is_object()) no_overload("has", target);
            return target.contains(sel.name);
        }
        case Kind::Index: {
            const json target = eval(*n.args[0], scope);
            const json key = eval(*n.args[1], scope);
            if (target.is_array()) {
                if (!key.is_number() ||
                    (key.is_number_float() && std::floor(key.get<double>()) != key.get<double>()))
                    no_overload("[]", target, key);
                // A double index beyond int64's range is out of bounds (converting it is not
                // defined).
                if (!is_int(key) && std::abs(key.get<double>()) >= 9.2e18)
                    throw EvalError("index out of bounds: " + key.dump());
                const int64_t i =
                    is_int(key) ? as_int(key) : static_cast<int64_t>(key.get<double>());
                if (i < 0 || i >= static_cast<int64_t>(target.size()))
                    throw EvalError("index out of bounds: " + std::to_string(i));
                return target[static_cast<std::size_t>(i)];
            }
            if (target.is_object()) {
                if (!key.is_string()) no_overload("[]", target, key);
                return select(target, key.get<std::string>());
            }
            no_overload("[]", target, key);
        }
        case Kind::Call:
            return call(n, scope);
        case Kind::List: {
            json out = json::array();
            for (const auto& a : n.args) out.push_back(eval(*a, scope));
            return out;
        }
        case Kind::Map: {
            json out = json::object();
            for (std::size_t i = 0; i + 1 < n.args.size(); i += 2) {
                const json key = eval(*n.args[i], scope);
                if (!key.is_string())
                    throw EvalError(
                        "map keys other than strings are outside the supported CEL subset");
                const std::string k = key.get<std::string>();
                if (out.contains(k)) throw EvalError("duplicate map key: " + k);
                out[k] = eval(*n.args[i + 1], scope);
            }
            return out;
        }
        case Kind::Unary: {
            const json v = eval(*n.args[0], scope);
            if (n.name == "!") return !truth(v, "!");
            if (is_int(v)) {
                const int64_t x = as_int(v);
                if (x == std::numeric_limits<int64_t>::min()) throw EvalError("integer overflow");
                return -x;
            }
            if (v.is_number_float()) return -v.get<double>();
            no_overload("-", v);
        }
        case Kind::Ternary:
            return truth(eval(*n.args[0], scope), "?:") ? eval(*n.args[1], scope)
                                                        : eval(*n.args[2], scope);
        case Kind::Comprehension:
            return comprehension(n, scope);
        case Kind::Binary: {
            const std::string& op = n.name;
            if (op == "&&" || op == "||") {
                // CEL's commutative logic: a decisive side wins over an error on the other.
                const bool decisive = op == "||";
                std::optional<EvalError> error;
                std::optional<bool> left;
                try {
                    left = truth(eval(*n.args[0], scope), op);
                    if (*left == decisive) return decisive;
                } catch (const EvalError& e) {
                    error = e;
                }
                const bool right = truth(eval(*n.args[1], scope), op);
                if (right == decisive) return decisive;
                if (error) throw *error;
                return !decisive;
            }
            const json a = eval(*n.args[0], scope);
            const json b = eval(*n.args[1], scope);
            if (op == "==") return equal(a, b);
            if (op == "!=") return !equal(a, b);
            if (op == "<") return compare(a, b, op) < 0;
            if (op == "<=") return compare(a, b, op) <= 0;
            if (op == ">") return compare(a, b, op) > 0;
            if (op == ">=") return compare(a, b, op) >= 0;
            if (op == "in") {
                if (b.is_array())
                    return std::any_of(b.begin(), b.end(),
                                       [&](const json& v) { return equal(a, v); });
                if (b.is_object()) {
                    if (!a.is_string()) no_overload(op, a, b);
                    return b.contains(a.get<std::string>());
                }
                no_overload(op, a, b);
            }
            return arithmetic(op, a, b);
        }
    }
    throw EvalError("unknown expression");
}

}  // namespace

Program::Program(const std::string& expression) {
    root_ = Parser(Lexer(expression).run()).parse();
    std::vector<std::string> scope;
    check_names(*root_, scope, uses_old_self_);
}

Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

json Program::evaluate(const json& self, const json* old_self) const {
    Scope scope;
    scope.self = &self;
    scope.old_self = old_self;
    return eval(*root_, scope);
}

}  // namespace kopf::apiserver::cel
