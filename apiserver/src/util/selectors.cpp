// Label selectors follow apimachinery pkg/labels/selector.go token by token, so that
// both the accepted language and the error texts are the same; field selectors follow
// pkg/fields/selector.go plus the per-kind field label conversions of the registries.
#include "util/selectors.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>

#include "util/go_format.hpp"
#include "util/validation.hpp"

namespace kopf::apiserver {

namespace {

// ---------------------------------------------------------------- label selector lexer

enum class Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
};

bool token_for(std::string_view text, Token& token) {
    static const std::map<std::string_view, Token> tokens = {
        {")", Token::ClosedPar},     {",", Token::Comma},    {"!", Token::DoesNotExist},
        {"==", Token::DoubleEquals}, {"=", Token::Equals},   {">", Token::GreaterThan},
        {"in", Token::In},           {"<", Token::LessThan}, {"!=", Token::NotEquals},
        {"notin", Token::NotIn},     {"(", Token::OpenPar},
    };
    auto it = tokens.find(text);
    if (it == tokens.end()) return false;
    token = it->second;
    return true;
}

bool is_whitespace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool is_special_symbol(char c) {
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

struct ScannedItem {
    Token token;
    std::string literal;
};

// Byte-for-byte port of the upstream lexer, including its treatment of NUL as the end.
class Lexer {
  public:
    explicit Lexer(std::string_view text) : text_(text) {}

    ScannedItem lex() {
        char c = read();
        while (is_whitespace(c)) c = read();
        if (c == 0) return {Token::EndOfString, ""};
        unread();
        return is_special_symbol(c) ? scan_special_symbol() : scan_identifier_or_keyword();
    }

  private:
    char read() {
        if (position_ < text_.size()) return text_[position_++];
        ++past_end_;
        return 0;
    }
    void unread() {
        if (past_end_ > 0) {
            --past_end_;
        } else {
            --position_;
        }
    }

    ScannedItem scan_identifier_or_keyword() {
        std::string buffer;
        while (true) {
            const char c = read();
            if (c == 0) break;
            if (is_special_symbol(c) || is_whitespace(c)) {
                unread();
                break;
            }
            buffer.push_back(c);
        }
        Token token;
        if (token_for(buffer, token)) return {token, buffer};
        return {Token::Identifier, buffer};
    }

    ScannedItem scan_special_symbol() {
        std::string buffer;
        ScannedItem last{Token::Error, ""};
        bool have_last = false;
        while (true) {
            const char c = read();
            if (c == 0) break;
            if (!is_special_symbol(c)) {
                unread();
                break;
            }
            buffer.push_back(c);
            Token token;
            if (token_for(buffer, token)) {
                last = {token, buffer};
                have_last = true;
            } else if (have_last) {
                unread();
                break;
            }
        }
        if (!have_last) return {Token::Error, "error expected: keyword found '" + buffer + "'"};
        return last;
    }

    std::string_view text_;
    std::size_t position_ = 0;
    std::size_t past_end_ = 0;
};

enum class Context { KeyAndOperator, Values };

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out += separator;
        out += parts[i];
    }
    return out;
}

bool parse_int64(std::string_view text, std::int64_t& out) {
    if (text.empty()) return false;
    std::string_view digits = text;
    if (digits.front() == '+') digits.remove_prefix(1);  // Go's ParseInt accepts a sign
    if (digits.empty() || digits.front() == '+') return false;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return error == std::errc() && end == digits.data() + digits.size();
}

