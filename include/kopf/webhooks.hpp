// Webhook servers for admission handlers (Kopf's "Admission control": servers and tunnels).
//
//     KOPF_ON_STARTUP(configure, {});
//     void configure(kopf::ActivityContext& ctx) {
//         ctx.settings.admission.server = std::make_shared<kopf::WebhookServer>(
//             kopf::WebhookServerOptions{.addr = "0.0.0.0", .port = 9443, .host = "my-op.local"});
//         ctx.settings.admission.managed = "auto.kopf.dev";
//     }
//
// A server listens for AdmissionReview requests (POST <path>/<handler-id>) and hands them to the
// operator's admission engine; it tells the operator how the API server reaches it (a URL or a
// service, and the CA bundle), which the managed webhook configurations then carry.
#pragma once

#include <functional>
#include <kopf/json.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kopf {

/// How the API server reaches a webhook server: `clientConfig` of a webhook configuration
/// without the handler's id (the operator appends "/<id>" to the URL or the service's path).
struct WebhookClientConfig {
    std::optional<std::string> url{};  ///< "https://host:port/path"
    /// Or a service: {"namespace", "name", "port", "path"} (Kubernetes' ServiceReference).
    std::optional<json> service{};
    std::string ca_bundle{};  ///< PEM; sent base64-encoded as `caBundle`; empty: none
    /// As in a webhook configuration: {"url": ..., "caBundle": base64(PEM)}.
    json to_json() const;
    bool operator==(const WebhookClientConfig&) const = default;
};

/// One HTTP request that a webhook server received.
struct WebhookRequest {
    std::string body{};     ///< the AdmissionReview as sent (parsed by the operator)
    std::string webhook{};  ///< the handler id from the URL path ("" for all handlers)
    std::map<std::string, std::string> headers{};
    json sslpeer = json::object();  ///< the client certificate's subject/issuer, if one was sent
};

/// What the server answers: 200 with an AdmissionReview, or an error for bad requests.
struct WebhookResponse {
    int status = 200;
    json body = json::object();
};

/// Serves one request; calls `reply` once (on the operator's loop thread), maybe later.
using WebhookFn = std::function<void(WebhookRequest request,
                                     std::function<void(WebhookResponse response)> reply)>;

/// What the operator knows of its cluster when it starts its webhook server: for servers that
/// guess how the cluster reaches them (WebhookAutoServer).
struct ClusterFacts {
    std::string server{};           ///< the API server's URL
    std::string certificate_pem{};  ///< its TLS certificate (empty over HTTP, or if unread)
    std::string git_version{};      ///< /version's gitVersion (empty if unread)
};

/// The host name by which a local cluster reaches the machine of the operator, guessed as Kopf
/// guesses it: K3s/K3d ("host.k3d.internal") by the API server's certificate (subject "k3s",
/// issuer "k3s-…") or a "+k3s" version; Minikube ("host.minikube.internal") by subject
/// "minikube" or issuer "minikubeCA"; Docker Desktop ("host.docker.internal") by the name
/// "docker-for-desktop" in the certificate. Nothing for other clusters.
std::optional<std::string> guess_cluster_host(const ClusterFacts& facts);

/// A webhook server or tunnel: the extension point for servers of one's own.
/// `start` begins serving in the background and calls `configured` (from any thread) once it
/// can be reached, and again whenever that changes; `stop` ends serving and waits for it.
/// Before `start`, the operator calls `on_cluster` with what it knows of the cluster.
class WebhookServerBase {
  public:
    virtual ~WebhookServerBase() = default;
    virtual void on_cluster(const ClusterFacts& facts) { (void)facts; }
    virtual void start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) = 0;
    virtual void stop() = 0;
};

/// Client-certificate verification of a webhook server (Python's ssl.VerifyMode).
enum class VerifyMode { NONE, OPTIONAL, REQUIRED };

/// Options of kopf::WebhookServer, as Kopf's `kopf.WebhookServer(...)` arguments.
struct WebhookServerOptions {
    std::optional<std::string> addr{};  ///< where to listen; default: all interfaces
    std::optional<int> port{};          ///< default: a free port
    std::optional<std::string> path{};  ///< the root path of the webhooks; default: none
    /// The host name in the URL that the API server is given; default: addr (or "localhost").
    std::optional<std::string> host{};
    std::optional<std::string> cadata{};    ///< PEM CA bundle for the clients (caBundle)
    std::optional<std::string> cafile{};    ///< the same, from a file
    std::optional<std::string> cadump{};    ///< where to write the CA bundle (e.g. for curl)
    bool insecure = false;                  ///< plain HTTP (development only)
    std::optional<std::string> certfile{};  ///< the server's certificate (PEM); default: generated
    std::optional<std::string> pkeyfile{};  ///< its private key (PEM)
    std::optional<std::string> password{};  ///< of the private key
    /// Seconds between checks of certfile, pkeyfile and cafile: when they change on disk (as
    /// cert-manager rotates them), new connections get the new certificate, and a new CA
    /// bundle goes to the webhook configurations; 0: read once at the start.
    double reload_interval = 10;
    std::vector<std::string> extra_sans{};       ///< more DNS names/IPs in a generated certificate
    std::optional<VerifyMode> verify_mode{};     ///< client certificates; default: not asked
    std::optional<std::string> verify_cafile{};  ///< CA to verify client certificates
    std::optional<std::string> verify_capath{};
    std::optional<std::string> verify_cadata{};
};

