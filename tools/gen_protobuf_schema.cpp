// Writes apiserver/src/core/protobuf_schema.inc: the protobuf schema of the built-in kinds the
// embedded API server decodes (message -> field number -> JSON name, type, nested message, flags).
//
// The facts come from the Go struct tags of k8s.io/api and k8s.io/apimachinery (each field's
// `protobuf:"<wire>,<number>,..."` and `json:"<name>,omitempty"` tags, and whether its Go type is
// a pointer), which say everything the decoder needs, including when Go's JSON encoding omits a
// zero. The Go sources are read with `git --git-dir=DIR show HEAD:path`, so bare clones do.
//
// Usage: gen_protobuf_schema <k8s.io/api git dir> <k8s.io/apimachinery git dir> > FILE
// Built only on request: cmake --build build --target gen_protobuf_schema
#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

// Go sources are scanned with the character classes of regular expressions (\w, \s): ASCII
// suffices for Go identifiers, and bytes of multi-byte UTF-8 characters count as neither.
bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
           (c >= '\x1c' && c <= '\x1f');
}
// The characters of a Go type expression as written in a field: `*metav1.Time`, `[]string`,
// `map[ResourceName]resource.Quantity`.
bool is_type_char(char c) {
    return is_word(c) || c == '.' || c == '*' || c == '[' || c == ']';
}

size_t skip(std::string_view text, size_t pos, bool (*in_class)(char)) {
    while (pos < text.size() && in_class(text[pos])) {
        ++pos;
    }
    return pos;
}

std::string_view lstrip_stars(std::string_view text) {
    return text.substr(std::min(text.find_first_not_of('*'), text.size()));
}

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
        const size_t end = text.find(separator, start);
        parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) {
            return parts;
        }
        start = end + 1;
    }
}

// Line starts of `text`: 0 and every position after a '\n'.
std::vector<size_t> line_starts(std::string_view text) {
    std::vector<size_t> starts{0};
    for (size_t pos = text.find('\n'); pos != std::string_view::npos;
         pos = text.find('\n', pos + 1)) {
        starts.push_back(pos + 1);
    }
    return starts;
}

[[noreturn]] void fail(const std::string& message) {
    throw std::runtime_error(message);
}

// Quotes an argument for the shell that popen runs.
std::string shell_quote(std::string_view arg) {
    std::string quoted = "'";
    for (const char c : arg) {
        if (c == '\'') {
            quoted += "'\\''";
        } else {
            quoted += c;
        }
    }
    return quoted + "'";
}

// The standard output of `git --git-dir=GITDIR ARGS...`; a failing git is an error.
std::string git(const std::string& gitdir, const std::vector<std::string>& args) {
    std::string command = "git " + shell_quote("--git-dir=" + gitdir);
    for (const auto& arg : args) {
        command += " " + shell_quote(arg);
    }
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
        fail("cannot run: " + command);
    }
    std::string output;
    std::array<char, 65536> buffer{};
    size_t count = 0;
    while ((count = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
        output.append(buffer.data(), count);
    }
    if (pclose(pipe) != 0) {
        fail("failed: " + command);
    }
    return output;
}

// The Go import path of a non-k8s.io/api package the schema refers to -> its key.
const std::map<std::string, std::string, std::less<>> kImports = {
    {"k8s.io/apimachinery/pkg/apis/meta/v1", "meta/v1"},
    {"k8s.io/apimachinery/pkg/api/resource", "resource"},
    {"k8s.io/apimachinery/pkg/util/intstr", "intstr"},
    {"k8s.io/apimachinery/pkg/runtime", "runtime"},
    {"k8s.io/apimachinery/pkg/types", "types"},
};