// apimachinery's NewRequirement checks: an aggregate of field errors, "" when valid.
std::string requirement_errors(const std::string& key, const std::string& op,
                               const std::vector<std::string>& values) {
    std::vector<std::string> errors;
    if (auto messages = validate_qualified_name(key); !messages.empty()) {
        errors.push_back("key: Invalid value: " + go_quote(key) + ": " + join(messages, "; "));
    }
    const auto values_json = [&] { return nlohmann::json(values).dump(); };
    if (op == "in" || op == "notin") {
        if (values.empty()) {
            errors.push_back("values: Invalid value: " + values_json() +
                             ": for 'in', 'notin' operators, values set can't be empty");
        }
    } else if (op == "=" || op == "==" || op == "!=") {
        if (values.size() != 1) {
            errors.push_back("values: Invalid value: " + values_json() +
                             ": exact-match compatibility requires one single value");
        }
    } else if (op == "exists" || op == "!") {
        if (!values.empty()) {
            errors.push_back("values: Invalid value: " + values_json() +
                             ": values set must be empty for exists and does not exist");
        }
    } else if (op == "gt" || op == "lt") {
        if (values.size() != 1) {
            errors.push_back("values: Invalid value: " + values_json() +
                             ": for 'Gt', 'Lt' operators, exactly one value is required");
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
            std::int64_t ignored;
            if (!parse_int64(values[i], ignored)) {
                errors.push_back("values[" + std::to_string(i) +
                                 "]: Invalid value: " + go_quote(values[i]) +
                                 ": for 'Gt', 'Lt' operators, the value must be an integer");
            }
        }
    } else {
        errors.push_back("operator: Unsupported value: " + go_quote(op) +
                         ": supported values: \"in\", \"notin\", \"=\", \"==\", \"!=\", \"gt\", "
                         "\"lt\", \"exists\", \"!\"");
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (auto messages = validate_label_value(values[i]); !messages.empty()) {
            errors.push_back("values[" + std::to_string(i) + "][" + key + "]: Invalid value: " +
                             go_quote(values[i]) + ": " + join(messages, "; "));
        }
    }
    if (errors.empty()) return "";
    if (errors.size() == 1) return errors[0];
    // Aggregate: de-duplicated, bracketed.
    std::vector<std::string> unique;
    for (auto& error : errors) {
        if (std::find(unique.begin(), unique.end(), error) == unique.end()) unique.push_back(error);
    }
    if (unique.size() == 1) return unique[0];
    return "[" + join(unique, ", ") + "]";
}

class Parser {
  public:
    explicit Parser(std::string_view text) {
        Lexer lexer(text);
        while (true) {
            items_.push_back(lexer.lex());
            if (items_.back().token == Token::EndOfString) break;
        }
    }

    std::vector<LabelSelector::Requirement> parse() {
        std::vector<LabelSelector::Requirement> requirements;
        while (true) {
            auto [token, literal] = lookahead(Context::Values);
            if (token == Token::Identifier || token == Token::DoesNotExist) {
                requirements.push_back(parse_requirement_wrapped());
                auto [next, next_literal] = consume(Context::Values);
                if (next == Token::EndOfString) return requirements;
                if (next == Token::Comma) {
                    auto [after, after_literal] = lookahead(Context::Values);
                    if (after != Token::Identifier && after != Token::DoesNotExist) {
                        throw SelectorError("found '" + after_literal +
                                            "', expected: identifier after ','");
                    }
                    continue;
                }
                throw SelectorError("found '" + next_literal +
                                    "', expected: ',' or 'end of string'");
            }
            if (token == Token::EndOfString) return requirements;
            throw SelectorError("found '" + literal +
                                "', expected: !, identifier, or 'end of string'");
        }
    }

  private:
    struct RequirementError : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    LabelSelector::Requirement parse_requirement_wrapped() {
        try {
            return parse_requirement();
        } catch (const RequirementError& error) {
            throw SelectorError(std::string("unable to parse requirement: ") + error.what());
        }
    }

    std::pair<Token, std::string> lookahead(Context context) const {
        const auto& item = items_[std::min(position_, items_.size() - 1)];
        return {adjust(item.token, context), item.literal};
    }

    std::pair<Token, std::string> consume(Context context) {
        const auto& item = items_[std::min(position_, items_.size() - 1)];
        ++position_;
        return {adjust(item.token, context), item.literal};
    }

    static Token adjust(Token token, Context context) {
        if (context == Context::Values && (token == Token::In || token == Token::NotIn)) {
            return Token::Identifier;
        }
        return token;
    }

