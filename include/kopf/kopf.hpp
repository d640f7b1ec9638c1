// Kopf++: the Kopf operator framework for C++20. The one header operator authors include.
//
//     #include <kopf/kopf.hpp>
//
//     kopf::json create_fn(kopf::Context& ctx) {
//         ctx.logger.info("A handler is called with spec: {}", ctx.spec.dump());
//         return {{"message", "hello world"}};
//     }
//     KOPF_ON_CREATE(create_fn, "kopfexamples");
#pragma once

#include <kopf/admission.hpp>
#include <kopf/api.hpp>
#include <kopf/context.hpp>
#include <kopf/diff.hpp>
#include <kopf/errors.hpp>
#include <kopf/events.hpp>
#include <kopf/filters.hpp>
#include <kopf/hierarchies.hpp>
#include <kopf/json.hpp>
#include <kopf/logger.hpp>
#include <kopf/memo.hpp>
#include <kopf/on.hpp>
#include <kopf/patch.hpp>
#include <kopf/registry.hpp>
#include <kopf/resource.hpp>
#include <kopf/settings.hpp>
#include <kopf/storage.hpp>
#include <kopf/task.hpp>
#include <kopf/webhooks.hpp>
#if __has_include(<kopf/connection.hpp>)
#include <kopf/connection.hpp>
#endif
#if __has_include(<kopf/version.hpp>)
#include <kopf/version.hpp>
#endif