// Types with their own wire form, decoded by hand (protobuf.cpp).
const std::map<std::string, std::string, std::less<>> kSpecial = {
    {"meta/v1.Time", "Time"},
    {"meta/v1.MicroTime", "MicroTime"},
    {"meta/v1.Duration", "Duration"},
    {"meta/v1.FieldsV1", "RawJson"},
    {"resource.Quantity", "Quantity"},
    {"intstr.IntOrString", "IntOrString"},
    {"runtime.RawExtension", "RawJson"},
};

// The kinds decoded, by package; every message reachable from them is written.
const std::vector<std::pair<std::string, std::vector<std::string>>> kRoots = {
    {"core/v1",
     {"Pod", "ConfigMap", "Secret", "Service", "ServiceAccount", "Namespace", "Event",
      "ResourceQuota"}},
    {"apps/v1", {"Deployment", "ReplicaSet"}},
    {"batch/v1", {"Job", "CronJob"}},
    {"rbac/v1", {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}},
    {"networking/v1", {"Ingress"}},
    {"policy/v1", {"PodDisruptionBudget"}},
    {"scheduling/v1", {"PriorityClass"}},
    {"coordination/v1", {"Lease"}},
    {"events/v1", {"Event"}},
    {"admissionregistration/v1",
     {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}},
};

struct Field {
    std::string go_type;    // `*metav1.Time`, `[]Container`, `map[string]string`
    std::string json_tag;   // `name,omitempty`
    std::string proto_tag;  // `bytes,1,opt,name=name`
};

// A Go package's struct types (with their protobuf-tagged fields), its named non-struct types
// (`type ResourceName string`) and its imports of other packages of the schema.
struct Package {
    std::string key;
    std::map<std::string, std::vector<Field>, std::less<>> structs;
    std::map<std::string, std::string, std::less<>> named;    // name -> underlying type
    std::map<std::string, std::string, std::less<>> imports;  // alias -> package key

    void parse(std::string_view text);

  private:
    void parse_imports(std::string_view text, const std::vector<size_t>& starts);
    void parse_structs(std::string_view text, const std::vector<size_t>& starts);
    void parse_named(std::string_view text, const std::vector<size_t>& starts);
};

// One import at a line start: `[import ]["alias" ]"k8s.io/..."` (whitespace may span lines, as
// \s does). Returns {alias, path, end}.
std::optional<std::tuple<std::string_view, std::string_view, size_t>> match_import(
    std::string_view text, size_t start) {
    const size_t begin = skip(text, start, is_space);
    // The path, then the closing quote, at `pos` (after optional whitespace).
    auto path_at = [&](size_t pos) -> std::optional<std::pair<std::string_view, size_t>> {
        pos = skip(text, pos, is_space);
        constexpr std::string_view kPrefix = "\"k8s.io/";
        if (text.substr(pos, kPrefix.size()) != kPrefix) {
            return std::nullopt;
        }
        const size_t close = text.find('"', pos + kPrefix.size());
        if (close == std::string_view::npos || close == pos + kPrefix.size()) {
            return std::nullopt;
        }
        return std::pair{text.substr(pos + 1, close - pos - 1), close + 1};
    };
    // An optional alias (a word) at `pos`, then the path.
    auto alias_then_path =
        [&](size_t pos) -> std::optional<std::tuple<std::string_view, std::string_view, size_t>> {
        const size_t word_end = skip(text, pos, is_word);
        if (word_end > pos) {
            if (auto path = path_at(word_end)) {
                return std::tuple{text.substr(pos, word_end - pos), path->first, path->second};
            }
            return std::nullopt;  // a word then no path: no shorter word helps
        }
        if (auto path = path_at(pos)) {
            return std::tuple{std::string_view{}, path->first, path->second};
        }
        return std::nullopt;
    };
    constexpr std::string_view kImport = "import";
    if (text.substr(begin, kImport.size()) == kImport && begin + kImport.size() < text.size() &&
        is_space(text[begin + kImport.size()])) {
        if (auto found = alias_then_path(skip(text, begin + kImport.size(), is_space))) {
            return found;
        }
    }
    return alias_then_path(begin);
}