    LabelSelector::Requirement parse_requirement() {
        // Key and, if nothing follows, the inferred exists / does-not-exist operator.
        std::string op;
        auto [token, literal] = consume(Context::Values);
        if (token == Token::DoesNotExist) {
            op = "!";
            std::tie(token, literal) = consume(Context::Values);
        }
        if (token != Token::Identifier) {
            throw RequirementError("found '" + literal + "', expected: identifier");
        }
        const std::string key = literal;
        if (auto messages = validate_qualified_name(key); !messages.empty()) {
            throw RequirementError("<nil>: Invalid value: " + go_quote(key) + ": " +
                                   join(messages, "; "));
        }
        auto next = lookahead(Context::Values).first;
        if (next == Token::EndOfString || next == Token::Comma) {
            if (op != "!") op = "exists";
        }
        if (op == "exists" || op == "!") return make_requirement(key, op, {});

        op = parse_operator();
        std::set<std::string> values;
        if (op == "in" || op == "notin") {
            values = parse_values();
        } else {
            values = parse_exact_value();
        }
        return make_requirement(key, op, {values.begin(), values.end()});
    }

    static LabelSelector::Requirement make_requirement(const std::string& key,
                                                       const std::string& op,
                                                       std::vector<std::string> values) {
        if (auto error = requirement_errors(key, op, values); !error.empty()) {
            throw RequirementError(error);
        }
        return {key, op, std::move(values)};
    }

    std::string parse_operator() {
        auto [token, literal] = consume(Context::KeyAndOperator);
        switch (token) {
            case Token::In:
                return "in";
            case Token::Equals:
                return "=";
            case Token::DoubleEquals:
                return "==";
            case Token::GreaterThan:
                return "gt";
            case Token::LessThan:
                return "lt";
            case Token::NotIn:
                return "notin";
            case Token::NotEquals:
                return "!=";
            default:
                throw RequirementError("found '" + literal +
                                       "', expected: in, notin, =, ==, !=, gt, lt");
        }
    }

    std::set<std::string> parse_values() {
        auto [token, literal] = consume(Context::Values);
        if (token != Token::OpenPar) {
            throw RequirementError("found '" + literal + "' expected: '('");
        }
        std::tie(token, literal) = lookahead(Context::Values);
        if (token == Token::Identifier || token == Token::Comma) {
            auto values = parse_identifiers_list();
            if (consume(Context::Values).first != Token::ClosedPar) {
                throw RequirementError("found '" + literal + "', expected: ')'");
            }
            return values;
        }
        if (token == Token::ClosedPar) {
            consume(Context::Values);
            return {""};
        }
        throw RequirementError("found '" + literal + "', expected: ',', ')' or identifier");
    }

    std::set<std::string> parse_identifiers_list() {
        std::set<std::string> values;
        while (true) {
            auto [token, literal] = consume(Context::Values);
            if (token == Token::Identifier) {
                values.insert(literal);
                auto [next, next_literal] = lookahead(Context::Values);
                if (next == Token::Comma) continue;
                if (next == Token::ClosedPar) return values;
                throw RequirementError("found '" + next_literal + "', expected: ',' or ')'");
            }
            if (token == Token::Comma) {
                if (values.empty()) values.insert("");  // "(,"
                auto next = lookahead(Context::Values).first;
                if (next == Token::ClosedPar) {
                    values.insert("");  // ",)"
                    return values;
                }
                if (next == Token::Comma) values.insert("");  // ",,"
                continue;
            }
            throw RequirementError("found '" + literal + "', expected: ',', or identifier");
        }
    }

    std::set<std::string> parse_exact_value() {
        auto next = lookahead(Context::Values).first;
        if (next == Token::EndOfString || next == Token::Comma) return {""};
        auto [token, literal] = consume(Context::Values);
        if (token == Token::Identifier) return {literal};
        throw RequirementError("found '" + literal + "', expected: identifier");
    }

    std::vector<ScannedItem> items_;
    std::size_t position_ = 0;
};

// ---------------------------------------------------------------- field selectors

const std::set<std::string> kBuiltinGroups = {
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
};

