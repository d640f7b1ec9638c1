#include "net/kubeconfig.hpp"

#include <yaml-cpp/yaml.h>

#include "net/certificates.hpp"

namespace kopf::apiserver::net {

std::string render_kubeconfig(const KubeconfigParams& params) {
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "apiVersion" << YAML::Value << "v1";
    out << YAML::Key << "kind" << YAML::Value << "Config";
    out << YAML::Key << "preferences" << YAML::Value << YAML::Flow << YAML::BeginMap
        << YAML::EndMap;

    out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << params.name;
    out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "server" << YAML::Value << params.server_url;
    if (!params.ca_cert_pem.empty()) {
        out << YAML::Key << "certificate-authority-data" << YAML::Value
            << base64_encode(params.ca_cert_pem);
    }
    out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;

    out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << params.name + "-admin";
    out << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
    if (!params.token.empty()) out << YAML::Key << "token" << YAML::Value << params.token;
    out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;

    out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << params.name;
    out << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "cluster" << YAML::Value << params.name;
    out << YAML::Key << "user" << YAML::Value << params.name + "-admin";
    out << YAML::Key << "namespace" << YAML::Value << params.namespace_name;
    out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;

    out << YAML::Key << "current-context" << YAML::Value << params.name;
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace kopf::apiserver::net