void Package::parse_imports(std::string_view text, const std::vector<size_t>& starts) {
    std::map<std::string, std::string, std::less<>> aliases;
    size_t resume = 0;  // matches do not overlap
    for (const size_t start : starts) {
        if (start < resume) {
            continue;
        }
        const auto found = match_import(text, start);
        if (!found) {
            continue;
        }
        const auto& [alias, path, end] = *found;
        resume = end;
        std::string package_key;
        constexpr std::string_view kApi = "k8s.io/api/";
        if (path.substr(0, kApi.size()) == kApi) {
            package_key = path.substr(kApi.size());
        } else if (const auto known = kImports.find(path); known != kImports.end()) {
            package_key = known->second;
        }
        if (!package_key.empty()) {
            const std::string_view name = alias.empty() ? path.substr(path.rfind('/') + 1) : alias;
            aliases[std::string(name)] = package_key;
        }
    }
    for (auto& [alias, package_key] : aliases) {
        imports[alias] = package_key;
    }
}

// The length of the line break at `pos` (0: none), where Python's str.splitlines breaks: \r\n,
// \n, \r, \v, \f, \x1c-\x1e, and U+0085, U+2028, U+2029 in UTF-8.
size_t line_break_length(std::string_view text, size_t pos) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c == '\r') {
        return text.substr(pos + 1, 1) == "\n" ? 2 : 1;
    }
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
        return 1;
    }
    if (c == 0xc2) {
        return text.substr(pos + 1, 1) == "\x85" ? 2 : 0;
    }
    const std::string_view rest = text.substr(pos + 1, 2);
    return c == 0xe2 && (rest == "\x80\xa8" || rest == "\x80\xa9") ? 3 : 0;
}

// The lines of a struct's body, split at any of the line breaks above.
std::vector<std::string_view> body_lines(std::string_view body) {
    std::vector<std::string_view> lines;
    size_t start = 0;
    size_t pos = 0;
    while (pos < body.size()) {
        const size_t length = line_break_length(body, pos);
        if (length == 0) {
            ++pos;
            continue;
        }
        lines.push_back(body.substr(start, pos - start));
        pos += length;
        start = pos;
    }
    if (start < body.size()) {
        lines.push_back(body.substr(start));
    }
    return lines;
}

// A field line: TAB [Name WS] Type WS `tags`. Returns {type, tags}.
std::optional<std::pair<std::string_view, std::string_view>> match_field(std::string_view line) {
    if (line.empty() || line[0] != '\t') {
        return std::nullopt;
    }
    auto type_then_tags =
        [&](size_t pos) -> std::optional<std::pair<std::string_view, std::string_view>> {
        const size_t type_end = skip(line, pos, is_type_char);
        const size_t tags_begin = skip(line, type_end, is_space);
        if (type_end == pos || tags_begin == type_end || tags_begin >= line.size() ||
            line[tags_begin] != '`') {
            return std::nullopt;
        }
        const size_t tags_end = line.find('`', tags_begin + 1);
        if (tags_end == std::string_view::npos) {
            return std::nullopt;
        }
        return std::pair{line.substr(pos, type_end - pos),
                         line.substr(tags_begin + 1, tags_end - tags_begin - 1)};
    };
    const size_t name_end = skip(line, 1, is_word);
    const size_t type_begin = skip(line, name_end, is_space);
    if (name_end > 1 && type_begin > name_end) {
        if (auto found = type_then_tags(type_begin)) {
            return found;
        }
    }
    return type_then_tags(1);
}

// The `key:"value"` pairs of a struct tag; a repeated key keeps its last value.
std::map<std::string, std::string, std::less<>> parse_tags(std::string_view tags) {
    std::map<std::string, std::string, std::less<>> values;
    size_t pos = 0;
    while (pos < tags.size()) {
        const size_t key_end = skip(tags, pos, is_word);
        if (key_end > pos && tags.substr(key_end, 2) == ":\"") {
            const size_t close = tags.find('"', key_end + 2);
            if (close != std::string_view::npos) {
                values[std::string(tags.substr(pos, key_end - pos))] =
                    tags.substr(key_end + 2, close - key_end - 2);
                pos = close + 1;
                continue;
            }
        }
        ++pos;
    }
    return values;
}