/// A local HTTPS server (HTTP with `.insecure`). Without a certificate, it generates a
/// self-signed CA and a serving certificate for `host`, `addr` and `extra_sans`; the CA goes
/// to the webhook configurations as the caBundle (and to `cadump`).
class WebhookServer : public WebhookServerBase {
  public:
    explicit WebhookServer(WebhookServerOptions options = {});
    ~WebhookServer() override;
    WebhookServer(const WebhookServer&) = delete;
    WebhookServer& operator=(const WebhookServer&) = delete;

    void start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) override;
    void stop() override;

    const WebhookServerOptions& options() const { return options_; }
    /// The bound port once started (useful with no port given); 0 before.
    int port() const;

  protected:
    /// The host name that the API server uses to reach this machine, if not `.host`.
    virtual std::optional<std::string> default_host() const { return std::nullopt; }

  private:
    WebhookServerOptions options_;
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

/// For K3d/K3s clusters: the API server reaches the host as "host.k3d.internal".
class WebhookK3dServer : public WebhookServer {
  public:
    using WebhookServer::WebhookServer;

  protected:
    std::optional<std::string> default_host() const override { return "host.k3d.internal"; }
};

/// For Minikube: the API server reaches the host as "host.minikube.internal".
class WebhookMinikubeServer : public WebhookServer {
  public:
    using WebhookServer::WebhookServer;

  protected:
    std::optional<std::string> default_host() const override { return "host.minikube.internal"; }
};

/// For Docker Desktop: the API server reaches the host as "host.docker.internal".
class WebhookDockerDesktopServer : public WebhookServer {
  public:
    using WebhookServer::WebhookServer;

  protected:
    std::optional<std::string> default_host() const override { return "host.docker.internal"; }
};

/// Kopf's WebhookAutoServer: a WebhookServer whose host is guessed from the cluster
/// (guess_cluster_host: K3s/K3d, Minikube, Docker Desktop); for other clusters, a plain local
/// server (its host is then `.host`, or `.addr`, or "localhost").
class WebhookAutoServer : public WebhookServer {
  public:
    using WebhookServer::WebhookServer;
    void on_cluster(const ClusterFacts& facts) override;
    /// The host found by the cluster detection, once the operator has started the server.
    std::optional<std::string> guessed_host() const { return guessed_host_; }

  protected:
    std::optional<std::string> default_host() const override { return guessed_host_; }

  private:
    std::optional<std::string> guessed_host_;
};

/// The arguments of Kopf's `kopf.WebhookAutoTunnel(...)`.
struct WebhookAutoTunnelOptions {
    std::optional<std::string> addr{};
    std::optional<int> port{};
    std::optional<std::string> path{};
};

/// Kopf's WebhookAutoTunnel: a WebhookServer with the guessed host on a local cluster. Where
/// Kopf falls back to an ngrok tunnel (other clusters), Kopf++, which has no client for ngrok's
/// service, stops the operator at start, saying so (see WebhookNgrokTunnel).
class WebhookAutoTunnel : public WebhookServerBase {
  public:
    explicit WebhookAutoTunnel(WebhookAutoTunnelOptions options = {})
        : options_(std::move(options)) {}
    void on_cluster(const ClusterFacts& facts) override;
    /// Throws std::runtime_error when no local cluster was detected.
    void start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) override;
    void stop() override;
    const WebhookAutoTunnelOptions& options() const { return options_; }

  private:
    WebhookAutoTunnelOptions options_;
    std::optional<std::string> guessed_host_;
    std::unique_ptr<WebhookServer> server_;
};

/// The arguments of Kopf's `kopf.WebhookNgrokTunnel(...)`.
struct WebhookNgrokTunnelOptions {
    std::optional<std::string> addr{};
    std::optional<int> port{};
    std::optional<std::string> path{};
    std::optional<std::string> token{};
    std::optional<std::string> region{};
    std::optional<std::string> binary{};
};

/// Kopf's ngrok tunnel, for code ported from Kopf. Kopf++ has no client for ngrok's service on
/// the internet and does not pretend to: an operator started with it stops at once, saying so
/// and what to use instead (a WebhookServer with a host the cluster reaches, or a server or
/// tunnel of one's own).
class WebhookNgrokTunnel : public WebhookServerBase {
  public:
    explicit WebhookNgrokTunnel(WebhookNgrokTunnelOptions options = {})
        : options_(std::move(options)) {}
    /// Throws std::runtime_error: the tunnel is not available.
    void start(WebhookFn fn, std::function<void(WebhookClientConfig)> configured) override;
    void stop() override {}
    const WebhookNgrokTunnelOptions& options() const { return options_; }

  private:
    WebhookNgrokTunnelOptions options_;
};

}  // namespace kopf