// Field labels of built-in kinds with their own conversion function; null when the kind
// uses the default (metadata.name and metadata.namespace only).
const std::set<std::string>* builtin_field_labels(const std::string& group,
                                                  const std::string& kind) {
    static const std::map<std::pair<std::string, std::string>, std::set<std::string>> labels = {
        {{"", "Pod"},
         {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
          "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
          "status.podIP", "status.podIPs", "status.nominatedNodeName", "spec.host"}},
        {{"", "Event"},
         {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
          "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
          "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
          "metadata.namespace", "metadata.name"}},
        {{"", "Namespace"}, {"status.phase", "metadata.name", "name"}},
        {{"", "Secret"}, {"type", "metadata.namespace", "metadata.name"}},
        {{"", "Node"}, {"metadata.name", "spec.unschedulable"}},
        {{"", "ReplicationController"}, {"metadata.name", "metadata.namespace", "status.replicas"}},
        {{"apps", "ReplicaSet"}, {"metadata.name", "metadata.namespace", "status.replicas"}},
        {{"batch", "Job"}, {"metadata.name", "metadata.namespace", "status.successful"}},
        {{"certificates.k8s.io", "CertificateSigningRequest"},
         {"metadata.name", "spec.signerName"}},
    };
    auto it = labels.find({group, kind});
    return it == labels.end() ? nullptr : &it->second;
}

// pkg/fields/selector.go splitTerms: commas split unless backslash-escaped.
std::vector<std::string> split_terms(std::string_view text) {
    std::vector<std::string> terms;
    if (text.empty()) return terms;
    std::size_t start = 0;
    bool in_slash = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_slash) {
            in_slash = false;
        } else if (c == '\\') {
            in_slash = true;
        } else if (c == ',') {
            terms.emplace_back(text.substr(start, i - start));
            start = i + 1;
        }
    }
    terms.emplace_back(text.substr(start));
    return terms;
}

std::string unescape_value(const std::string& text) {
    if (text.find_first_of("\\,=") == std::string::npos) return text;
    std::string out;
    bool in_slash = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_slash) {
            if (c == '\\' || c == ',' || c == '=') {
                out.push_back(c);
            } else {
                // Go reports the whole (UTF-8) rune after the backslash.
                std::string sequence = "\\";
                sequence.push_back(c);
                auto lead = static_cast<unsigned char>(c);
                std::size_t extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
                for (std::size_t k = 0; k < extra && i + 1 < text.size(); ++k) {
                    sequence.push_back(text[++i]);
                }
                throw SelectorError("invalid field selector: invalid escape sequence: " + sequence);
            }
            in_slash = false;
            continue;
        }
        if (c == '\\') {
            in_slash = true;
        } else if (c == ',' || c == '=') {
            // Go prints the rune with %v, i.e. as its code point number.
            throw SelectorError("invalid field selector: unescaped character in value: " +
                                std::to_string(static_cast<int>(c)));
        } else {
            out.push_back(c);
        }
    }
    if (in_slash) throw SelectorError("invalid field selector: invalid escape sequence: \\");
    return out;
}

std::string scalar_text(const nlohmann::json& value) {
    if (value.is_null() || value.is_object() || value.is_array()) return "";
    return go_value(value);
}

const nlohmann::json* walk(const nlohmann::json& object, std::string_view dotted) {
    const nlohmann::json* node = &object;
    std::size_t start = 0;
    while (true) {
        if (!node->is_object()) return nullptr;
        const auto dot = dotted.find('.', start);
        const std::string key(dotted.substr(start, dot - start));
        auto it = node->find(key);
        if (it == node->end()) return nullptr;
        node = &*it;
        if (dot == std::string_view::npos) return node;
        start = dot + 1;
    }
}

std::string string_at(const nlohmann::json& object, std::string_view dotted) {
    const nlohmann::json* node = walk(object, dotted);
    return node ? scalar_text(*node) : "";
}

}  // namespace

// ---------------------------------------------------------------- LabelSelector

namespace {

// A string field of a matchExpressions item, "" when absent; any other type is refused by name
// (a key given as a list must not end the server with a JSON type error).
std::string expression_field(const nlohmann::json& expression, const char* field) {
    const auto it = expression.find(field);
    if (it == expression.end() || it->is_null()) return {};
    if (!it->is_string()) {
        throw SelectorError(std::string("invalid label selector: matchExpressions ") + field +
                            " must be a string, got " + it->dump());
    }
    return it->get<std::string>();
}

}  // namespace