// `type Name struct {` ... up to the first line that starts with `}`.
void Package::parse_structs(std::string_view text, const std::vector<size_t>& starts) {
    constexpr std::string_view kType = "type ";
    constexpr std::string_view kStruct = " struct {\n";
    for (size_t index = 0; index < starts.size(); ++index) {
        const size_t start = starts[index];
        if (text.substr(start, kType.size()) != kType) {
            continue;
        }
        const size_t name_begin = start + kType.size();
        const size_t name_end = skip(text, name_begin, is_word);
        if (name_end == name_begin || text.substr(name_end, kStruct.size()) != kStruct) {
            continue;
        }
        const size_t body_begin = name_end + kStruct.size();
        size_t close = index + 1;
        while (close < starts.size() &&
               (starts[close] < body_begin || starts[close] >= text.size() ||
                text[starts[close]] != '}')) {
            ++close;
        }
        if (close == starts.size()) {
            continue;
        }
        std::vector<Field> fields;
        for (const auto line : body_lines(text.substr(body_begin, starts[close] - body_begin))) {
            const auto field = match_field(line);
            if (!field) {
                continue;
            }
            auto tags = parse_tags(field->second);
            const auto protobuf = tags.find("protobuf");
            if (protobuf == tags.end()) {
                continue;
            }
            fields.push_back({std::string(field->first), tags["json"], protobuf->second});
        }
        structs[std::string(text.substr(name_begin, name_end - name_begin))] = std::move(fields);
        index = close;  // matches do not overlap: go on after the closing brace's line
    }
}

// `type Name Underlying` alone on its line (trailing whitespace allowed).
void Package::parse_named(std::string_view text, const std::vector<size_t>& starts) {
    constexpr std::string_view kType = "type ";
    for (const size_t start : starts) {
        if (text.substr(start, kType.size()) != kType) {
            continue;
        }
        const size_t name_begin = start + kType.size();
        const size_t name_end = skip(text, name_begin, is_word);
        if (name_end == name_begin || name_end >= text.size() || text[name_end] != ' ') {
            continue;
        }
        const size_t type_end = skip(text, name_end + 1, is_type_char);
        if (type_end == name_end + 1) {
            continue;
        }
        size_t pos = type_end;
        while (pos < text.size() && text[pos] != '\n' && is_space(text[pos])) {
            ++pos;
        }
        if (pos < text.size() && text[pos] != '\n') {
            continue;
        }
        named[std::string(text.substr(name_begin, name_end - name_begin))] =
            text.substr(name_end + 1, type_end - name_end - 1);
    }
}

void Package::parse(std::string_view text) {
    const auto starts = line_starts(text);
    parse_imports(text, starts);
    parse_structs(text, starts);
    parse_named(text, starts);
}

Package load(const std::string& gitdir, const std::string& directory, const std::string& key) {
    Package package{key, {}, {}, {}};
    const std::string listing = git(gitdir, {"ls-tree", "--name-only", "HEAD", directory + "/"});
    size_t pos = 0;
    while ((pos = skip(listing, pos, is_space)) < listing.size()) {
        const size_t end = std::min(listing.find_first_of(" \t\n\r\f\v", pos), listing.size());
        const std::string_view name = std::string_view(listing).substr(pos, end - pos);
        pos = end;
        const auto ends_with = [&](std::string_view suffix) {
            return name.size() >= suffix.size() &&
                   name.substr(name.size() - suffix.size()) == suffix;
        };
        if (ends_with(".go") && !ends_with("_test.go")) {
            package.parse(git(gitdir, {"show", "HEAD:" + std::string(name)}));
        }
    }
    return package;
}

