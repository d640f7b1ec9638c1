// Helpers of the engine: Status errors, time, uids, base64, YAML bodies, JSONPath.
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <random>
#include <string_view>

#include "core/engine.hpp"

namespace kopf::apiserver::core {

json make_status(int code, const std::string& reason, const std::string& message, json details) {
    json s = {{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", code < 400 ? "Success" : "Failure"},
              {"message", message},
              {"reason", reason},
              {"code", code}};
    if (!details.is_null()) s["details"] = std::move(details);
    return s;
}

HttpResponse json_response(const json& body, int status) {
    HttpResponse r;
    r.status = status;
    r.body = body.dump();
    return r;
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::vector<std::string> string_list(const json& value) {
    std::vector<std::string> out;
    if (value.is_array())
        for (const auto& v : value)
            if (v.is_string()) out.push_back(v.get<std::string>());
    return out;
}

ApiError api_error(int code, const std::string& reason, const std::string& message, json details) {
    ApiError e;
    e.code = code;
    e.status = make_status(code, reason, message, std::move(details));
    return e;
}

ApiError page_not_found() {
    ApiError e;
    e.code = 404;
    e.plain_text = "404 page not found\n";
    return e;
}

ApiError bad_request(const std::string& message) {
    return api_error(400, "BadRequest", message);
}

namespace {
std::string format_time(std::chrono::system_clock::time_point tp, bool micro) {
    auto secs = std::chrono::time_point_cast<std::chrono::seconds>(tp);
    std::time_t t = std::chrono::system_clock::to_time_t(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string out = buf;
    if (micro) {
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp - secs).count();
        char frac[16];
        std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(us));
        out += frac;
    }
    return out + "Z";
}
}  // namespace

std::string now_rfc3339() {
    return format_time(std::chrono::system_clock::now(), false);
}
std::string now_rfc3339_micro() {
    return format_time(std::chrono::system_clock::now(), true);
}

std::string new_uid() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    uint64_t a = rng(), b = rng();
    a = (a & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
    b = (b & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>((a >> 16) & 0xFFFF), static_cast<unsigned>(a & 0xFFFF),
                  static_cast<unsigned>(b >> 48),
                  static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
    return buf;
}

std::string base64_encode(const std::string& data) {
    std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(data.data()),
                            static_cast<int>(data.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::optional<std::string> base64_decode(const std::string& data) {
    std::string in;
    for (char c : data)
        if (!std::isspace(static_cast<unsigned char>(c))) in += c;
    if (in.size() % 4 != 0) return std::nullopt;
    std::string out(in.size() / 4 * 3 + 1, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(in.data()),
                            static_cast<int>(in.size()));
    if (n < 0) return std::nullopt;
    std::size_t pad = 0;
    if (!in.empty() && in.back() == '=') ++pad;
    if (in.size() > 1 && in[in.size() - 2] == '=') ++pad;
    out.resize(static_cast<std::size_t>(n) - pad);
    return out;
}

std::string base64url_encode(const std::string& data) {
    std::string s = base64_encode(data);
    for (auto& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!s.empty() && s.back() == '=') s.pop_back();
    return s;
}

std::optional<std::string> base64url_decode(const std::string& data) {
    std::string s = data;
    for (auto& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
    while (s.size() % 4) s += '=';
    return base64_decode(s);
}

namespace {

// The deepest nesting of a JSON text's arrays and objects, stopping past `limit`: a scan that
// needs no parse, so that nothing recursive ever sees a body nested deeper than that.
int json_depth(std::string_view text, int limit) {
    int depth = 0;
    int deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) break;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return deepest;
}

// Converting YAML expands its aliases: a few hundred bytes of nested aliases can stand for
// billions of nodes (CVE-2019-11253). Without aliases, a document has fewer nodes than bytes.
struct YamlBudget {
    std::size_t nodes_left;
};

json yaml_node_to_json(const YAML::Node& node, YamlBudget& budget) {
    if (budget.nodes_left == 0) {
        throw api_error(400, "BadRequest",
                        "error converting YAML to JSON: the document contains excessive aliasing "
                        "(its aliases expand to more nodes than its size allows)");
    }
    --budget.nodes_left;
    switch (node.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined:
            return nullptr;
        case YAML::NodeType::Sequence: {
            json arr = json::array();
            for (const auto& item : node) arr.push_back(yaml_node_to_json(item, budget));
            return arr;
        }
        case YAML::NodeType::Map: {
            json obj = json::object();
            for (const auto& kv : node)
                obj[kv.first.as<std::string>()] = yaml_node_to_json(kv.second, budget);
            return obj;
        }
        case YAML::NodeType::Scalar:
            break;
    }
    const std::string& text = node.Scalar();
    if (node.Tag() == "!") return text;  // quoted: always a string
    if (text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
    if (!text.empty()) {
        // Plain scalars that look like numbers are numbers (YAML 1.2 core schema).
        try {
            std::size_t pos = 0;
            long long v = std::stoll(text, &pos, 10);
            if (pos == text.size() && (std::isdigit(static_cast<unsigned char>(text[0])) ||
                                       text[0] == '-' || text[0] == '+'))
                return v;
        } catch (...) {
        }
        try {
            std::size_t pos = 0;
            double d = std::stod(text, &pos);
            bool numeric_start = std::isdigit(static_cast<unsigned char>(text[0])) ||
                                 text[0] == '-' || text[0] == '+' || text[0] == '.';
            bool has_alpha_word = text.find_first_of("nN") != std::string::npos;  // nan/inf
            if (pos == text.size() && numeric_start && !has_alpha_word) return d;
        } catch (...) {
        }
    }
    return text;
}
}  // namespace

json yaml_to_json(const std::string& text) {
    try {
        YamlBudget budget{10'000 + text.size()};
        return yaml_node_to_json(YAML::Load(text), budget);
    } catch (const YAML::Exception& e) {
        throw std::runtime_error(e.what());
    }
}

std::string media_type(const std::string& content_type) {
    std::string mt = content_type.substr(0, content_type.find(';'));
    mt.erase(std::remove_if(mt.begin(), mt.end(), [](unsigned char c) { return std::isspace(c); }),
             mt.end());
    std::transform(mt.begin(), mt.end(), mt.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return mt;
}

void check_body_depth(const std::string& body) {
    if (json_depth(body, kMaxBodyDepth) > kMaxBodyDepth) {
        throw bad_request("couldn't decode the request body as JSON: exceeded max depth of " +
                          std::to_string(kMaxBodyDepth));
    }
}

json decode_body(const std::string& body, const std::string& content_type) {
    std::string mt = media_type(content_type);
    bool yaml = mt == "application/yaml" || mt == "application/x-yaml" || mt == "text/yaml" ||
                mt == "application/apply-patch+yaml";
    if (mt == "application/vnd.kubernetes.protobuf") return decode_protobuf_body(body);
    if (!yaml && !mt.empty() && mt != "application/json" && mt != "*/*") {
        throw api_error(415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json, application/yaml");
    }
    if (body.empty()) throw bad_request("the request body is empty; expected a JSON object");
    json value;
    if (yaml && !(body.find_first_not_of(" \t\r\n") != std::string::npos &&
                  body[body.find_first_not_of(" \t\r\n")] == '{')) {
        try {
            value = yaml_to_json(body);
        } catch (const ApiError&) {
            throw;
        } catch (const std::exception& e) {
            throw bad_request(std::string("error converting YAML to JSON: ") + e.what());
        }
        // YAML scalars are taken as they are; JSON's parser refuses invalid UTF-8 itself.
        try {
            (void)value.dump();
        } catch (const json::type_error&) {
            throw bad_request("error converting YAML to JSON: the document is not valid UTF-8");
        }
    } else {
        check_body_depth(body);
        value = json::parse(body, nullptr, false);
        if (value.is_discarded()) {
            // Give the parser's own explanation (line/column) to the client.
            try {
                json ignored = json::parse(body);
            } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
                throw bad_request(std::string("couldn't decode the request body as JSON: ") +
                                  e.what());
            }
            throw bad_request("couldn't decode the request body as JSON");
        }
    }
    if (!value.is_object())
        throw bad_request("the request body must be a JSON object, got " +
                          std::string(value.type_name()));
    return value;
}

bool parse_bool(const std::string& v, bool fallback) {
    if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
    if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False")
        return false;
    return fallback;
}

json eval_json_path(const json& object, const std::string& raw) {
    std::string path = raw;
    if (path.size() >= 2 && path.front() == '{' && path.back() == '}')
        path = path.substr(1, path.size() - 2);
    const json* cur = &object;
    std::size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '.') {
            ++i;
            std::size_t j = i;
            while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
            std::string key = path.substr(i, j - i);
            i = j;
            if (key.empty()) continue;
            if (!cur->is_object() || !cur->contains(key)) return nullptr;
            cur = &(*cur)[key];
        } else if (path[i] == '[') {
            std::size_t j = path.find(']', i);
            if (j == std::string::npos) return nullptr;
            std::string idx = path.substr(i + 1, j - i - 1);
            i = j + 1;
            if (!idx.empty() && (idx.front() == '\'' || idx.front() == '"')) {
                std::string key = idx.substr(1, idx.size() - 2);
                if (!cur->is_object() || !cur->contains(key)) return nullptr;
                cur = &(*cur)[key];
                continue;
            }
            if (!cur->is_array()) return nullptr;
            long n = 0;
            try {
                n = std::stol(idx);
            } catch (...) {
                return nullptr;
            }
            if (n < 0) n += static_cast<long>(cur->size());
            if (n < 0 || static_cast<std::size_t>(n) >= cur->size()) return nullptr;
            cur = &(*cur)[static_cast<std::size_t>(n)];
        } else {
            // Path without a leading dot: treat as a key.
            std::size_t j = i;
            while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
            std::string key = path.substr(i, j - i);
            i = j;
            if (!cur->is_object() || !cur->contains(key)) return nullptr;
            cur = &(*cur)[key];
        }
    }
    return *cur;
}

int64_t parse_rfc3339(const std::string& text) {
    std::tm tm{};
    if (text.size() < 19) return -1;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t t = timegm(&tm);
    // Offset suffix (+hh:mm / -hh:mm) after optional fractional seconds.
    std::size_t p = 19;
    while (p < text.size() && (text[p] == '.' || std::isdigit(static_cast<unsigned char>(text[p]))))
        ++p;
    if (p < text.size() && (text[p] == '+' || text[p] == '-') && text.size() >= p + 6) {
        int hh = std::atoi(text.substr(p + 1, 2).c_str());
        int mm = std::atoi(text.substr(p + 4, 2).c_str());
        int64_t off = hh * 3600 + mm * 60;
        t += text[p] == '+' ? -off : off;
    }
    return t;
}

std::string human_age(const std::string& ts) {
    int64_t t = parse_rfc3339(ts);
    if (t < 0) return "<unknown>";
    int64_t d = std::time(nullptr) - t;
    if (d < 0) d = 0;
    auto s = [](int64_t v) { return std::to_string(v); };
    if (d < 120) return s(d) + "s";
    int64_t m = d / 60;
    if (m < 10) return s(m) + "m" + (d % 60 ? s(d % 60) + "s" : "");
    if (m < 180) return s(m) + "m";
    int64_t h = d / 3600;
    if (h < 8) return s(h) + "h" + (m % 60 ? s(m % 60) + "m" : "");
    if (h < 48) return s(h) + "h";
    int64_t days = h / 24;
    if (days < 8) return s(days) + "d" + (h % 24 ? s(h % 24) + "h" : "");
    if (days < 365 * 2) return s(days) + "d";
    return s(days / 365) + "y";
}

bool wants_table(const std::string& accept) {
    return accept.find("as=Table") != std::string::npos;
}

}  // namespace kopf::apiserver::core

namespace kopf::apiserver::core {

json cause(const std::string& reason, const std::string& field, const std::string& message) {
    return {{"reason", reason}, {"field", field}, {"message", message}};
}

ApiError invalid_error(const std::string& group, const std::string& kind, const std::string& name,
                       const json& causes) {
    std::string qualified = group.empty() ? kind : kind + "." + group;
    std::vector<std::string> parts;
    for (const auto& c : causes) {
        std::string field = c.value("field", "");
        std::string msg = c.value("message", "");
        parts.push_back(field.empty() ? msg : field + ": " + msg);
    }
    std::string joined;
    for (std::size_t i = 0; i < parts.size(); ++i) joined += (i ? ", " : "") + parts[i];
    if (parts.size() > 1) joined = "[" + joined + "]";
    json details = {{"name", name}, {"group", group}, {"kind", kind}, {"causes", causes}};
    return api_error(422, "Invalid", qualified + " \"" + name + "\" is invalid: " + joined,
                     std::move(details));
}

}  // namespace kopf::apiserver::core