LabelSelector LabelSelector::parse(std::string_view text) {
    LabelSelector selector;
    selector.requirements_ = Parser(text).parse();
    std::stable_sort(selector.requirements_.begin(), selector.requirements_.end(),
                     [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
    return selector;
}

LabelSelector LabelSelector::from_json(const nlohmann::json& json) {
    LabelSelector selector;
    if (json.is_null()) return selector;
    if (!json.is_object()) {
        throw SelectorError("invalid label selector: expected an object, got " + json.dump());
    }
    if (auto it = json.find("matchLabels"); it != json.end() && !it->is_null()) {
        if (!it->is_object()) {
            throw SelectorError("invalid label selector: matchLabels must be an object");
        }
        for (const auto& [key, value] : it->items()) {
            if (!value.is_string()) {
                throw SelectorError("invalid label selector: matchLabels value of " +
                                    go_quote(key) + " must be a string");
            }
            std::vector<std::string> values{value.get<std::string>()};
            if (auto error = requirement_errors(key, "=", values); !error.empty()) {
                throw SelectorError(error);
            }
            selector.requirements_.push_back({key, "=", std::move(values)});
        }
    }
    if (auto it = json.find("matchExpressions"); it != json.end() && !it->is_null()) {
        if (!it->is_array()) {
            throw SelectorError("invalid label selector: matchExpressions must be an array");
        }
        for (const auto& expression : *it) {
            if (!expression.is_object()) {
                throw SelectorError(
                    "invalid label selector: matchExpressions items must be objects");
            }
            const std::string key = expression_field(expression, "key");
            const std::string op_name = expression_field(expression, "operator");
            std::string op;
            if (op_name == "In") {
                op = "in";
            } else if (op_name == "NotIn") {
                op = "notin";
            } else if (op_name == "Exists") {
                op = "exists";
            } else if (op_name == "DoesNotExist") {
                op = "!";
            } else {
                throw SelectorError(go_quote(op_name) + " is not a valid label selector operator");
            }
            std::vector<std::string> values;
            if (auto v = expression.find("values"); v != expression.end() && v->is_array()) {
                for (const auto& value : *v) {
                    if (!value.is_string()) {
                        throw SelectorError("invalid label selector: values of " + go_quote(key) +
                                            " must be strings");
                    }
                    values.push_back(value.get<std::string>());
                }
            }
            if (auto error = requirement_errors(key, op, values); !error.empty()) {
                throw SelectorError(error);
            }
            selector.requirements_.push_back({key, op, std::move(values)});
        }
    }
    std::stable_sort(selector.requirements_.begin(), selector.requirements_.end(),
                     [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
    return selector;
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
    for (const auto& requirement : requirements_) {
        const nlohmann::json* value = nullptr;
        if (labels.is_object()) {
            auto it = labels.find(requirement.key);
            if (it != labels.end()) value = &*it;
        }
        const std::string text = value ? scalar_text(*value) : "";
        const auto& values = requirement.values;
        const bool listed = value && std::find(values.begin(), values.end(), text) != values.end();
        const std::string& op = requirement.op;
        bool ok = false;
        if (op == "in" || op == "=" || op == "==") {
            ok = listed;
        } else if (op == "notin" || op == "!=") {
            ok = !listed;
        } else if (op == "exists") {
            ok = value != nullptr;
        } else if (op == "!") {
            ok = value == nullptr;
        } else if (op == "gt" || op == "lt") {
            std::int64_t actual = 0;
            std::int64_t bound = 0;
            ok = value && values.size() == 1 && parse_int64(text, actual) &&
                 parse_int64(values[0], bound) && (op == "gt" ? actual > bound : actual < bound);
        }
        if (!ok) return false;
    }
    return true;
}

// ---------------------------------------------------------------- FieldSelector

FieldSelector FieldSelector::parse(std::string_view text, const std::string& group,
                                   const std::string& kind) {
    return parse(text, group, kind, {});
}

FieldSelector FieldSelector::parse(std::string_view text, const std::string& group,
                                   const std::string& kind,
                                   const std::vector<std::string>& selectable_fields) {
    FieldSelector selector;
    selector.group_ = group;
    selector.kind_ = kind;
    auto parts = split_terms(text);
    std::sort(parts.begin(), parts.end());
    for (const auto& part : parts) {
        if (part.empty()) continue;
        // The first operator occurrence wins, trying "!=", "==", "=" at each position.
        std::size_t at = std::string::npos;
        std::string op;
        for (std::size_t i = 0; i < part.size() && at == std::string::npos; ++i) {
            for (const char* candidate : {"!=", "==", "="}) {
                if (part.compare(i, std::char_traits<char>::length(candidate), candidate) == 0) {
                    at = i;
                    op = candidate;
                    break;
                }
            }
        }
        if (at == std::string::npos) {
            throw SelectorError("invalid selector: '" + std::string(text) +
                                "'; can't understand '" + part + "'");
        }
        Term term;
        term.field = part.substr(0, at);
        term.equals = op != "!=";
        term.value = unescape_value(part.substr(at + op.size()));
        selector.terms_.push_back(std::move(term));
    }

    // Field label support per kind (registry conversion functions).
    const bool builtin = kBuiltinGroups.count(group) > 0;
    for (auto& term : selector.terms_) {
        const std::string& label = term.field;
        if (builtin) {
            if (const auto* supported = builtin_field_labels(group, kind)) {
                if (!supported->count(label)) {
                    throw SelectorError("field label not supported: " + label);
                }
                if (kind == "Pod" && label == "spec.host") term.field = "spec.nodeName";
                if (kind == "Namespace" && label == "name") term.field = "metadata.name";
            } else if (label != "metadata.name" && label != "metadata.namespace") {
                throw SelectorError(go_quote(label) +
                                    " is not a known field selector: only \"metadata.name\", "
                                    "\"metadata.namespace\"");
            }
            continue;
        }
        bool supported = label == "metadata.name" || label == "metadata.namespace";
        for (const auto& path : selectable_fields) {
            std::string_view declared = path;
            if (!declared.empty() && declared.front() == '.') declared.remove_prefix(1);
            if (declared == label) supported = true;
        }
        if (!supported) throw SelectorError("field label not supported: " + label);
    }
    return selector;
}

FieldSelector FieldSelector::parse(std::string_view text, const std::string& group,
                                   const std::string& kind,
                                   const std::vector<std::string>& selectable_fields,
                                   bool cluster_scoped) {
    FieldSelector selector = parse(text, group, kind, selectable_fields);
    if (cluster_scoped && !kBuiltinGroups.count(group)) {
        for (const auto& term : selector.terms_) {
            if (term.field == "metadata.namespace") {
                throw SelectorError("field label not supported: metadata.namespace");
            }
        }
    }
    return selector;
}

std::string FieldSelector::escape_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\' || c == ',' || c == '=') out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

std::string FieldSelector::field_value(const nlohmann::json& object,
                                       const std::string& field) const {
    if (group_.empty() && kind_ == "Event" && field == "source") {
        std::string source = string_at(object, "source.component");
        return source.empty() ? string_at(object, "reportingComponent") : source;
    }
    if (group_.empty() && kind_ == "Pod") {
        if (field == "status.podIP" || field == "status.podIPs") {
            std::vector<std::string> ips;
            if (const auto* list = walk(object, "status.podIPs"); list && list->is_array()) {
                for (const auto& entry : *list) {
                    if (entry.is_object()) ips.push_back(string_at(entry, "ip"));
                }
            }
            if (ips.empty()) {
                std::string single = string_at(object, "status.podIP");
                if (!single.empty()) ips.push_back(single);
            }
            if (field == "status.podIP") return ips.empty() ? "" : ips.front();
            return join(ips, ",");
        }
        if (field == "spec.hostNetwork") {
            const auto* flag = walk(object, "spec.hostNetwork");
            return flag && flag->is_boolean() && flag->get<bool>() ? "true" : "false";
        }
    }
    return string_at(object, field);
}

bool FieldSelector::matches(const nlohmann::json& object) const {
    for (const auto& term : terms_) {
        const bool equal = field_value(object, term.field) == term.value;
        if (equal != term.equals) return false;
    }
    return true;
}

}  // namespace kopf::apiserver