struct Row {
    int number;
    std::string json_name;
    std::string kind;
    std::string message;
    std::vector<std::string> flags;

    bool operator<(const Row& other) const {
        return std::tie(number, json_name, kind, message, flags) <
               std::tie(other.number, other.json_name, other.kind, other.message, other.flags);
    }
};

using Resolved = std::pair<std::string, std::string>;  // {type, nested message or map type}

class Generator {
  public:
    Generator(std::string api, std::string machinery)
        : api_(std::move(api)), machinery_(std::move(machinery)) {}

    std::string run();

  private:
    // The package of a key, loaded when first referenced; nullptr for packages whose types are
    // all special (resource, intstr, runtime, types).
    const Package* package(const std::string& key);
    Resolved resolve(const Package& package, std::string_view expr);
    Resolved scalar(const Package& package, std::string_view expr);

    std::string api_;
    std::string machinery_;
    std::map<std::string, std::unique_ptr<Package>, std::less<>> packages_;
};

const Package* Generator::package(const std::string& key) {
    if (key == "resource" || key == "intstr" || key == "runtime" || key == "types") {
        return nullptr;
    }
    auto& slot = packages_[key];
    if (!slot) {
        slot = std::make_unique<Package>(
            key == "meta/v1" ? load(machinery_, "pkg/apis/meta/v1", key) : load(api_, key, key));
    }
    return slot.get();
}

// The type of a Go type expression without * or [].
Resolved Generator::resolve(const Package& from, std::string_view expr) {
    std::string key;
    std::string name;
    if (const size_t dot = expr.find('.'); dot != std::string_view::npos) {
        const std::string alias(expr.substr(0, dot));
        name = expr.substr(dot + 1);
        const auto imported = from.imports.find(alias);
        key = imported != from.imports.end() ? imported->second : alias;
    } else {
        key = from.key;
        name = expr;
    }
    const std::string qualified = key + "." + name;
    if (const auto special = kSpecial.find(qualified); special != kSpecial.end()) {
        return {special->second, ""};
    }
    if (key == "types") {
        return {"String", ""};
    }
    const Package* target = package(key);
    if (target == nullptr) {
        fail("unknown package of " + std::string(expr) + " in " + from.key);
    }
    if (target->structs.contains(name)) {
        return {"Message", qualified};
    }
    if (const auto named = target->named.find(name); named != target->named.end()) {
        if (named->second.starts_with("map[")) {
            return {"Map", named->second};
        }
        return scalar(*target, named->second);
    }
    return scalar(*target, name);
}

Resolved Generator::scalar(const Package& package, std::string_view expr) {
    if (expr == "string") {
        return {"String", ""};
    }
    if (expr == "int32" || expr == "int64" || expr == "int" || expr == "uint32" ||
        expr == "uint64" || expr == "int16") {
        return {"Int", ""};
    }
    if (expr == "bool") {
        return {"Bool", ""};
    }
    if (expr == "float64") {
        return {"Double", ""};
    }
    if (expr == "[]byte") {
        return {"Bytes", ""};
    }
    if (expr.find('.') != std::string_view::npos || package.structs.contains(expr) ||
        package.named.contains(expr)) {
        return resolve(package, expr);
    }
    fail("unknown type " + std::string(expr) + " in " + package.key);
}

// The field number of a protobuf tag (`bytes,1,opt,name=name`).
int field_number(std::string_view proto_tag, std::string_view where) {
    const auto parts = split(proto_tag, ',');
    if (parts.size() >= 2 && !parts[1].empty() && parts[1].size() < 10 &&
        parts[1].find_first_not_of("0123456789") == std::string_view::npos) {
        return std::stoi(std::string(parts[1]));
    }
    fail("no field number in protobuf tag \"" + std::string(proto_tag) + "\" of " +
         std::string(where));
}

