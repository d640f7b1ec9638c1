// Whether this test program runs under AddressSanitizer, with g++ (__SANITIZE_ADDRESS__) or
// clang (__has_feature): its quarantine keeps freed memory in the RSS, and it runs code slower,
// so bounds and sizes are chosen accordingly.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define KOPF_UNDER_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KOPF_UNDER_ADDRESS_SANITIZER 1
#endif
#endif
