// Server-side Table output (meta.k8s.io/v1 Table) for `kubectl get`: the usual
// columns of built-in kinds and CRD additionalPrinterColumns.
#include "core/engine.hpp"

namespace kopf::apiserver::core {

namespace {

json column(const std::string& name, const std::string& type, const std::string& format = "",
            int priority = 0, const std::string& description = "") {
    return {{"name", name},
            {"type", type},
            {"format", format},
            {"description", description},
            {"priority", priority}};
}

std::string str(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "";
    return v.dump();
}

struct BuiltinColumns {
    std::vector<json> defs;
    std::function<std::vector<json>(const json&)> cells;
};

BuiltinColumns builtin_columns(const Resource& res) {
    const std::string& k = res.kind;
    auto age = [](const json& o) {
        return json(human_age(o["metadata"].value("creationTimestamp", "")));
    };
    auto name = [](const json& o) { return json(o["metadata"].value("name", "")); };
    if (k == "Namespace")
        return {
            {column("Name", "string", "name"), column("Status", "string"), column("Age", "string")},
            [=](const json& o) {
                return std::vector<json>{name(o), str(eval_json_path(o, ".status.phase")), age(o)};
            }};
    if (k == "Pod")
        return {{column("Name", "string", "name"), column("Ready", "string"),
                 column("Status", "string"), column("Restarts", "string"), column("Age", "string")},
                [=](const json& o) {
                    std::size_t total = 0;
                    if (o.contains("spec") && o["spec"].contains("containers") &&
                        o["spec"]["containers"].is_array())
                        total = o["spec"]["containers"].size();
                    std::size_t ready = 0;
                    json statuses = eval_json_path(o, ".status.containerStatuses");
                    if (statuses.is_array())
                        for (const auto& s : statuses)
                            if (s.value("ready", false)) ++ready;
                    std::string phase = str(eval_json_path(o, ".status.phase"));
                    if (o["metadata"].contains("deletionTimestamp")) phase = "Terminating";
                    return std::vector<json>{name(o),
                                             std::to_string(ready) + "/" + std::to_string(total),
                                             phase, "0", age(o)};
                }};
    if (k == "ConfigMap")
        return {
            {column("Name", "string", "name"), column("Data", "integer"), column("Age", "string")},
            [=](const json& o) {
                std::size_t n = 0;
                if (o.contains("data") && o["data"].is_object()) n += o["data"].size();
                if (o.contains("binaryData") && o["binaryData"].is_object())
                    n += o["binaryData"].size();
                return std::vector<json>{name(o), n, age(o)};
            }};
    if (k == "Secret")
        return {{column("Name", "string", "name"), column("Type", "string"),
                 column("Data", "integer"), column("Age", "string")},
                [=](const json& o) {
                    std::size_t n =
                        o.contains("data") && o["data"].is_object() ? o["data"].size() : 0;
                    return std::vector<json>{name(o), o.value("type", "Opaque"), n, age(o)};
                }};
    if (k == "Deployment" || k == "ReplicaSet")
        return {{column("Name", "string", "name"), column("Ready", "string"),
                 column("Up-to-date", "integer"), column("Available", "integer"),
                 column("Age", "string")},
                [=](const json& o) {
                    json desired = eval_json_path(o, ".spec.replicas");
                    json ready = eval_json_path(o, ".status.readyReplicas");
                    auto num = [](const json& v) { return v.is_number() ? v.get<int64_t>() : 0; };
                    return std::vector<json>{
                        name(o),
                        std::to_string(num(ready)) + "/" +
                            std::to_string(desired.is_number() ? num(desired) : 1),
                        num(eval_json_path(o, ".status.updatedReplicas")),
                        num(eval_json_path(o, ".status.availableReplicas")), age(o)};
                }};
    if (k == "Event")
        return {
            {column("Last Seen", "string"), column("Type", "string"), column("Reason", "string"),
             column("Object", "string"), column("Message", "string")},
            [=](const json& o) {
                std::string last = o.value("lastTimestamp", json("")).is_string()
                                       ? o.value("lastTimestamp", "")
                                       : "";
                if (last.empty() && o.contains("eventTime") && o["eventTime"].is_string())
                    last = o["eventTime"].get<std::string>();
                if (last.empty()) last = o["metadata"].value("creationTimestamp", "");
                json involved = o.contains("involvedObject") ? o["involvedObject"]
                                : o.contains("regarding")    ? o["regarding"]
                                                             : json::object();
                std::string kind = involved.value("kind", "");
                std::transform(kind.begin(), kind.end(), kind.begin(),
                               [](unsigned char c) { return std::tolower(c); });
                return std::vector<json>{
                    human_age(last), o.value("type", ""), o.value("reason", ""),
                    kind + "/" + involved.value("name", ""),
                    o.contains("message") ? o.value("message", "") : o.value("note", "")};
            }};
    if (k == "CustomResourceDefinition")
        return {{column("Name", "string", "name"), column("Created At", "date")},
                [=](const json& o) {
                    return std::vector<json>{name(o), o["metadata"].value("creationTimestamp", "")};
                }};
    return {{column("Name", "string", "name"), column("Age", "string")}, [=](const json& o) {
                return std::vector<json>{name(o), age(o)};
            }};
}

}  // namespace

json Engine::table_columns(const Resource& res, const std::string& version) const {
    json defs = json::array();
    if (res.builtin) {
        for (auto& d : builtin_columns(res).defs) defs.push_back(d);
        return defs;
    }
    defs.push_back(column("Name", "string", "name", 0, "Name must be unique within a namespace."));
    const ResourceVersion* v = res.version(version);
    if (!v || !v->printer_columns.is_array() || v->printer_columns.empty()) {
        defs.push_back(column("Age", "date"));
        return defs;
    }
    for (const auto& c : v->printer_columns)
        defs.push_back(column(c.value("name", ""), c.value("type", "string"), c.value("format", ""),
                              c.value("priority", 0), c.value("description", "")));
    return defs;
}

TableRowRenderer Engine::table_row_renderer(const Resource& res, const std::string& version,
                                            const std::string& include_object) const {
    if (include_object != "Metadata" && include_object != "Object" && include_object != "None")
        throw bad_request("includeObject: Unsupported value: \"" + include_object +
                          "\": supported values: \"Metadata\", \"None\", \"Object\"");
    std::shared_ptr<BuiltinColumns> builtin;
    if (res.builtin) builtin = std::make_shared<BuiltinColumns>(builtin_columns(res));
    json printer_columns;
    if (const ResourceVersion* v = res.version(version); v && v->printer_columns.is_array())
        printer_columns = v->printer_columns;
    return [builtin, printer_columns, include_object](const json& obj) {
        json cells = json::array();
        if (builtin) {
            for (auto& c : builtin->cells(obj)) cells.push_back(std::move(c));
        } else {
            cells.push_back(obj["metadata"].value("name", ""));
            if (printer_columns.empty()) {
                cells.push_back(human_age(obj["metadata"].value("creationTimestamp", "")));
            } else {
                for (const auto& c : printer_columns) {
                    json value = eval_json_path(obj, c.value("jsonPath", ""));
                    if (c.value("type", "") == "date" && value.is_string())
                        value = human_age(value.get<std::string>());
                    else if (value.is_object() || value.is_array())
                        value = value.dump();
                    cells.push_back(std::move(value));
                }
            }
        }
        json row = {{"cells", std::move(cells)}};
        if (include_object == "Object") {
            row["object"] = obj;
        } else if (include_object == "Metadata") {
            row["object"] = {{"kind", "PartialObjectMetadata"},
                             {"apiVersion", "meta.k8s.io/v1"},
                             {"metadata", obj["metadata"]}};
        }
        return row;
    };
}

json Engine::to_table(const Resource& res, const std::string& version,
                      const std::vector<json>& views, const std::string& include_object,
                      bool with_columns) const {
    auto render = table_row_renderer(res, version, include_object);
    json rows = json::array();
    for (const auto& obj : views) rows.push_back(render(obj));
    return {{"kind", "Table"},
            {"apiVersion", "meta.k8s.io/v1"},
            {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
            {"columnDefinitions", with_columns ? table_columns(res, version) : json::array()},
            {"rows", rows}};
}

}  // namespace kopf::apiserver::core