std::string Generator::run() {
    std::map<std::string, std::vector<Row>> rows;
    std::vector<std::string> queue;
    for (const auto& [key, kinds] : kRoots) {
        for (const auto& kind : kinds) {
            queue.push_back(key + "." + kind);
        }
    }
    while (!queue.empty()) {
        const std::string qualified = std::move(queue.back());
        queue.pop_back();
        if (rows.contains(qualified)) {
            continue;
        }
        const size_t dot = qualified.rfind('.');
        const Package* pkg = package(qualified.substr(0, dot));
        const std::string name = qualified.substr(dot + 1);
        if (pkg == nullptr || !pkg->structs.contains(name)) {
            fail("no struct " + qualified);
        }
        std::vector<Row> out;
        for (const auto& field : pkg->structs.find(name)->second) {
            const auto parts = split(field.json_tag, ',');
            const std::string json_name(parts[0]);
            const bool omitempty =
                std::find(parts.begin() + 1, parts.end(), "omitempty") != parts.end();
            const int number = field_number(field.proto_tag, qualified + " " + json_name);
            std::vector<std::string> flags;
            std::string_view expr = field.go_type;
            const bool pointer = expr.starts_with('*');
            expr = lstrip_stars(expr);
            if (expr.starts_with("[]") && expr != "[]byte") {
                flags.emplace_back("kRepeated");
                expr = lstrip_stars(expr.substr(2));
            }
            auto [kind, message] =
                expr.starts_with("map[") ? Resolved{"Map", std::string(expr)} : scalar(*pkg, expr);
            if (kind == "Map") {
                // The map's value type: what follows `map[Key]`.
                std::string_view value = message;
                if (const size_t close = value.find(']', 4);
                    close != std::string_view::npos && close > 4) {
                    value = value.substr(close + 1);
                }
                flags.emplace_back("kMap");
                std::tie(kind, message) = scalar(*pkg, lstrip_stars(value));
            }
            if (json_name.empty()) {  // an embedded struct: Go's JSON lifts its fields
                flags.emplace_back("kInline");
            }
            if (pointer || !omitempty) {
                flags.emplace_back("kKeepZero");
            }
            if (json_name == "-") {
                continue;
            }
            if (!message.empty()) {
                queue.push_back(message);
            }
            out.push_back({number, json_name, kind, message, std::move(flags)});
        }
        rows[qualified] = std::move(out);
    }

    auto head = [](const std::string& gitdir) {
        std::string hash = git(gitdir, {"rev-parse", "HEAD"});
        while (!hash.empty() && is_space(hash.back())) {
            hash.pop_back();
        }
        return hash;
    };
    std::string text = "// Generated by tools/gen_protobuf_schema.cpp from the Go struct tags of\n";
    text += "// k8s.io/api " + head(api_) + " and\n";
    text += "// k8s.io/apimachinery " + head(machinery_) + "; do not edit.\n";
    text += "// {message, field number, JSON name, type, nested message, flags}\n";
    for (auto& [qualified, fields] : rows) {
        std::sort(fields.begin(), fields.end());
        for (const auto& row : fields) {
            std::string flag_text;
            for (const auto& flag : row.flags) {
                flag_text += (flag_text.empty() ? "" : " | ") + flag;
            }
            text += "{\"" + qualified + "\", " + std::to_string(row.number) + ", \"" +
                    row.json_name + "\", T::" + row.kind + ", \"" + row.message + "\", " +
                    (flag_text.empty() ? "0" : flag_text) + "},\n";
        }
    }
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: gen_protobuf_schema <k8s.io/api git dir> <k8s.io/apimachinery git dir>"
                     " > apiserver/src/core/protobuf_schema.inc\n";
        return 2;
    }
    try {
        std::cout << Generator(argv[1], argv[2]).run() << std::flush;
    } catch (const std::exception& error) {
        std::cerr << "gen_protobuf_schema: " << error.what() << "\n";
        return 1;
    }
    return std::cout ? 0 : 1;
}
