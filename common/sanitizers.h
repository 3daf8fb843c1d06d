#pragma once

// Which sanitizer this translation unit is compiled with, for the few places that must know:
// HOTROW_ASAN (AddressSanitizer) and HOTROW_TSAN (ThreadSanitizer), defined or not. GCC says so
// with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang (the sanitizer builds use it: it compiles
// them in a quarter less CPU) only through __has_feature.

#if defined(__SANITIZE_ADDRESS__)
#define HOTROW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOTROW_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define HOTROW_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOTROW_TSAN 1
#endif
#endif
