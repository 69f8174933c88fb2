// Function multi-versioning for CPU kernels: TESSERA_TARGET_CLONES("arch=x86-64-v4", ..., "default") builds a
// function once per listed target, and the dynamic loader binds the best one for the CPU through an ifunc
// resolver. ThreadSanitizer instruments those resolvers, which the loader runs before the sanitizer's runtime has
// started (a crash while the library loads), so ThreadSanitizer builds get the default version only.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define TESSERA_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_THREAD_SANITIZER 1
#endif
#endif

#if defined(TESSERA_THREAD_SANITIZER) || !(defined(__x86_64__) || defined(__i386__))
#define TESSERA_TARGET_CLONES(...)
#else
#define TESSERA_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
